package releasemanager

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/plan"
	"github.com/medium/picchu/plan/applier"
)

var update = flag.Bool("update", false, "rewrite testdata/plans from the plans")

// planScene is app shop in production on east and west, both live and
// usable, every build observed at 4 pods on each. A scenario adds builds
// (newest last) and changes what it needs; the run then decides, and its
// Plans are rendered.
type planScene struct {
	s   *snapshot
	now time.Time
}

func newPlanScene() *planScene {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	rm := &picchuv1alpha1.ReleaseManager{Spec: picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: "production", Fleet: "prod"}}
	s := &snapshot{rm: rm, now: now, services: Services{ClusterPrometheus: "http://prometheus.monitoring:9090"}}
	for _, name := range []string{"east", "west"} {
		cl := &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": name}}}
		s.fleet = append(s.fleet, &fleetCluster{obj: cl, live: true, factor: 1, conn: &applier.Cluster{}})
		s.observation = append(s.observation, release.ClusterObservation{Name: name, Live: true, Observed: true, Tags: map[string]release.Replicas{}})
	}
	return &planScene{s: s, now: now}
}

// add adds a build newer than those before, recorded in state at percent,
// its last change an hour ago.
func (p *planScene) add(tag string, state release.State, percent int32) *incarnation {
	created := p.now.Add(-2*time.Hour + time.Duration(len(p.s.incarnations))*time.Minute)
	inc := &incarnation{tag: tag, order: created,
		revision: &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "shop-" + tag, Namespace: "picchu",
			CreationTimestamp: metav1.NewTime(created)},
			Spec: picchuv1alpha1.RevisionSpec{App: picchuv1alpha1.RevisionApp{Name: "shop", Tag: tag, Image: "registry.example/shop:" + tag}}},
		target: &picchuv1alpha1.RevisionTarget{
			Name:  "production",
			Scale: picchuv1alpha1.ScaleInfo{Default: 8, Max: 8},
			Ports: []picchuv1alpha1.PortInfo{{Name: "http", Port: 80, ContainerPort: 8080, Protocol: corev1.ProtocolTCP,
				Mode: picchuv1alpha1.PortModePrivate}},
			Canary: picchuv1alpha1.Canary{Percent: 10, TTL: 600},
			Release: picchuv1alpha1.ReleaseInfo{Max: 100, Eligible: true, Schedule: picchuv1alpha1.ScheduleAlways, GeometricScaling: picchuv1alpha1.GeometricScaling{
				Start: 25, Factor: 2, Delay: &metav1.Duration{Duration: 10 * time.Second}}},
		}}
	inc.target.DefaultRouting()
	stamp := picchuv1alpha1.NewTimestamp(p.now.Add(-time.Hour))
	inc.status = picchuv1alpha1.ReleaseManagerRevisionStatus{Tag: tag, CurrentPercent: percent, PeakPercent: percent,
		ReleaseEligible: true, LastUpdated: &stamp}
	inc.status.State.Current = string(state)
	inc.status.State.LastUpdated = &stamp
	p.s.incarnations = append([]*incarnation{inc}, p.s.incarnations...)
	for i := range p.s.observation {
		p.s.observation[i].Tags[tag] = release.Replicas{Desired: 4, Available: 4}
	}
	return inc
}

// plans decides the run and plans every cluster.
func (p *planScene) plans(t *testing.T) []*plan.Cluster {
	t.Helper()
	cal, err := schedule.New(false)
	if err != nil {
		t.Fatal(err)
	}
	p.s.assignWaves()
	p.s.decide(release.DefaultTimeouts, cal)
	return plans(p.s)
}

// planScenarios are the scenarios of testdata/plans, by file name.
var planScenarios = map[string]func(p *planScene){
	"canary": func(p *planScene) {
		p.add("v1", release.Released, 100)
		v2 := p.add("v2", release.Canarying, 10)
		v2.target.ConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"config": "shop"}}
		v2.configMaps = []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "shop-settings", Namespace: "picchu"},
			Data: map[string]string{"LEVEL": "debug"}}}
		v2.secrets = []corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "shop-keys", Namespace: "picchu"},
			Data: map[string][]byte{"KEY": []byte("k")}}}
	},
	"ramp-step": func(p *planScene) {
		p.add("v1", release.Released, 75)
		p.add("v2", release.Releasing, 25)
	},
	"gateway-api": func(p *planScene) {
		for _, inc := range []*incarnation{p.add("v1", release.Released, 75), p.add("v2", release.Releasing, 25)} {
			inc.target.Router = picchuv1alpha1.RouterGatewayAPI
			inc.revision.Spec.TagRoutingHeader = "Shop-Tag"
		}
	},
	"deploying": func(p *planScene) {
		// v2's subset comes as it deploys, before any route sends to it.
		p.add("v1", release.Released, 100)
		p.add("v2", release.Deploying, 0)
	},
	"gateway-api-deploying": func(p *planScene) {
		// v2's Service comes as it deploys, before it takes traffic.
		for _, inc := range []*incarnation{p.add("v1", release.Released, 100), p.add("v2", release.Deploying, 0)} {
			inc.target.Router = picchuv1alpha1.RouterGatewayAPI
		}
	},
	"retire": func(p *planScene) {
		gone := p.add("v0", release.Retired, 0)
		gone.revision, gone.target = nil, nil
		p.add("v1", release.Retiring, 0).status.ReleaseEligible = false
		p.add("v2", release.Released, 100)
	},
	"rollback": func(p *planScene) {
		// Failed, v2 loses its routes; its subset stays until a run has
		// written routes without it.
		p.add("v1", release.Released, 50).status.PeakPercent = 100
		v2 := p.add("v2", release.Releasing, 50)
		v2.revision.Spec.Failed = true
	},
	"waves": func(p *planScene) {
		for _, inc := range []*incarnation{p.add("v1", release.Released, 100), p.add("v2", release.Releasing, 0)} {
			inc.target.Release.Waves = []picchuv1alpha1.ReleaseWave{
				{Name: "east", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}, Bake: &metav1.Duration{Duration: time.Minute}},
				{Name: "west"},
			}
		}
	},
	"worker": func(p *planScene) {
		v1 := p.add("v1", release.Released, 100)
		v1.target.Ports = nil
		v1.target.Scale = picchuv1alpha1.ScaleInfo{Min: ptr.To[int32](2), Max: 10, Worker: &picchuv1alpha1.WorkerScaleInfo{
			QueueURI: "https://sqs.example/jobs", TargetMessagesPerWorker: ptr.To[int32](5), MaxDisruption: ptr.To("10%")}}
	},
	"ambient": func(p *planScene) {
		v1 := p.add("v1", release.Released, 100)
		v1.target.AmbientMesh = true
		v1.target.Scale = picchuv1alpha1.ScaleInfo{Min: ptr.To[int32](2), Max: 10, TargetRequestsRate: ptr.To("50"),
			RequestsRateMetric: "istio_requests_total"}
	},
	"keda": func(p *planScene) {
		v1 := p.add("v1", release.Released, 100)
		v1.target.Scale = picchuv1alpha1.ScaleInfo{Min: ptr.To[int32](1), Max: 6, KedaWorker: &picchuv1alpha1.KedaScaleInfo{
			Triggers: []kedav1alpha1.ScaleTriggers{{Type: "datadog", Metadata: map[string]string{
				"query": "sum:jobs.queued{app:shop}", "queryValue": "10"}}}}}
	},
	"event-driven": func(p *planScene) {
		v1 := p.add("v1", release.Released, 100)
		v1.revision.Spec.EventDriven = true
		p.s.fleet[1].obj.Spec.DisableEventDriven = true
	},
	"ingress": func(p *planScene) {
		// Both clusters route the public port on their ingresses; west does
		// not allow shop.example.org, so west routes nothing of the app.
		for _, inc := range []*incarnation{p.add("v1", release.Released, 75), p.add("v2", release.Releasing, 25)} {
			inc.target.Ports[0].Mode, inc.target.Ports[0].Ingresses = picchuv1alpha1.PortModePublic, nil
			inc.target.Ports[0].Hosts = []string{"shop.example.org"}
			inc.target.DefaultIngressPorts = nil
			inc.target.DefaultRouting()
		}
		for _, fc := range p.s.fleet {
			fc.obj.Spec.Ingresses.Public = picchuv1alpha1.IngressInfo{Gateway: "istio-system/public", DefaultDomains: []string{"example.com"}}
		}
		p.s.fleet[0].obj.Spec.Ingresses.Public.AllowedDomains = []string{"example.org"}
	},
	"out-of-sight": func(p *planScene) {
		p.add("v1", release.Released, 75)
		p.add("v2", release.Releasing, 25)
		west := p.s.fleet[1]
		west.conn, west.problem = nil, "not ready: Unreachable: dial tcp: i/o timeout"
		p.s.observation[1].Observed, p.s.observation[1].Tags = false, nil
	},
}

// TestPlan renders each scenario's Plans and compares them with
// testdata/plans/<scenario>.txt; -update rewrites the files.
func TestPlan(t *testing.T) {
	scheme := planScheme(t)
	for _, name := range sortedKeys(planScenarios) {
		t.Run(name, func(t *testing.T) {
			p := newPlanScene()
			planScenarios[name](p)
			got := renderPlans(t, scheme, p.plans(t))
			file := filepath.Join("testdata", "plans", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test ./controllers/releasemanager -run TestPlan -update writes it)", err)
			}
			if diff := lineDiff(string(want), got); diff != "" {
				t.Errorf("the plans of %s changed (-%s +now); if meant, run with -update:\n%s", name, file, diff)
			}
		})
	}
}

// TestPlan_IsPure: planning twice from the same snapshot gives the same
// Plans.
func TestPlan_IsPure(t *testing.T) {
	scheme := planScheme(t)
	p := newPlanScene()
	planScenarios["canary"](p)
	first := renderPlans(t, scheme, p.plans(t))
	if again := renderPlans(t, scheme, plans(p.s)); again != first {
		t.Errorf("planning again gave other plans:\n%s", lineDiff(first, again))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func planScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, picchuv1alpha1.AddToScheme, istionetworkingv1alpha3.AddToScheme,
		monitoringv1.AddToScheme, kedav1alpha1.AddToScheme, slothv1.AddToScheme, gatewayv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// renderPlans renders plans as text: a header per cluster, then per
// section and build, each step on a line and its objects as YAML.
func renderPlans(t *testing.T, scheme *runtime.Scheme, plans []*plan.Cluster) string {
	t.Helper()
	var b strings.Builder
	for _, p := range plans {
		if p.Skip != "" {
			fmt.Fprintf(&b, "=== cluster %s: not acted on: %s\n\n", p.Name, p.Skip)
			continue
		}
		fmt.Fprintf(&b, "=== cluster %s\n", p.Name)
		renderSteps(t, &b, scheme, "app", p.App)
		for _, build := range p.Builds {
			head := fmt.Sprintf("build %s (%s)", build.Tag, build.Action)
			if build.Hold != nil {
				head += ", held: " + build.Hold.Error()
			}
			renderSteps(t, &b, scheme, head, build.Steps)
		}
		renderSteps(t, &b, scheme, "routes", p.Routes)
		renderSteps(t, &b, scheme, "waypoint", p.Waypoint)
		renderSteps(t, &b, scheme, "monitoring", p.Monitoring)
		b.WriteString("\n")
	}
	return b.String()
}

func renderSteps(t *testing.T, b *strings.Builder, scheme *runtime.Scheme, section string, steps []plan.Step) {
	fmt.Fprintf(b, "--- %s\n", section)
	for _, s := range steps {
		line := string(s.Op)
		if s.Object != nil {
			line += " " + describe(t, scheme, s.Object)
		}
		if len(s.Kinds) > 0 {
			var kinds []string
			for _, k := range s.Kinds {
				kinds = append(kinds, k.Kind)
			}
			line += fmt.Sprintf(" %s in %s selected by %s", strings.Join(kinds, ", "), s.Namespace, selectorText(s.Selector))
		}
		if s.Op == plan.Prune || s.Op == plan.ExternalSecrets {
			line += fmt.Sprintf(", keeping %v", s.Keep)
		}
		if s.Op == plan.ApplyCreating {
			line += ", creating namespace " + s.Namespace
		}
		if s.Optional {
			line += "; skipped where the kind is not served"
		}
		if s.NeedsKind != "" {
			line += "; required: " + s.NeedsKind
		}
		if s.IfAutoscaled {
			line += "; only if the live ReplicaSet names an autoscaler"
		}
		if len(s.Makes) > 0 {
			line += fmt.Sprintf("; making Secrets %v", s.Makes)
		}
		if s.Err != nil {
			line += fmt.Sprintf("; error: %v", s.Err)
		}
		if s.Replicas != nil {
			line += "; replicas: " + replicasText(s.Replicas)
		}
		b.WriteString(line + "\n")
		if s.Op != plan.Remove {
			for _, obj := range append([]client.Object{s.Object}, s.Objects...) {
				renderObject(t, b, scheme, "", obj)
			}
		}
		if s.Unserved != nil {
			renderObject(t, b, scheme, "where ExternalSecrets are not served:", s.Unserved)
		}
	}
}

func describe(t *testing.T, scheme *runtime.Scheme, obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		t.Fatal(err)
	}
	name := obj.GetName()
	if obj.GetNamespace() != "" {
		name = obj.GetNamespace() + "/" + name
	}
	return gvk.Kind + " " + name
}

func renderObject(t *testing.T, b *strings.Builder, scheme *runtime.Scheme, head string, obj client.Object) {
	if obj == nil {
		return
	}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		t.Fatal(err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	delete(u.Object, "status")
	out, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	if head != "" {
		b.WriteString("    " + head + "\n")
	}
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
}

func selectorText(sel map[string]string) string {
	var out []string
	for _, k := range sortedKeys(sel) {
		out = append(out, k+"="+sel[k])
	}
	return strings.Join(out, ",")
}

func replicasText(r *plan.Replicas) string {
	var out []string
	if r.Set {
		out = append(out, fmt.Sprintf("set to %d", r.To))
	} else {
		out = append(out, "left to the autoscaler")
	}
	if r.SkipAbsent {
		out = append(out, "nothing where absent")
	} else {
		out = append(out, fmt.Sprintf("created at %d where absent", r.CreateAt))
	}
	if r.StartAt > 0 {
		out = append(out, fmt.Sprintf("started at %d where left at 0", r.StartAt))
	}
	return strings.Join(out, ", ")
}

// lineDiff shows how b differs from a, line by line (a longest common
// subsequence): a's lines with -, b's with +, each change after the line
// number in a and up to 2 lines of context.
func lineDiff(a, b string) string {
	if a == b {
		return ""
	}
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	// lcs[i][j] is the length of the longest common subsequence of al[i:] and bl[j:].
	lcs := make([][]int, len(al)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(bl)+1)
	}
	for i := len(al) - 1; i >= 0; i-- {
		for j := len(bl) - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	lastShown := -1
	i, j := 0, 0
	for i < len(al) || j < len(bl) {
		if i < len(al) && j < len(bl) && al[i] == bl[j] {
			i, j = i+1, j+1
			continue
		}
		if lastShown < i-2 {
			fmt.Fprintf(&out, "@@ line %d @@\n", i+1)
			for _, l := range al[max(i-2, 0):i] {
				out.WriteString("  " + l + "\n")
			}
		}
		if i < len(al) && (j == len(bl) || lcs[i+1][j] >= lcs[i][j+1]) {
			out.WriteString("- " + al[i] + "\n")
			i++
		} else {
			out.WriteString("+ " + bl[j] + "\n")
			j++
		}
		lastShown = i
	}
	return out.String()
}

package kubevalidation_test

import (
	"encoding/binary"
	"encoding/json"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan/manifests"
	"github.com/medium/picchu/test/kubevalidation"
)

const revisionCRD = "../../config/crd/bases/picchu.medium.engineering_revisions.yaml"

var admission = sync.OnceValues(func() (*kubevalidation.Admission, error) {
	return kubevalidation.NewAdmission(revisionCRD)
})

// FuzzBuildersPassKubernetesValidation builds a Revision from the fuzzer's
// input (names, tag and image, ports, scale, resources, probes, env, pod
// annotations, service account, PDB), and a previous build of the app with
// its own ports. When admission accepts both, every core object the
// builders make for one target cluster (namespace, service account, RBAC,
// config copies, ReplicaSet, the Service of both builds' ports, PDB, HPA),
// and the pod the ReplicaSet controller makes from the ReplicaSet, must
// pass the target API server's validation.
func FuzzBuildersPassKubernetesValidation(f *testing.F) {
	for _, seed := range [][]byte{
		nil, // every choice the ordinary one: a realistic app
		{0, 0, 0, 0, 0, 3, 1, 0, 1, 1, 1, 1},
		{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
		{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
		{3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97},
		{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255},
	} {
		f.Add(seed)
	}
	a, err := admission()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, a, data)
	})
}

// check admits the Revision and the previous build data make and, when
// both are admitted, validates every object built from them. It says
// whether they were admitted.
func check(t testing.TB, a *kubevalidation.Admission, data []byte) bool {
	s := &source{data: data}
	current := revision(s, "v1")
	previous := previousBuild(s, current)
	live, factor := 1+s.intn(4), scalingFactor(s)
	ramping := s.maybe()

	newest, err := a.Create(current.json(t))
	if err != nil {
		return false // rejected at admission
	}
	older, err := previousBuilds.create(a, previous.json(t))
	if err != nil {
		return false
	}
	objs, err := targetObjects(newest, older, live, factor, ramping)
	if err != nil {
		t.Fatalf("the builders fail on an admitted Revision: %v\nRevision: %s", err, current.json(t))
	}
	for _, obj := range objs {
		if err := kubevalidation.Validate(obj); err != nil {
			t.Errorf("a target cluster rejects what the builders make of an admitted Revision:\n%v\nRevision: %s\nprevious build: %s",
				err, current.json(t), previous.json(t))
		}
	}
	return true
}

// previousBuilds remembers what admission made of previous builds, which
// differ only by their ports and so repeat: admission is deterministic, and
// the most expensive part of a run.
var previousBuilds = &admissionCache{results: map[string]admissionResult{}}

type admissionCache struct {
	mu      sync.Mutex
	results map[string]admissionResult
}

type admissionResult struct {
	revision *picchuv1alpha1.Revision
	err      error
}

// cachedBuilds bounds the cache; past it, builds are admitted every time.
const cachedBuilds = 1 << 14

func (c *admissionCache) create(a *kubevalidation.Admission, data []byte) (*picchuv1alpha1.Revision, error) {
	c.mu.Lock()
	r, ok := c.results[string(data)]
	c.mu.Unlock()
	if !ok {
		r.revision, r.err = a.Create(data)
		c.mu.Lock()
		if len(c.results) < cachedBuilds {
			c.results[string(data)] = r
		}
		c.mu.Unlock()
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.revision.DeepCopy(), nil
}

// targetObjects are the core objects the builders make, as the
// ReleaseManager does, for one cluster of the newest build's first target
// with older still there.
func targetObjects(newest, older *picchuv1alpha1.Revision, live int, factor float64, ramping bool) ([]runtime.Object, error) {
	app, tag := newest.Spec.App.Name, newest.Spec.App.Tag
	t := &newest.Spec.Targets[0]
	target := t.Name
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: app + "-" + tag + "-env"}, Data: map[string]string{"MODE": "production"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: app + "-" + tag + "-secrets"}, Data: map[string][]byte{"TOKEN": []byte("s3cret")}}
	autoscaler := release.AutoscalerKind(t.Scale)
	objs := []runtime.Object{
		manifests.AppNamespace(app, target, manifests.MeshSidecar),
		manifests.ServiceAccount(app, target, t.AWS.IAM.RoleARN),
		manifests.ExternalMetricsRole(app, target),
		manifests.ExternalMetricsRoleBinding(app, target),
		manifests.ConfigMapCopy(app, target, tag, cm),
		manifests.SecretCopy(app, target, tag, secret),
		manifests.PodDisruptionBudget(app, target, t.PodDisruptionBudget),
	}
	rs := manifests.ReplicaSet(manifests.Build{
		App: app, Target: target, Tag: tag, Image: newest.Spec.App.Image, Spec: t,
		Ramping: ramping, Autoscaler: autoscaler, ConfigMaps: []string{cm.Name}, Secrets: []string{secret.Name},
	})
	objs = append(objs, rs, podOf(rs))
	if svc := manifests.Service(app, target, unionByName(t.Ports, older.Spec.Targets[0].Ports)); svc != nil {
		objs = append(objs, svc)
	}
	if autoscaler == release.AutoscalerHPA {
		perCluster := func(n int32) int32 {
			if n <= 0 {
				return 0
			}
			return release.ReplicasPerCluster(n, 100, live, factor)
		}
		lo, hi := release.AutoscalerRange(t.Scale)
		hpa, err := manifests.HorizontalPodAutoscaler(manifests.Scaler{
			App: app, Target: target, Tag: tag, Scale: t.Scale, Min: perCluster(lo), Max: perCluster(hi),
		})
		if err != nil {
			return nil, err
		}
		if hpa != nil {
			objs = append(objs, hpa)
		}
	}
	return objs, nil
}

// podOf is a pod of rs as the ReplicaSet controller creates it
// (controller.GetPodFromTemplate): the template's labels, annotations and
// spec, a name generated from the ReplicaSet's, and rs as its controller.
// Kubernetes validates some fields of a pod that it does not of a template.
func podOf(rs *appsv1.ReplicaSet) *corev1.Pod {
	tpl := rs.Spec.Template.DeepCopy()
	base := rs.Name + "-"
	if len(base) > 58 {
		base = base[:58] // as names.SimpleNameGenerator truncates it
	}
	controller := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: base + "x7k2p", GenerateName: rs.Name + "-", Namespace: rs.Namespace,
			Labels: tpl.Labels, Annotations: tpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: "8d3f1c52-2b7e-4a8e-9f6d-0c1a2b3c4d5e",
				Controller: &controller, BlockOwnerDeletion: &controller,
			}},
		},
		Spec: tpl.Spec,
	}
}

// unionByName is the app's ports as the ReleaseManager gives them to the
// Service (snapshot.routing): the newest build's, then the older build's
// whose names the newest does not have.
func unionByName(newest, older []picchuv1alpha1.PortInfo) []picchuv1alpha1.PortInfo {
	out := append([]picchuv1alpha1.PortInfo(nil), newest...)
	seen := map[string]bool{}
	for _, p := range newest {
		seen[p.Name] = true
	}
	for _, p := range older {
		if !seen[p.Name] {
			seen[p.Name] = true
			out = append(out, p)
		}
	}
	return out
}

// source reads the fuzzer's bytes as choices. Every choice's first option
// is the ordinary value, and an exhausted input chooses it, so a short
// input is a realistic Revision with a few unusual values.
type source struct{ data []byte }

func (s *source) byte() byte {
	if len(s.data) == 0 {
		return 0
	}
	b := s.data[0]
	s.data = s.data[1:]
	return b
}

func (s *source) intn(n int) int { return int(s.byte()) % n }

// maybe says whether to set an optional field: rarely on an exhausted input.
func (s *source) maybe() bool { return s.byte()&1 == 1 }

// rawFrom is where a choice stops picking among options and reads raw input.
const rawFrom = 224

// ordinaryBelow is where a choice stops picking its first option, the
// ordinary value, so that most choices of an input are ordinary and most
// inputs are admitted.
const ordinaryBelow = 128

// str picks one of options, or reads a raw string of up to 31 bytes.
func (s *source) str(options ...string) string {
	i := int(s.byte())
	switch {
	case i < ordinaryBelow:
		return options[0]
	case i < rawFrom:
		return options[i%len(options)]
	}
	n := i - rawFrom
	if n > len(s.data) {
		n = len(s.data)
	}
	raw := string(s.data[:n])
	s.data = s.data[n:]
	return raw
}

// num picks one of options, or reads a raw 32-bit integer.
func (s *source) num(options ...int64) int64 {
	i := int(s.byte())
	switch {
	case i < ordinaryBelow:
		return options[0]
	case i < rawFrom:
		return options[i%len(options)]
	}
	var b [4]byte
	for j := range b {
		b[j] = s.byte()
	}
	return int64(int32(binary.LittleEndian.Uint32(b[:])))
}

// intOrString picks a number among numbers or a string among strings.
func (s *source) intOrString(numbers []int64, strings ...string) any {
	if s.maybe() {
		return s.str(strings...)
	}
	return s.num(numbers...)
}

// doc is a Revision as JSON objects, as a client sends it.
type doc map[string]any

func (d doc) spec() map[string]any   { return d["spec"].(map[string]any) }
func (d doc) target() map[string]any { return d.spec()["targets"].([]any)[0].(map[string]any) }

func (d doc) json(t testing.TB) []byte {
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func revision(s *source, tag string) doc {
	return doc{
		"apiVersion": picchuv1alpha1.GroupVersion.String(), "kind": "Revision",
		"metadata": map[string]any{"name": "shop-" + tag, "namespace": "picchu"},
		"spec": map[string]any{
			"app": map[string]any{
				"name":  s.str("shop", "a", "shop-api", "Shop", "shop.api", "-shop", "9"),
				"tag":   s.str(tag, "v1.2.3", "v1-rc.1", "a..b", "a.-b", "V1", "1", "v1_2", "main.abc123"),
				"image": s.str("registry.example/shop:"+tag, " registry.example/shop", "shop:v1 ", "shop:v1\n", "shop@sha256:abc"),
			},
			"targets": []any{target(s)},
		},
	}
}

// previousBuild is an older build of current's app in the same target:
// ordinary but for its ports.
func previousBuild(s *source, current doc) doc {
	d := revision(&source{}, "v0")
	d.spec()["app"].(map[string]any)["name"] = current.spec()["app"].(map[string]any)["name"]
	t := d.target()
	t["name"] = current.target()["name"]
	delete(t, "ports")
	var ports []any
	for range s.intn(4) {
		ports = append(ports, port(s))
	}
	if len(ports) > 0 {
		t["ports"] = ports
	}
	return d
}

func target(s *source) map[string]any {
	t := map[string]any{
		"name":  s.str("production", "staging", "p", "Prod", "a.b", "a-b"),
		"fleet": "production",
	}
	var ports []any
	for range (s.intn(4) + 1) % 4 { // one port on an exhausted input
		ports = append(ports, port(s))
	}
	if len(ports) > 0 {
		t["ports"] = ports
	}
	if s.maybe() {
		t["scale"] = scale(s)
	}
	if s.maybe() {
		t["resources"] = map[string]any{"requests": resourceList(s), "limits": resourceList(s)}
	}
	if s.maybe() {
		t["livenessProbe"] = probe(s)
	}
	if s.maybe() {
		t["readinessProbe"] = probe(s)
	}
	if s.maybe() {
		var env []any
		for range 1 + s.intn(3) {
			env = append(env, envVar(s))
		}
		t["env"] = env
	}
	if s.maybe() {
		t["podAnnotations"] = map[string]any{
			"go.medium.engineering/PodTerminationGracePeriodSeconds":                      s.str("30", "0", "-1", "abc", "99999999999999999999", "1e3"),
			s.str("team", "example.com/owner", "bad key", "a/b/c", "-x", "Example.com/x"): s.str("shop", ""),
		}
	}
	if s.maybe() {
		t["karpenterDoNotDisrupt"] = s.str("true", "30m", "forever", "")
	}
	if s.maybe() {
		t["aws"] = map[string]any{"iam": map[string]any{"role_arn": s.str("arn:aws:iam::1:role/shop", "", "not an arn")}}
	}
	if s.maybe() {
		t["serviceAccountName"] = s.str("custom", "Bad_Name", "a.b", "a..b")
	}
	if s.maybe() {
		t["priorityClassName"] = s.str("high", "Bad_Name", "a.b")
	}
	if s.maybe() {
		t["schedulerName"] = s.str("custom-scheduler", "Bad Name", "a.b")
	}
	if s.maybe() {
		t["podDisruptionBudget"] = pdb(s)
	}
	return t
}

func port(s *source) map[string]any {
	p := map[string]any{"name": s.str("http", "status", "grpc", "web", "h2c", "a-b", "HTTP", "a--b", "-a", "1",
		"http-for-theapi", "http-for-the-api", "a_b", "")}
	if s.maybe() {
		p["port"] = s.num(80, 4444, 9000, 443, 8080, 1, 65535, 0, 65536, -1)
	}
	if s.maybe() {
		p["containerPort"] = s.num(8080, 4444, 9090, 80, 1, 65535, 0, 65536, -80)
	}
	if s.maybe() {
		p["protocol"] = s.str("TCP", "UDP", "SCTP", "tcp", "HTTP", "")
	}
	if s.maybe() {
		p["mode"] = s.str("private", "public", "local", "internet")
	}
	if s.maybe() {
		p["ingressPort"] = s.num(443, 80, 8443, 0, 70000)
	}
	if s.maybe() {
		p["default"] = s.maybe()
	}
	if s.maybe() {
		p["hosts"] = []any{s.str("shop.example.com", "*.example.com", "", "a b")}
	}
	return p
}

func scale(s *source) map[string]any {
	sc := map[string]any{}
	if s.maybe() {
		sc["min"] = s.num(2, 1, 0, 5, -1, 100000)
	}
	if s.maybe() {
		sc["default"] = s.num(2, 1, 0, 7, -3)
	}
	if s.maybe() {
		sc["max"] = s.num(10, 1, 0, 3, -1, 2147483647)
	}
	if s.maybe() {
		sc["minReadySeconds"] = s.num(5, 0, -1)
	}
	if s.maybe() {
		sc["targetCPUUtilizationPercentage"] = s.num(70, 1, 0, 100, 500, -5)
	}
	if s.maybe() {
		sc["targetMemoryUtilizationPercentage"] = s.num(80, 1, 0, -5)
	}
	if s.maybe() {
		sc["targetRequestsRate"] = s.str("50", "500m", "0", "-1", "1e3", "1.5Gi", "x", "0.0001m")
	}
	if s.maybe() {
		sc["requestsRateMetric"] = s.str("istio_requests_rate", "", "requests-per-second", "Bad Metric", "a/b", "x:y", "%")
	}
	if s.maybe() {
		sc["kedaWorker"] = map[string]any{"triggers": []any{map[string]any{
			"type": "aws-sqs-queue", "metadata": map[string]any{"queueURL": "https://sqs/q", "queueLength": "5"},
		}}}
	}
	return sc
}

func resourceList(s *source) map[string]any {
	l := map[string]any{}
	for range s.intn(3) {
		name := s.str("cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "nvidia.com/gpu", "example.com/widget",
			"storage", "pods", "CPU", "kubernetes.io/foo", "example.com/Bad_Name", "a/b/c", "requests.cpu")
		l[name] = s.intOrString([]int64{1, 0, 2, -1}, "100m", "1", "0", "1Gi", "128Mi", "0.5", "-1", "1e3", "2.5", "0.001m", "1Ki")
	}
	return l
}

func probe(s *source) map[string]any {
	p := map[string]any{}
	portRef := func() any {
		return s.intOrString([]int64{8080, 80, 1, 65535, 0, 65536, -1}, "http", "status", "HTTP", "a--b", "1", "http-for-the-api", "")
	}
	httpGet := func() map[string]any {
		h := map[string]any{"port": portRef()}
		if s.maybe() {
			h["path"] = s.str("/ready", "", "ready")
		}
		if s.maybe() {
			h["scheme"] = s.str("HTTP", "HTTPS", "http", "ftp")
		}
		if s.maybe() {
			h["httpHeaders"] = []any{map[string]any{"name": s.str("X-Probe", "bad header", "", "a:b"), "value": "1"}}
		}
		return h
	}
	switch s.intn(6) {
	case 0:
		p["httpGet"] = httpGet()
	case 1:
		p["tcpSocket"] = map[string]any{"port": portRef()}
	case 2:
		p["grpc"] = map[string]any{"port": s.num(9000, 1, 65535, 0, 65536, -1)}
	case 3:
		var command []any
		if s.maybe() {
			command = []any{"true"}
		}
		p["exec"] = map[string]any{"command": command}
	case 4:
		p["httpGet"] = httpGet()
		p["tcpSocket"] = map[string]any{"port": portRef()}
	}
	for _, f := range []string{"initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"} {
		if s.maybe() {
			p[f] = s.num(1, 3, 0, 10, -1, 2)
		}
	}
	if s.maybe() {
		p["terminationGracePeriodSeconds"] = s.num(30, 1, 0, -1)
	}
	return p
}

func envVar(s *source) map[string]any {
	e := map[string]any{
		"name": s.str("MODE", "A_B", "a.b", "1A", "a=b", "", " ", "é", "A-B", "mode"),
	}
	if s.maybe() {
		e["value"] = s.str("production", "")
	}
	switch s.intn(4) {
	case 1:
		e["valueFrom"] = map[string]any{"fieldRef": map[string]any{
			"fieldPath": s.str("metadata.name", "status.podIP", "spec.nodeName", "metadata.labels['app']", "bogus", "metadata.annotations['Bad Key']"),
		}}
	case 2:
		e["valueFrom"] = map[string]any{"configMapKeyRef": map[string]any{
			"name": s.str("shop-config", "", "Bad_Name"), "key": s.str("MODE", "bad key", "", "a/b"),
		}}
	case 3:
		e["valueFrom"] = map[string]any{"resourceFieldRef": map[string]any{
			"resource": s.str("limits.cpu", "requests.memory", "limits.gpu", ""),
		}}
	}
	return e
}

func pdb(s *source) map[string]any {
	p := map[string]any{}
	budget := func() any {
		return s.intOrString([]int64{1, 0, 100, -1}, "10%", "50%", "0%", "150%", "abc", "-10%", "1")
	}
	switch s.intn(3) {
	case 0:
		p["maxUnavailable"] = budget()
	case 1:
		p["minAvailable"] = budget()
	}
	if s.maybe() {
		p["unhealthyPodEvictionPolicy"] = s.str("IfHealthyBudget", "AlwaysAllow", "Sometimes")
	}
	return p
}

// scalingFactor is the cluster's scaling factor, as release.ScalingFactor
// reads a Cluster's scalingFactorString.
func scalingFactor(s *source) float64 {
	f, err := release.ScalingFactor(s.str("1", "0.5", "2", "0", "1.5", "3.0"))
	if err != nil {
		return 1
	}
	return f
}

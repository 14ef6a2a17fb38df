package controllers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// targetWrites counts the requests that change something on target
// clusters, made through the operator's clients.
var targetWrites = &writeCounter{}

type writeCounter struct {
	mu       sync.Mutex
	requests []string
	// reads are the requests that read something, but watches, each with
	// the status code of its answer ("GET url 404"; 0 when none came).
	reads []string
	// rejectHost, when set, is a target whose writes fail with 500.
	rejectHost string
}

// rejectWrites makes every write to the target at host fail, until undone.
func (w *writeCounter) rejectWrites(host string) (undo func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rejectHost = host
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.rejectHost = ""
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if r.URL.Query().Get("watch") != "true" {
				// Recorded with the answer's status code once it comes.
				resp, err := rt.RoundTrip(r)
				code := 0
				if err == nil {
					code = resp.StatusCode
				}
				w.mu.Lock()
				w.reads = append(w.reads, fmt.Sprintf("%s %s %d", r.Method, r.URL.String(), code))
				w.mu.Unlock()
				return resp, err
			}
		default:
			w.mu.Lock()
			w.requests = append(w.requests, r.Method+" "+r.URL.Path)
			reject := w.rejectHost != "" && r.URL.Host == w.rejectHost
			w.mu.Unlock()
			if reject {
				body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected: this cluster rejects writes","reason":"InternalError","code":500}`
				return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error",
					Header: http.Header{"Content-Type": []string{"application/json"}}, Request: r,
					Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}, nil
			}
		}
		return rt.RoundTrip(r)
	})
}

// readsSince returns the reads made after the first n.
func (w *writeCounter) readsSince(n int) []string { return w.after(&w.reads, n) }

// readCount returns the number of reads made so far.
func (w *writeCounter) readCount() int { return len(w.after(&w.reads, 0)) }

// since returns the writes made after the first n.
func (w *writeCounter) since(n int) []string { return w.after(&w.requests, n) }

// inNamespaceOrNone keeps the requests ("VERB path") to namespace ns or to
// no namespace at all, leaving out those to other namespaces.
func inNamespaceOrNone(ns string, requests []string) []string {
	var out []string
	for _, r := range requests {
		_, path, _ := strings.Cut(r, " ")
		path, _, _ = strings.Cut(path, "?")
		_, rest, namespaced := strings.Cut(path, "/namespaces/")
		if name, _, _ := strings.Cut(rest, "/"); !namespaced || name == ns {
			out = append(out, r)
		}
	}
	return out
}

// count returns the number of writes made so far.
func (w *writeCounter) count() int { return len(w.after(&w.requests, 0)) }

// after returns a copy of the requests of list after its first n.
func (w *writeCounter) after(list *[]string, n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), (*list)[n:]...)
}

// reconciles is how many runs the named controller finished, from
// controller-runtime's metrics.
func reconciles(t *testing.T, controller string) float64 {
	return reconcilesWith(t, controller, "")
}

// reconcilesWith is how many runs the named controller finished with
// result ("success", "error", "requeue", "requeue_after"; any when empty).
func reconcilesWith(t *testing.T, controller, result string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			ours, ofResult := false, result == ""
			for _, l := range m.GetLabel() {
				ours = ours || (l.GetName() == "controller" && l.GetValue() == controller)
				ofResult = ofResult || (l.GetName() == "result" && l.GetValue() == result)
			}
			if ours && ofResult {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// appRevision is a realistic Revision of app in the harness fleet.
func appRevision(app, tag string, fleet string) *picchuv1alpha1.Revision {
	apps := env.Apps()
	apps.Fleet = fleet
	return apps.Revision(app, tag,
		// Short steps, so a release ramps within a test's patience.
		kit.Geometric(10, 2, 300*time.Millisecond),
		kit.With(func(rev *picchuv1alpha1.Revision) { rev.Spec.TagRoutingHeader = "MEDIUM-TAG" }),
		kit.Target(func(t *picchuv1alpha1.RevisionTarget) {
			t.Ports = []picchuv1alpha1.PortInfo{
				{Name: "http", Port: 80, ContainerPort: 8080, Protocol: corev1.ProtocolTCP, Mode: picchuv1alpha1.PortModePublic, Hosts: []string{app + ".example.com"}},
				{Name: "status", Port: 4444, ContainerPort: 4444, Protocol: corev1.ProtocolTCP, Mode: picchuv1alpha1.PortModeLocal},
			}
			t.ConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"config": app + "-" + tag}}
			t.Istio = &picchuv1alpha1.IstioConfig{Sidecar: &picchuv1alpha1.SidecarConfig{EgressHosts: []string{"istio-system/*"}}}
			t.ServiceLevelObjectives = []picchuv1alpha1.ServiceLevelObjective{{
				Name: "availability", Enabled: true, ObjectivePercentString: "99.9",
				ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{
					TagKey:     "destination_version",
					TotalQuery: fmt.Sprintf(`sum by (destination_version) (istio_requests_total{destination_app=%q})`, app),
					ErrorQuery: fmt.Sprintf(`sum by (destination_version) (istio_requests_total{destination_app=%q,response_code=~"5.."})`, app),
				},
			}}
			t.ServiceMonitors = []picchuv1alpha1.ServiceMonitor{
				serviceMonitor(app, "status"), serviceMonitor(app, "http"),
			}
		}))
}

// serviceMonitor scrapes the app's port.
func serviceMonitor(app, port string) picchuv1alpha1.ServiceMonitor {
	return picchuv1alpha1.ServiceMonitor{
		Name: app + "-" + port, Labels: map[string]string{"prometheus": "main"},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{picchuv1alpha1.LabelApp: app}},
			Endpoints: []monitoringv1.Endpoint{{Port: port}},
		},
	}
}

// config creates, on the delivery cluster, the ConfigMap and Secret a build selects.
func config(t *testing.T, app, tag string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"config": app + "-" + tag}
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: app + "-" + tag + "-env", Namespace: env.Namespace, Labels: labels},
			Data: map[string]string{"MODE": "production"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: app + "-" + tag + "-secrets", Namespace: env.Namespace, Labels: labels},
			Data: map[string][]byte{"TOKEN": []byte("s3cret")}},
	} {
		if err := env.Delivery.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// replicaSet waits for the build's ReplicaSet on a target.
func replicaSet(t *testing.T, target *harness.Target, app, tag string) *appsv1.ReplicaSet {
	t.Helper()
	rs := &appsv1.ReplicaSet{}
	kit.Eventually(t, 30*time.Second, fmt.Sprintf("ReplicaSet %s of %s on %s", tag, app, target.Name), func() error {
		return target.Client.Get(context.Background(), client.ObjectKey{Namespace: app + "-production", Name: tag}, rs)
	})
	return rs
}

// makeReady does what the ReplicaSet controller and kubelets would: it
// reports every replica of the build's ReplicaSet available. A ReplicaSet
// Picchu just created may be written once more (its
// replicas and the rest are applied by two field managers), so, like the
// real controller, it reads the ReplicaSet again on a conflict.
func makeReady(t *testing.T, target *harness.Target, app, tag string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs := replicaSet(t, target, app, tag)
		n := *rs.Spec.Replicas
		rs.Status = appsv1.ReplicaSetStatus{
			Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n, ObservedGeneration: rs.Generation,
		}
		return target.Client.Status().Update(context.Background(), rs)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// deliveryRequests is how many requests of verb on resource the delivery
// API server has served, by its own count (apiserver_request_total).
func deliveryRequests(t *testing.T, verb, resource string) float64 {
	t.Helper()
	hc, err := rest.HTTPClientFor(env.Delivery.Config)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(strings.TrimSuffix(env.Delivery.Config.Host, "/") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		t.Fatalf("reading the delivery API server's metrics: %s: %s", resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("reading the delivery API server's metrics: %v", err)
	}
	total := 0.0
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["verb"] == verb && labels["resource"] == resource {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// churnStatus changes the status of tag's ReplicaSet on target without
// changing its readiness: a condition whose reason is the i-th.
func churnStatus(t *testing.T, target *harness.Target, app, tag string, i int) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs := replicaSet(t, target, app, tag)
		rs.Status.Conditions = []appsv1.ReplicaSetCondition{{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionFalse, Reason: fmt.Sprintf("Churn%d", i),
		}}
		return target.Client.Status().Update(context.Background(), rs)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// poke sets an annotation of app's ReleaseManager to i: a change that
// runs it, and that it has nothing to do about.
func poke(t *testing.T, app string, i int) {
	t.Helper()
	rm := &picchuv1alpha1.ReleaseManager{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: app + "-production"}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/poke":"%d"}}}`, i)
	if err := env.Delivery.Client.Patch(context.Background(), rm, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// buildState waits until the release manager of app records tag in state.
func buildState(t *testing.T, timeout time.Duration, app, tag, state string) *picchuv1alpha1.ReleaseManager {
	t.Helper()
	rm, _ := env.Apps().WaitState(t, timeout, app, tag, state)
	return rm
}

// condition returns the ReleaseManager's condition of type t, or nil.
func condition(rm *picchuv1alpha1.ReleaseManager, t string) *metav1.Condition {
	return meta.FindStatusCondition(rm.Status.Conditions, t)
}

package applier_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	istioapi "istio.io/api/networking/v1alpha3"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/test/integration/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 2}, harness.KeepEnv(&env))
}

// writes counts the requests that change something, per HTTP method, and
// the GETs of single objects (but watches), by the object's name (the last
// element of the path): what a cluster asks beside its caches' lists.
type writes struct {
	mu   sync.Mutex
	n    map[string]int
	gets map[string]int
}

func (w *writes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		w.mu.Lock()
		switch {
		case req.Method != http.MethodGet:
			w.n[req.Method]++
		case req.URL.Query().Get("watch") == "":
			w.gets[req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]]++
		}
		w.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// getsOf is how many GETs named any of names.
func (w *writes) getsOf(names ...string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		n += w.gets[name]
	}
	return n
}

func (w *writes) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, v := range w.n {
		n += v
	}
	return n
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// clusters binds a client to each target that counts its writes.
func clusters(t *testing.T) ([]*applier.Cluster, *writes) {
	t.Helper()
	w := &writes{n: map[string]int{}, gets: map[string]int{}}
	var out []*applier.Cluster
	for _, target := range env.Targets {
		cfg := rest.CopyConfig(target.Config)
		cfg.Wrap(w.wrap)
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, applier.NewCluster(target.Cluster, c, c, "", log.Log))
	}
	return out, w
}

// wiredClusters binds each target as the operator does: the client, API
// reader and cache of a access.Registry, whose cache holds only objects
// labelled with an app, for instance "picchu-test". The writes are counted.
func wiredClusters(t *testing.T) ([]*applier.Cluster, *writes) {
	t.Helper()
	ctx := context.Background()
	w := &writes{n: map[string]int{}, gets: map[string]int{}}
	registry := access.NewRegistry(env.Scheme, log.Log, nil)
	registry.WrapTransport = w.wrap
	var out []*applier.Cluster
	for _, target := range env.Targets {
		secret := &corev1.Secret{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: target.Name}, secret); err != nil {
			t.Fatal(err)
		}
		if _, err := registry.Ensure(ctx, target.Cluster, secret); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(target.Cluster)
		t.Cleanup(func() { registry.Remove(key) })
		rc, ok := registry.Get(key)
		if !ok {
			t.Fatalf("cluster %s not registered", key)
		}
		c := applier.NewCluster(target.Cluster, rc.GetClient(), rc.GetAPIReader(), "picchu-test", log.Log)
		c.Informers = rc.GetCache()
		out = append(out, c)
	}
	return out, w
}

var nsSeq atomic.Int64

func namespace(t *testing.T, cs []*applier.Cluster) string {
	t.Helper()
	name := fmt.Sprintf("plan-test-%d", nsSeq.Add(1))
	for _, c := range cs {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{picchuv1alpha1.LabelApp: "demo"}}}
		if err := c.Apply(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

func configMap(ns string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: ns, Labels: map[string]string{picchuv1alpha1.LabelApp: "demo"}},
		Data:       data,
	}
}

func virtualService(ns string, weight int32) *istionetworkingv1alpha3.VirtualService {
	return &istionetworkingv1alpha3.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: ns, Labels: map[string]string{picchuv1alpha1.LabelApp: "demo"}},
		Spec: istioapi.VirtualService{Hosts: []string{"demo"}, Http: []*istioapi.HTTPRoute{{Route: []*istioapi.HTTPRouteDestination{
			{Destination: &istioapi.Destination{Host: "demo", Subset: "v1"}, Weight: weight},
			{Destination: &istioapi.Destination{Host: "demo", Subset: "v2"}, Weight: 100 - weight},
		}}}},
	}
}

// TestApplyFleet_AppliesAnyKindOnceAndThenNothing applies a ConfigMap and an
// Istio VirtualService to both clusters, checks their content, then applies
// them again unchanged and counts no write; a change is written once.
func TestApplyFleet_AppliesAnyKindOnceAndThenNothing(t *testing.T) {
	ctx := context.Background()
	cs, w := clusters(t)
	ns := namespace(t, cs)
	want := applier.All{
		applier.Func(func(ctx context.Context, c *applier.Cluster) error {
			return c.Apply(ctx, configMap(ns, map[string]string{"a": "1"}))
		}),
		applier.Func(func(ctx context.Context, c *applier.Cluster) error { return c.Apply(ctx, virtualService(ns, 90)) }),
	}
	if err := applier.ApplyFleet(ctx, cs, want, 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		cm := &corev1.ConfigMap{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "config"}, cm); err != nil || cm.Data["a"] != "1" {
			t.Fatalf("%s: configmap %v, %v", c.Name(), cm.Data, err)
		}
		vs := &istionetworkingv1alpha3.VirtualService{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "demo"}, vs); err != nil {
			t.Fatalf("%s: %v", c.Name(), err)
		}
		if got := vs.Spec.Http[0].Route[0].Weight; got != 90 {
			t.Errorf("%s: weight of v1 = %d, want 90", c.Name(), got)
		}
		for _, mf := range cm.ManagedFields {
			if mf.Manager != applier.FieldManager || mf.Operation != metav1.ManagedFieldsOperationApply {
				t.Errorf("%s: configmap fields managed by %s (%s), want only %s applying", c.Name(), mf.Manager, mf.Operation, applier.FieldManager)
			}
		}
	}

	before := w.total()
	for range 3 {
		if err := applier.ApplyFleet(ctx, cs, want, 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.total() - before; got != 0 {
		t.Errorf("re-applying unchanged objects wrote %d times, want 0", got)
	}

	changed := applier.Func(func(ctx context.Context, c *applier.Cluster) error { return c.Apply(ctx, virtualService(ns, 50)) })
	before = w.total()
	if err := applier.ApplyFleet(ctx, cs, changed, 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if got := w.total() - before; got != len(cs) {
		t.Errorf("applying a change wrote %d times, want one per cluster (%d)", got, len(cs))
	}
}

// TestCluster_ApplyDropsFieldsNoLongerWanted checks server-side apply's
// ownership: a key Picchu stops applying is removed, one another manager
// wrote is kept.
func TestCluster_ApplyDropsFieldsNoLongerWanted(t *testing.T) {
	ctx := context.Background()
	cs, _ := clusters(t)
	c := cs[0]
	ns := namespace(t, cs[:1])
	if err := c.Apply(ctx, configMap(ns, map[string]string{"a": "1", "b": "2"})); err != nil {
		t.Fatal(err)
	}
	other := &corev1.ConfigMap{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "config"}, other); err != nil {
		t.Fatal(err)
	}
	other.Data["mine"] = "someone else's"
	if err := c.Client.Update(ctx, other, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, configMap(ns, map[string]string{"a": "1"})); err != nil {
		t.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "config"}, got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Data["b"]; ok || got.Data["a"] != "1" || got.Data["mine"] != "someone else's" {
		t.Errorf("data = %v, want a=1 and mine kept, b removed", got.Data)
	}
}

// TestCluster_LeavesIgnoredObjectsAlone checks the ignore label on a live
// object stops both apply and delete, whatever its value (the original
// honoured the key alone, an empty value too), with the clusters wired as
// the operator wires them.
func TestCluster_LeavesIgnoredObjectsAlone(t *testing.T) {
	for _, value := range []string{"true", ""} {
		t.Run(fmt.Sprintf("value %q", value), func(t *testing.T) {
			ctx := context.Background()
			cs, w := wiredClusters(t)
			c := cs[0]
			ns := namespace(t, cs[:1])
			cm := configMap(ns, map[string]string{"a": "hand-edited"})
			cm.Labels[picchuv1alpha1.LabelIgnore] = value
			if err := c.Client.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			before := w.total()
			if err := c.Apply(ctx, configMap(ns, map[string]string{"a": "1"})); err != nil {
				t.Fatal(err)
			}
			if err := c.DeleteAllOf(ctx, ns, map[string]string{picchuv1alpha1.LabelApp: "demo"}, corev1.SchemeGroupVersion.WithKind("ConfigMap")); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(ctx, configMap(ns, nil)); err != nil {
				t.Fatal(err)
			}
			if got := w.total() - before; got != 0 {
				t.Errorf("%d writes to an ignored object, want 0", got)
			}
			got := &corev1.ConfigMap{}
			if err := env.Targets[0].Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "config"}, got); err != nil || got.Data["a"] != "hand-edited" {
				t.Errorf("ignored configmap = %v, %v; want it untouched", got.Data, err)
			}
		})
	}
}

// TestCluster_DeleteAllOfSkipsKindsTheClusterLacks deletes by label across
// kinds, one of which no target serves.
func TestCluster_DeleteAllOfSkipsKindsTheClusterLacks(t *testing.T) {
	ctx := context.Background()
	cs, _ := clusters(t)
	c := cs[0]
	ns := namespace(t, cs[:1])
	for _, obj := range []client.Object{configMap(ns, map[string]string{"a": "1"}), virtualService(ns, 100)} {
		if err := c.Apply(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	missing := schema.GroupVersionKind{Group: "k8s.practo.dev", Version: "v1", Kind: "WorkerPodAutoScaler"}
	err := c.DeleteAllOf(ctx, ns, map[string]string{picchuv1alpha1.LabelApp: "demo"},
		corev1.SchemeGroupVersion.WithKind("ConfigMap"), missing, istionetworkingv1alpha3.SchemeGroupVersion.WithKind("VirtualService"))
	if err != nil {
		t.Fatalf("DeleteAllOf: %v", err)
	}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &istionetworkingv1alpha3.VirtualService{}} {
		name := map[bool]string{true: "config", false: "demo"}[fmt.Sprintf("%T", obj) == "*v1.ConfigMap"]
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s still there after DeleteAllOf: %v", obj, name, err)
		}
	}
	// Applying again after a delete must write, not trust the old record.
	if err := c.Apply(ctx, configMap(ns, map[string]string{"a": "1"})); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "config"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("configmap not re-created: %v", err)
	}
}

// TestApplyFleet_OneBadClusterNeverStopsTheOthers applies to a reachable
// cluster, an unreachable one, a slow plan and a panicking plan: the good
// cluster is applied and each failure is reported against its cluster.
func TestApplyFleet_OneBadClusterNeverStopsTheOthers(t *testing.T) {
	ctx := context.Background()
	cs, _ := clusters(t)
	good := cs[0]
	ns := namespace(t, cs[:1])

	unreachableCfg := &rest.Config{Host: "https://127.0.0.1:1", Timeout: 2 * time.Second}
	uc, err := client.New(unreachableCfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	unreachable := applier.NewCluster(&picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "down"}}, uc, uc, "", log.Log)
	slow := applier.NewCluster(&picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}, good.Client, good.Client, "", log.Log)
	panicky := applier.NewCluster(&picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "panicky"}}, good.Client, good.Client, "", log.Log)

	p := applier.Func(func(ctx context.Context, c *applier.Cluster) error {
		switch c.Name() {
		case "slow":
			<-ctx.Done() // a cluster that never answers
			return ctx.Err()
		case "panicky":
			var m map[string]int
			m["boom"]++ // a bug in a plan
		}
		return c.Apply(ctx, configMap(ns, map[string]string{"a": "1"}))
	})
	results := applier.ApplyFleet(ctx, []*applier.Cluster{unreachable, slow, good, panicky}, p, 3*time.Second)

	if got := strings.Join(results.Failed(), ","); got != "down,panicky,slow" {
		t.Errorf("failed clusters = %s, want down,panicky,slow", got)
	}
	for _, r := range results {
		switch r.Cluster {
		case good.Name():
			if r.Err != nil {
				t.Errorf("good cluster failed: %v", r.Err)
			}
		case "slow":
			if r.Err == nil || !strings.Contains(r.Err.Error(), "cluster slow: plan did not finish within 3s") {
				t.Errorf("slow cluster error = %v", r.Err)
			}
		case "panicky":
			if r.Err == nil || !strings.Contains(r.Err.Error(), "cluster panicky: plan panicked") {
				t.Errorf("panicking cluster error = %v", r.Err)
			}
		case "down":
			if r.Err == nil || !strings.Contains(r.Err.Error(), "cluster down: reading ConfigMap "+ns+"/config") {
				t.Errorf("unreachable cluster error = %v", r.Err)
			}
		}
	}
	if err := good.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "config"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("good cluster not applied: %v", err)
	}
}

// TestCluster_NeverAdoptsOrDeletesWhatItDidNotCreate gives the cluster a
// namespace and a ConfigMap that a person made, with the names an app's
// would have: applying the app's objects fails naming the object and
// changes nothing, and deleting them leaves them in place. The cluster is
// bound as the operator binds it: its cache does not hold the namespace,
// which carries no app label.
func TestCluster_NeverAdoptsOrDeletesWhatItDidNotCreate(t *testing.T) {
	ctx := context.Background()
	cs, w := wiredClusters(t)
	c := cs[0]
	owner := map[string]string{picchuv1alpha1.LabelApp: "cert", picchuv1alpha1.LabelTarget: "manager"}
	name := fmt.Sprintf("cert-manager-%d", nsSeq.Add(1))
	theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "platform"}}}
	if err := c.Client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: name,
		Labels: map[string]string{picchuv1alpha1.LabelApp: "cert", picchuv1alpha1.LabelTarget: "other"}}, Data: map[string]string{"a": "theirs"}}
	if err := c.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	before := w.total()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: owner}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: name, Labels: owner}, Data: map[string]string{"a": "ours"}},
	} {
		err := c.Apply(ctx, obj)
		var notOwned *applier.NotOwnedError
		if !errors.As(err, &notOwned) || !strings.Contains(err.Error(), obj.GetName()) {
			t.Errorf("applying over %s: got %v, want a NotOwnedError naming it", obj.GetName(), err)
		}
		if err := c.Delete(ctx, obj); err != nil {
			t.Errorf("deleting %s: %v", obj.GetName(), err)
		}
	}
	// A deletion that names no owner leaves objects without an app label.
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Errorf("deleting %s by name: %v", name, err)
	}
	if got := w.total() - before; got != 0 {
		t.Errorf("%d writes to objects Picchu did not create, want 0", got)
	}
	ns := &corev1.Namespace{}
	if err := c.Live.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil || !ns.DeletionTimestamp.IsZero() || len(ns.Labels) != 2 || ns.Labels["team"] != "platform" {
		t.Errorf("their namespace = %v (deleting %v), %v; want it untouched", ns.Labels, ns.DeletionTimestamp, err)
	}
	got := &corev1.ConfigMap{}
	if err := c.Live.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil || got.Data["a"] != "theirs" {
		t.Errorf("their configmap = %v, %v; want it untouched", got.Data, err)
	}
}

// TestCluster_ForgetsWhatANamespaceHeldWhenItGoes applies a namespace, a
// ConfigMap and a ReplicaSet in it, deletes the ReplicaSet (forgotten for
// both of its managers), then the namespace: the cluster remembers nothing,
// so a removed app leaves nothing behind in the operator's memory.
func TestCluster_ForgetsWhatANamespaceHeldWhenItGoes(t *testing.T) {
	ctx := context.Background()
	cs, _ := clusters(t)
	c := cs[0]
	owned := map[string]string{picchuv1alpha1.LabelApp: "demo", picchuv1alpha1.LabelTarget: "production"}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("plan-test-%d", nsSeq.Add(1)), Labels: owned}}
	if err := c.Apply(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, configMap(ns.Name, map[string]string{"a": "1"})); err != nil {
		t.Fatal(err)
	}
	rs := scalable(ns.Name, "v1", nil)
	rs.Labels[picchuv1alpha1.LabelTarget] = "production"
	if err := c.CreateScaled(ctx, rs, 2); err != nil {
		t.Fatal(err)
	}
	if n := c.Remembered(); n != 4 {
		t.Fatalf("remembers %d objects after applying a namespace, a ConfigMap and a ReplicaSet with both managers, want 4", n)
	}
	if err := c.Delete(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if n := c.Remembered(); n != 2 {
		t.Fatalf("remembers %d objects after deleting the ReplicaSet, want the namespace and the ConfigMap", n)
	}
	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	live := &corev1.Namespace{}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(ns), live); err == nil && live.DeletionTimestamp.IsZero() {
		t.Fatalf("namespace %s was not deleted", ns.Name)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if n := c.Remembered(); n != 0 {
		t.Errorf("remembers %d objects after deleting their namespace, want 0", n)
	}
}

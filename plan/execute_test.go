package plan_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

var labels = map[string]string{picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelTarget: "production", picchuv1alpha1.LabelTag: "v1"}

// fakeCluster is a cluster of a fake client that records the writes sent
// to it, as "apply <manager> <name>" and "create <name>".
type fakeCluster struct {
	*applier.Cluster
	writes []string
}

func newFakeCluster(t *testing.T, live ...client.Object) *fakeCluster {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	fc := &fakeCluster{}
	cl := &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east", Namespace: "picchu"}}
	owner := applier.Owner{Instance: "test", Namespace: "picchu"}
	for _, obj := range live {
		l := maps.Clone(obj.GetLabels())
		maps.Copy(l, owner.Labels())
		obj.SetLabels(l)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live...).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			o := &client.ApplyOptions{}
			o.ApplyOptions(opts)
			fc.writes = append(fc.writes, fmt.Sprintf("apply %s", o.FieldManager))
			return c.Apply(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			fc.writes = append(fc.writes, "create "+obj.GetName())
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	fc.Cluster = applier.NewCluster(cl, c, c, owner.Instance, logr.Discard())
	return fc
}

func replicaSet(replicas *int32, annotations map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: "shop-production", Labels: maps.Clone(labels), Annotations: annotations},
		Spec: appsv1.ReplicaSetSpec{Replicas: replicas, Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(labels)},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "shop", Image: "shop:v1"}}}}},
	}
}

// TestExecute_ScaleReplicaSet: the replica actions are interpreted against
// the live ReplicaSet, in the order today's writes take.
func TestExecute_ScaleReplicaSet(t *testing.T) {
	for _, tc := range []struct {
		name     string
		live     *appsv1.ReplicaSet
		replicas plan.Replicas
		writes   []string
		want     *int32 // nil: no ReplicaSet
	}{
		{name: "absent, created at its count", replicas: plan.Replicas{Set: true, To: 3, CreateAt: 3},
			writes: []string{"apply picchu", "apply picchu-replicas"}, want: ptr.To[int32](3)},
		{name: "absent while retiring: nothing", replicas: plan.Replicas{Set: true, To: 0, SkipAbsent: true}},
		{name: "present, replicas set first", live: replicaSet(ptr.To[int32](2), nil), replicas: plan.Replicas{Set: true, To: 5, CreateAt: 5},
			writes: []string{"apply picchu-replicas", "apply picchu"}, want: ptr.To[int32](5)},
		{name: "autoscaled, left at 0: the HPA starts at its min", live: replicaSet(ptr.To[int32](0), nil),
			replicas: plan.Replicas{CreateAt: 2, StartAt: 2}, writes: []string{"apply picchu", "apply picchu-replicas"}, want: ptr.To[int32](2)},
		{name: "autoscaled, running: left alone", live: replicaSet(ptr.To[int32](4), nil),
			replicas: plan.Replicas{CreateAt: 2, StartAt: 2}, writes: []string{"apply picchu"}, want: ptr.To[int32](4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live []client.Object
			if tc.live != nil {
				live = append(live, tc.live)
			}
			c := newFakeCluster(t, live...)
			p := &plan.Cluster{Name: "east", Builds: []plan.Build{{Tag: "v1", Action: plan.Sync, Steps: []plan.Step{
				{Op: plan.ScaleReplicaSet, Object: replicaSet(nil, nil), Replicas: &tc.replicas},
			}}}}
			if _, err := plan.Execute(context.Background(), c.Cluster, p); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.writes, tc.writes) {
				t.Errorf("writes %q, want %q", c.writes, tc.writes)
			}
			got := &appsv1.ReplicaSet{}
			err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: "shop-production", Name: "v1"}, got)
			switch {
			case tc.want == nil && err == nil:
				t.Errorf("a ReplicaSet was made")
			case tc.want != nil && err != nil:
				t.Fatal(err)
			case tc.want != nil && ptr.Deref(got.Spec.Replicas, -1) != *tc.want:
				t.Errorf("replicas %d, want %d", ptr.Deref(got.Spec.Replicas, -1), *tc.want)
			}
		})
	}
}

// TestExecute_IfAutoscaled: the autoscaler steps of a build that never had
// one are skipped, and taken once its live ReplicaSet names one.
func TestExecute_IfAutoscaled(t *testing.T) {
	failed := errors.New("no HPA for you")
	steps := []plan.Step{
		{Op: plan.ScaleReplicaSet, Object: replicaSet(nil, nil), Replicas: &plan.Replicas{Set: true, To: 1, CreateAt: 1}},
		{Op: plan.Fail, Err: failed, IfAutoscaled: true},
	}
	never := newFakeCluster(t, replicaSet(ptr.To[int32](1), nil))
	if _, err := plan.Execute(context.Background(), never.Cluster, &plan.Cluster{Builds: []plan.Build{{Tag: "v1", Action: plan.Sync, Steps: steps}}}); err != nil {
		t.Errorf("a build that never had an autoscaler: %v", err)
	}
	had := newFakeCluster(t, replicaSet(ptr.To[int32](1), map[string]string{manifests.AnnotationAutoscaler: "hpa"}))
	_, err := plan.Execute(context.Background(), had.Cluster, &plan.Cluster{Builds: []plan.Build{{Tag: "v1", Action: plan.Sync, Steps: steps}}})
	if !errors.Is(err, failed) {
		t.Errorf("a build whose ReplicaSet names an autoscaler: %v, want %v", err, failed)
	}
}

// TestExecute_Errors: a build's failure (or hold) is that build's, named
// as today; the app's stops the plan.
func TestExecute_Errors(t *testing.T) {
	c := newFakeCluster(t)
	held, broken, routes := errors.New("held on cluster east"), errors.New("bad"), errors.New("bad routes")
	p := &plan.Cluster{Name: "east",
		Builds: []plan.Build{
			{Tag: "v3", Action: plan.Sync, Hold: held},
			{Tag: "v2", Action: plan.Retire, Steps: []plan.Step{{Op: plan.Fail, Err: broken}}},
			{Tag: "v1", Action: plan.Delete, Steps: []plan.Step{{Op: plan.Fail, Err: broken}}},
		},
		Routes:     []plan.Step{{Op: plan.Fail, Err: routes}},
		Monitoring: []plan.Step{{Op: plan.Fail, Err: errors.New("not reached")}},
	}
	_, err := plan.Execute(context.Background(), c.Cluster, p)
	builds, only := plan.BuildErrors(err)
	if only {
		t.Errorf("the app's failure is not told")
	}
	var got []string
	for _, tag := range slices.Sorted(maps.Keys(builds)) {
		got = append(got, builds[tag].Error())
	}
	want := []string{"deleting build v1: bad", "retiring build v2: bad", "build v3: held on cluster east"}
	if !slices.Equal(got, want) {
		t.Errorf("build errors %q, want %q", got, want)
	}
	if !errors.Is(err, routes) || strings.Contains(err.Error(), "not reached") {
		t.Errorf("error %v: want the routes' error, and nothing after it", err)
	}
}

// askedInformers records the kinds Warm asks for, and the writes made by
// then.
type askedInformers struct {
	cache.Informers
	c      *fakeCluster
	asked  []schema.GroupVersionKind
	writes int
}

func (a *askedInformers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	a.asked = append(a.asked, obj.GetObjectKind().GroupVersionKind())
	a.writes = max(a.writes, len(a.c.writes))
	return nil, nil
}

// TestExecute_WarmsEveryKindFirst: before its first step, Execute asks the
// cluster's cache for every kind its steps apply, delete or select, so a
// new cluster lists them all at once rather than one after the other.
func TestExecute_WarmsEveryKindFirst(t *testing.T) {
	c := newFakeCluster(t)
	asked := &askedInformers{c: c}
	c.Informers = asked
	ns := "shop-production"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Labels: maps.Clone(labels)}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns, Labels: maps.Clone(labels)}}
	hpa := schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	p := &plan.Cluster{Name: "east",
		App: []plan.Step{{Op: plan.Apply, Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: maps.Clone(labels)}}}},
		Builds: []plan.Build{{Tag: "v1", Action: plan.Sync, Steps: []plan.Step{
			{Op: plan.Apply, Object: cm},
			{Op: plan.ScaleReplicaSet, Object: replicaSet(nil, nil), Replicas: &plan.Replicas{Set: true, To: 1, CreateAt: 1}},
			{Op: plan.RemoveAll, Namespace: ns, Selector: labels, Kinds: []schema.GroupVersionKind{hpa}},
		}}},
		Routes: []plan.Step{{Op: plan.Apply, Object: svc}, {Op: plan.Apply, Object: cm}},
	}
	if _, err := plan.Execute(context.Background(), c.Cluster, p); err != nil {
		t.Fatal(err)
	}
	want := []schema.GroupVersionKind{
		corev1.SchemeGroupVersion.WithKind("Namespace"), corev1.SchemeGroupVersion.WithKind("Service"),
		corev1.SchemeGroupVersion.WithKind("ConfigMap"), appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), hpa,
	}
	if !slices.Equal(asked.asked, want) {
		t.Errorf("kinds warmed %v, want %v", asked.asked, want)
	}
	if asked.writes != 0 || len(c.writes) == 0 {
		t.Errorf("warmed after %d writes (of %d): want before the first", asked.writes, len(c.writes))
	}
	// A second run has nothing left to warm.
	asked.asked = nil
	if _, err := plan.Execute(context.Background(), c.Cluster, p); err != nil {
		t.Fatal(err)
	}
	if len(asked.asked) != 0 {
		t.Errorf("a second run warmed %v again", asked.asked)
	}
}

package applier

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// TestUnserved: a kind the cluster does not serve is asked about once, and
// again only once UnservedFor has passed; reads of it fail as before, with
// an error that says the kind is not served; other kinds are asked as
// usual.
func TestUnserved(t *testing.T) {
	ctx := context.Background()
	route := schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	asked := map[string]int{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			kind := list.GetObjectKind().GroupVersionKind().Kind
			asked[kind]++
			if kind == "HTTPRouteList" {
				return &meta.NoKindMatchError{GroupKind: route.GroupKind(), SearchedVersions: []string{"v1"}}
			}
			return c.List(ctx, list, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			asked[obj.GetObjectKind().GroupVersionKind().Kind]++
			if obj.GetObjectKind().GroupVersionKind().Kind == "HTTPRoute" {
				return &meta.NoKindMatchError{GroupKind: route.GroupKind(), SearchedVersions: []string{"v1"}}
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	cl := NewCluster(&picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}}, c, c, "", logr.Discard())
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	cl.now = func() time.Time { return now }

	routes := &unstructured.UnstructuredList{}
	routes.SetGroupVersionKind(route.GroupVersion().WithKind("HTTPRouteList"))
	for range 3 {
		if err := cl.DeleteAllOf(ctx, "shop-production", map[string]string{picchuv1alpha1.LabelApp: "shop"}, route); err != nil {
			t.Fatalf("an unserved kind has nothing to delete: %v", err)
		}
		if err := cl.List(ctx, routes); !meta.IsNoMatchError(err) {
			t.Fatalf("listing an unserved kind: %v, want a no-match error", err)
		}
		gone := &unstructured.Unstructured{}
		gone.SetGroupVersionKind(route)
		gone.SetNamespace("shop-production")
		gone.SetName("shop-http")
		if err := cl.Delete(ctx, gone); err != nil {
			t.Fatalf("deleting an object of an unserved kind: %v", err)
		}
	}
	if asked["HTTPRouteList"]+asked["HTTPRoute"] != 1 {
		t.Errorf("asked about the unserved kind %d times in three rounds, want once", asked["HTTPRouteList"]+asked["HTTPRoute"])
	}
	configMaps := &unstructured.UnstructuredList{}
	configMaps.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMapList"})
	for range 2 {
		if err := cl.List(ctx, configMaps); err != nil {
			t.Fatal(err)
		}
	}
	if asked["ConfigMapList"] != 2 {
		t.Errorf("listed a served kind %d times, want 2", asked["ConfigMapList"])
	}
	now = now.Add(UnservedFor)
	if err := cl.List(ctx, routes); !meta.IsNoMatchError(err) {
		t.Fatalf("listing an unserved kind: %v", err)
	}
	if n := asked["HTTPRouteList"] + asked["HTTPRoute"]; n != 2 {
		t.Errorf("asked %d times once UnservedFor passed, want 2", n)
	}
}

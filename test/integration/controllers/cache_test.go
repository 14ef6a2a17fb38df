package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/test/kit"
)

// TestDeliveryCache_HoldsSecretsAndConfigMapsOfItsNamespacesOnly starts the
// delivery cache main.go starts with --namespaces: Secrets and ConfigMaps
// of other namespaces are neither listed nor readable through it.
func TestDeliveryCache_HoldsSecretsAndConfigMapsOfItsNamespacesOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const elsewhere = "elsewhere"
	if err := env.Delivery.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{env.Namespace, elsewhere} {
		for _, obj := range []client.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-probe", Namespace: ns}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cache-probe", Namespace: ns}},
		} {
			if err := env.Delivery.Client.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
				t.Fatal(err)
			}
		}
	}
	opts := operator.DeliveryCache([]string{env.Namespace})
	opts.Scheme = env.Scheme
	c, err := cache.New(env.Delivery.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			t.Errorf("cache: %v", err)
		}
	}()
	kit.Eventually(t, 10*time.Second, "the cache holds the probes of "+env.Namespace, func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "cache-probe"}, &corev1.Secret{}); err != nil {
			return err
		}
		return c.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "cache-probe"}, &corev1.ConfigMap{})
	})
	for _, obj := range []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: elsewhere, Name: "cache-probe"}, obj); err == nil {
			t.Errorf("%T of namespace %s read through the delivery cache", obj, elsewhere)
		}
	}
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets); err != nil {
		t.Fatal(err)
	}
	configMaps := &corev1.ConfigMapList{}
	if err := c.List(ctx, configMaps); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Namespace != env.Namespace {
			t.Errorf("the delivery cache lists secret %s/%s", s.Namespace, s.Name)
		}
	}
	for _, cm := range configMaps.Items {
		if cm.Namespace != env.Namespace {
			t.Errorf("the delivery cache lists config map %s/%s", cm.Namespace, cm.Name)
		}
	}
}

// TestCaches_HoldNoManagedFields releases an app through the operator as
// main assembles it, while another manager writes the status of its
// ReplicaSets (as the ReplicaSet controller does): the target clusters'
// caches hold none of their managed fields (only an older Picchu's claim
// on replicas would be kept, for the take-over: applier.KeepReplicasOwner),
// and the delivery cache none of the app's Revision and ReleaseManager.
// The API servers keep every manager's, the status writes from the
// stripped copies included.
func TestCaches_HoldNoManagedFields(t *testing.T) {
	ctx := context.Background()
	const app = "lean"
	config(t, app, "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision(app, "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	buildState(t, 30*time.Second, app, "v1", "released")

	for _, target := range env.Targets {
		live := replicaSet(t, target, app, "v1")
		if got := managers(live.ManagedFields); !slices.Contains(got, applier.FieldManager) || len(got) < 2 {
			t.Fatalf("ReplicaSet v1 on %s: the API server has the fields of %v, want Picchu's and the test's", target.Name, got)
		}
		conn, ok := running.Operator().Registry.Get(types.NamespacedName{Namespace: env.Namespace, Name: target.Name})
		if !ok {
			t.Fatalf("no client of %s", target.Name)
		}
		cached := &unstructured.Unstructured{}
		cached.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
		kit.Eventually(t, 10*time.Second, "the cache of "+target.Name+" at the API server's version of ReplicaSet v1", func() error {
			if err := conn.GetClient().Get(ctx, client.ObjectKeyFromObject(live), cached); err != nil {
				return err
			}
			if version(t, cached.GetResourceVersion()) < version(t, live.ResourceVersion) {
				return fmt.Errorf("version %s, the API server's %s", cached.GetResourceVersion(), live.ResourceVersion)
			}
			return nil
		})
		// This Picchu applies replicas with its replicas manager alone:
		// nothing is left for the take-over to read.
		if got := cached.GetManagedFields(); len(got) > 0 {
			t.Errorf("ReplicaSet v1 in the cache of %s holds the fields of %v", target.Name, managers(got))
		}
	}

	rm := &picchuv1alpha1.ReleaseManager{}
	rev := &picchuv1alpha1.Revision{}
	for _, obj := range []client.Object{rm, rev} {
		key := client.ObjectKey{Namespace: env.Namespace, Name: app + "-production"}
		if obj == rev {
			key.Name = app + "-v1"
		}
		if err := running.Operator().Client.Get(ctx, key, obj); err != nil {
			t.Fatal(err)
		}
		if len(obj.GetManagedFields()) > 0 {
			t.Errorf("%T %s in the delivery cache holds the fields of %v", obj, key.Name, managers(obj.GetManagedFields()))
		}
		if err := env.Delivery.Client.Get(ctx, key, obj); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(obj.GetManagedFields(), func(mf metav1.ManagedFieldsEntry) bool { return mf.Subresource == "status" }) {
			t.Errorf("%T %s: the API server lost the status writer's fields: %v", obj, key.Name, managers(obj.GetManagedFields()))
		}
	}
}

// version is a resource version as the number the API server's etcd makes
// it.
func version(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resource version %q: %v", rv, err)
	}
	return n
}

// managers are the field managers of fields.
func managers(fields []metav1.ManagedFieldsEntry) []string {
	out := make([]string, 0, len(fields))
	for _, mf := range fields {
		out = append(out, mf.Manager)
	}
	return out
}

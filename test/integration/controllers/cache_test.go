package controllers_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/operator"
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

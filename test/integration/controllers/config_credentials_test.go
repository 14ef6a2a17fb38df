package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// TestReleaseManager_NeverCopiesCredentials gives a build a configSelector
// that also matches a Cluster's Secret, a Secret labelled as credentials and
// a service-account token Secret: only the build's own Secret reaches the
// targets, and the Revision gets a warning event per refused Secret.
func TestReleaseManager_NeverCopiesCredentials(t *testing.T) {
	ctx := context.Background()
	const app = "vaulty"
	config(t, app, "v1")
	selected := map[string]string{"config": app + "-v1"}
	registerCluster(t, "vault", "vault", nil, `{"token": "vault-token"}`, selected)
	credentialsLabels := map[string]string{"config": app + "-v1", access.LabelCredentials: "true"}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: app + "-datadog", Namespace: env.Namespace, Labels: credentialsLabels},
			Data: map[string][]byte{"api-key": []byte("dd")}},
		{ObjectMeta: metav1.ObjectMeta{Name: app + "-sa-token", Namespace: env.Namespace, Labels: selected,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
			Type: corev1.SecretTypeServiceAccountToken},
	} {
		if err := env.Delivery.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Delivery.Client.Create(ctx, appRevision(app, "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	ns := app + "-production"
	// copied says which of the credential Secrets are on target.
	copied := func(target *harness.Target) ([]string, error) {
		var names []string
		for _, name := range []string{"vault", app + "-datadog", app + "-sa-token"} {
			err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{})
			switch {
			case err == nil:
				names = append(names, name)
			case !apierrors.IsNotFound(err):
				return nil, err
			}
		}
		return names, nil
	}
	for _, target := range env.Targets {
		kit.Eventually(t, 30*time.Second, target.Name+": the build's own secret is copied", func() error {
			err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app + "-v1-secrets"}, &corev1.Secret{})
			if err != nil {
				names, _ := copied(target)
				return fmt.Errorf("%w (credential secrets copied: %v)", err, names)
			}
			return nil
		})
		if names, err := copied(target); err != nil || len(names) > 0 {
			t.Errorf("%s: credential secrets copied to %s: %v (%v)", target.Name, ns, names, err)
		}
	}
	kit.Eventually(t, 10*time.Second, "a warning event per refused secret", func() error {
		events := &eventsv1.EventList{}
		if err := env.Delivery.Client.List(ctx, events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, name := range []string{"vault", app + "-datadog", app + "-sa-token"} {
			found := false
			for _, e := range events.Items {
				found = found || (e.Regarding.Name == app+"-v1" && e.Related != nil && e.Related.Name == name &&
					e.Reason == releasemanager.ReasonCredentialsNotCopied && e.Type == corev1.EventTypeWarning &&
					strings.Contains(e.Note, "secret "+name+","))
			}
			if !found {
				return fmt.Errorf("no %s event for secret %s among %d events", releasemanager.ReasonCredentialsNotCopied, name, len(events.Items))
			}
		}
		return nil
	})
}

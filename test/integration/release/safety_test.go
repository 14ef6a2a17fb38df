package release_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
)

// TestSafety_ReplacedRevisionNeverDeletesTheApp replaces the Revision of a
// serving app as kubectl replace --force, Argo CD's Replace=true or Flux's
// apply-then-prune do, while the Revision controller is held back: the new
// Revision has no app label yet when the old one goes. The ReleaseManager
// and the app's namespaces survive, and the new build is released.
func TestSafety_ReplacedRevisionNeverDeletesTheApp(t *testing.T) {
	ctx := context.Background()
	const app = "replaced"
	v1 := create(t, build{app: app, tag: "v1", commit: 1, delay: 200 * time.Millisecond})
	state(t, 30*time.Second, app, "v1", "released")
	rm, err := releaseManager(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := map[string]types.UID{}
	for _, target := range env.Targets {
		ns := &corev1.Namespace{}
		if err := target.Client.Get(ctx, client.ObjectKey{Name: app + "-production"}, ns); err != nil {
			t.Fatalf("%s: %v", target.Name, err)
		}
		namespaces[target.Name] = ns.UID
	}

	running.Restart(t, func(o *operator.Options) { o.WithoutRevisionController = true })
	defer running.Restart(t)
	v2 := build{app: app, tag: "v2", commit: 2, delay: 200 * time.Millisecond}.revision()
	delete(v2.Labels, picchuv1alpha1.LabelApp)
	if err := env.Delivery.Client.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	if err := env.Delivery.Client.Delete(ctx, v1); err != nil {
		t.Fatal(err)
	}

	state(t, 60*time.Second, app, "v2", "released")
	routes(t, app, map[string]int32{"v2": 100})
	after, err := releaseManager(ctx, app)
	if err != nil {
		t.Fatalf("the release manager went: %v", err)
	}
	if after.UID != rm.UID || !after.DeletionTimestamp.IsZero() {
		t.Errorf("the release manager was replaced or is being deleted: uid %s → %s, deletion %v", rm.UID, after.UID, after.DeletionTimestamp)
	}
	for _, target := range env.Targets {
		ns := &corev1.Namespace{}
		if err := target.Client.Get(ctx, client.ObjectKey{Name: app + "-production"}, ns); err != nil {
			t.Fatalf("%s: the app's namespace went: %v", target.Name, err)
		}
		if ns.UID != namespaces[target.Name] || !ns.DeletionTimestamp.IsZero() {
			t.Errorf("%s: the app's namespace was replaced or is being deleted: uid %s → %s, deletion %v",
				target.Name, namespaces[target.Name], ns.UID, ns.DeletionTimestamp)
		}
	}
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

// TestCanaryWithoutTrafficHolds: v2 of app "hush" canaries while the mesh
// sends it no request, so its SLO's recorded total has no series for its
// tag in the fleet's Prometheus. Past its canary's time it still canaries,
// and the ReleaseManager's CanaryEvidence condition says why; once requests
// reach it, the canary passes and v2 is released.
func TestCanaryWithoutTrafficHolds(t *testing.T) {
	quietNeighbour(t)
	ctx := context.Background()
	const app = "hush"
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mesh.SetQuiet(ctx, lab.MeshURL, app, "v2", false); err != nil {
			t.Error(err)
		}
	})
	apply(t, app, "v1", nil)
	until(t, 2*time.Minute, app, "v1 released", releasedEverywhere("v1"))

	if err := mesh.SetQuiet(ctx, lab.MeshURL, app, "v2", true); err != nil {
		t.Fatal(err)
	}
	rev := apply(t, app, "v2", nil)
	ttl := time.Duration(rev.Spec.Targets[0].Canary.TTL) * time.Second
	var held metav1.Condition
	var record picchuv1alpha1.ReleaseManagerRevisionStatus
	if err := kit.Poll(ctx, pollInterval, 2*time.Minute, app+": v2's canary held for want of requests", func(ctx context.Context) error {
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionCanaryEvidence)
		if c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("CanaryEvidence %+v", c)
		}
		held = *c
		for _, st := range rm.Status.Revisions {
			if st.Tag == "v2" {
				record = st
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("held: %s", held.Message)
	if !strings.Contains(held.Message, "v2") || held.Reason != "NoTraffic" {
		t.Errorf("CanaryEvidence %+v, want reason NoTraffic naming v2", held)
	}
	if record.State.Current != "canarying" || record.CanaryStartTimestamp == nil || time.Since(record.CanaryStartTimestamp.Time) < ttl {
		t.Errorf("v2 %s, canary started %v: want still canarying past its %s", record.State.Current, record.CanaryStartTimestamp, ttl)
	}

	if err := mesh.SetQuiet(ctx, lab.MeshURL, app, "v2", false); err != nil {
		t.Fatal(err)
	}
	until(t, 2*time.Minute, app, "v2 released once requests reach it", releasedEverywhere("v2"))
}

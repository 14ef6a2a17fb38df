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
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

// TestFreezeHoldsItsWave: app "frosty" releases in two waves, east then
// west, while west is in a maintenance window. v2 canaries and is released
// in east; west, frozen, routes v1 alone all along, shows the window in
// its status, and the ReleaseManager says why; once the window closes, v2
// ramps in west too and is released there.
func TestFreezeHoldsItsWave(t *testing.T) {
	quietNeighbour(t)
	ctx := context.Background()
	const app = "frosty"
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	east, west := wavesFleet(t, app)
	inWaves := func(r *picchuv1alpha1.Revision) {
		tg := &r.Spec.Targets[0]
		tg.Fleet = app
		tg.Release.GeometricScaling.Delay = &metav1.Duration{Duration: 3 * time.Second}
		tg.Release.Waves = []picchuv1alpha1.ReleaseWave{
			{Name: "east", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}},
			{Name: "west"},
		}
	}
	apply(t, app, "v1", inWaves)
	until(t, 3*time.Minute, app, "v1 released", releasedEverywhere("v1", east.Name, west.Name))

	// West freezes for long enough for east to take all of v2.
	const window = 90 * time.Second
	cl := &picchuv1alpha1.Cluster{}
	key := client.ObjectKey{Namespace: lab.Namespace, Name: inFleet(west, app)}
	if err := lab.Delivery.Client.Get(ctx, key, cl); err != nil {
		t.Fatal(err)
	}
	// Stored to the second, as the operator reads them.
	start, end := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second)), metav1.NewTime(time.Now().Add(window).Truncate(time.Second))
	patch := client.MergeFrom(cl.DeepCopy())
	cl.Spec.Freezes = []picchuv1alpha1.FreezeWindow{{Name: "upgrade", Start: &start, End: &end}}
	if err := lab.Delivery.Client.Patch(ctx, cl, patch); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 30*time.Second, "west shows its freeze", func() error {
		if err := lab.Delivery.Client.Get(ctx, key, cl); err != nil {
			return err
		}
		if !strings.HasPrefix(cl.Status.Frozen, "upgrade until ") {
			return fmt.Errorf("status.frozen %q", cl.Status.Frozen)
		}
		return nil
	})

	apply(t, app, "v2", inWaves)
	if err := kit.Poll(ctx, pollInterval, window, app+": v2 released in east while west is frozen", func(ctx context.Context) error {
		inWest, err := weightsIn(ctx, west, app)
		if err != nil {
			return err
		}
		if inWest["v2"] != 0 && time.Now().Before(end.Time) {
			t.Fatalf("frozen west routes %v", inWest)
		}
		inEast, err := weightsIn(ctx, east, app)
		if err != nil {
			return err
		}
		if inEast["v2"] != 100 {
			return fmt.Errorf("east routes %v", inEast)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	rm := &picchuv1alpha1.ReleaseManager{}
	if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionFrozen); c == nil || !strings.Contains(c.Message, inFleet(west, app)+": upgrade until") {
		t.Errorf("Frozen condition %+v, want west's window named", c)
	}
	// East has all of v2: the window need not last its 90 s. It is
	// shortened to close 10 s from now, and still closes by the clock.
	if err := lab.Delivery.Client.Get(ctx, key, cl); err != nil {
		t.Fatal(err)
	}
	end = metav1.NewTime(time.Now().Add(10 * time.Second).Truncate(time.Second))
	patch = client.MergeFrom(cl.DeepCopy())
	cl.Spec.Freezes[0].End = &end
	if err := lab.Delivery.Client.Patch(ctx, cl, patch); err != nil {
		t.Fatal(err)
	}
	// West holds v1 until the window closes, then ramps.
	if err := kit.Poll(ctx, pollInterval, window+5*time.Second, app+": west holds while frozen", func(ctx context.Context) error {
		inWest, err := weightsIn(ctx, west, app)
		if err != nil {
			return err
		}
		if inWest["v2"] != 0 {
			if time.Now().Before(end.Time) {
				t.Fatalf("frozen west routes %v", inWest)
			}
			return nil
		}
		return fmt.Errorf("west routes %v", inWest)
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	t.Logf("west took v2 %s after its window closed", time.Since(end.Time).Round(time.Millisecond))
	until(t, 2*time.Minute, app, "v2 released", releasedEverywhere("v2", east.Name, west.Name))
}

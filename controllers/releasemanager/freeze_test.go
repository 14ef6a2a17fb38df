package releasemanager

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
)

// freezeEast opens a freeze window on east from now to until.
func (c *controlled) freezeEast(until time.Time) {
	start, end := metav1.NewTime(c.s.now.Add(-time.Minute)), metav1.NewTime(until)
	c.s.fleet[0].obj.Spec.Freezes = []picchuv1alpha1.FreezeWindow{{Name: "upgrade", Start: &start, End: &end}}
}

// runFrozen reads the clusters' freezes, as a snapshot does, then runs.
func (c *controlled) runFrozen(d time.Duration) string {
	for _, fc := range c.s.fleet {
		fc.freeze = schedule.Frozen(fc.obj.Spec.Freezes, c.s.now.Add(d))
	}
	return c.run(d)
}

// TestFreeze_HoldsTheRampAndTheCanaryUntilItCloses: with east in a freeze
// window, v2's ramp holds at its weight and v3 does not start its canary;
// the ReleaseManager says which cluster is frozen until when. Once the
// window closes, both go on.
func TestFreeze_HoldsTheRampAndTheCanaryUntilItCloses(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	c.add("v2", release.Releasing, 0)
	c.expect(0, "v2 releasing 25, v1 released 75")
	until := c.s.now.Add(time.Minute)
	c.freezeEast(until)
	for range 5 {
		if got := c.runFrozen(step); got != "v2 releasing 25, v1 released 75" {
			t.Fatalf("frozen: %s", got)
		}
	}
	if d := c.builds["v2"].ramp.Waiting; d != "frozen" {
		t.Errorf("v2 waits for %q, want frozen", d)
	}
	rm := c.s.rm.DeepCopy()
	setFrozenCondition(rm, c.s.fleet)
	cond := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionFrozen)
	if cond == nil || !strings.Contains(cond.Message, "east: upgrade until "+until.UTC().Format(time.RFC3339)) {
		t.Errorf("Frozen condition %+v, want east's window named", cond)
	}
	v3 := c.addCanary("v3", release.Deployed, 60)
	if got := c.runFrozen(0); got != "v3 deployed 0, v2 releasing 25, v1 released 75" {
		t.Fatalf("a canary started in a freeze: %s", got)
	}
	if due := v3.step.Due; !due.Equal(until) {
		t.Errorf("v3 due %v, want the freeze's end %v", due, until)
	}
	// The window closes.
	if got := c.runFrozen(time.Minute); got != "v3 canarying 10, v2 releasing 50, v1 released 40" {
		t.Fatalf("after the freeze: %s", got)
	}
}

// TestFreeze_ARollbackProceeds: a build failed while a cluster is frozen
// gives its traffic back all the same.
func TestFreeze_ARollbackProceeds(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	v2 := c.add("v2", release.Releasing, 0)
	c.expect(0, "v2 releasing 25, v1 released 75")
	c.freezeEast(c.s.now.Add(time.Hour))
	v2.revision.Spec.Failed = true
	if got := c.runFrozen(0); got != "v2 failing 25, v1 released 75" {
		t.Fatalf("%s", got)
	}
	if got := c.runFrozen(step); !strings.HasPrefix(got, "v2 failing 0, v1 released 100") {
		t.Fatalf("the rollback held in a freeze: %s", got)
	}
}

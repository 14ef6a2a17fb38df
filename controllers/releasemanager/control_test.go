package releasemanager

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/plan/applier"
)

// controlled is app shop in production on east and west, ramping
// geometrically from 25 % every 10 s at any time, steered by a person
// through its Revisions' annotations. A run is a decision and its report,
// fed back as the next run's record.
type controlled struct {
	t      *testing.T
	s      *snapshot
	builds map[string]*incarnation
	events []string
}

func newControlled(t *testing.T) *controlled {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	rm := &picchuv1alpha1.ReleaseManager{Spec: picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: "production"}}
	c := &controlled{t: t, s: &snapshot{rm: rm, now: now}, builds: map[string]*incarnation{}}
	for _, name := range []string{"east", "west"} {
		c.s.fleet = append(c.s.fleet, &fleetCluster{obj: &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, live: true, factor: 1, conn: &applier.Cluster{}})
		c.s.observation = append(c.s.observation, release.ClusterObservation{Name: name, Live: true, Observed: true, Tags: map[string]release.Replicas{}})
	}
	return c
}

// add adds a build newer than those before, created an hour before now
// (later builds a minute later each), recorded in state at percent.
func (c *controlled) add(tag string, state release.State, percent int32) *incarnation {
	created := c.s.now.Add(-time.Hour + time.Duration(len(c.builds))*time.Minute)
	inc := &incarnation{tag: tag, order: created,
		revision: &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "shop-" + tag, CreationTimestamp: metav1.NewTime(created), Annotations: map[string]string{}}},
		target: &picchuv1alpha1.RevisionTarget{
			Name:  "production",
			Scale: picchuv1alpha1.ScaleInfo{Default: 10, Max: 10},
			Release: picchuv1alpha1.ReleaseInfo{Max: 100, Eligible: true, Schedule: picchuv1alpha1.ScheduleAlways, GeometricScaling: picchuv1alpha1.GeometricScaling{
				Start: 25, Factor: 2, Delay: &metav1.Duration{Duration: 10 * time.Second}}},
		}}
	stamp := picchuv1alpha1.NewTimestamp(c.s.now.Add(-time.Hour))
	inc.status = picchuv1alpha1.ReleaseManagerRevisionStatus{Tag: tag, CurrentPercent: percent, PeakPercent: percent,
		ReleaseEligible: true, LastUpdated: &stamp}
	inc.status.State.Current = string(state)
	c.s.incarnations = append([]*incarnation{inc}, c.s.incarnations...)
	c.builds[tag] = inc
	for i := range c.s.observation {
		c.s.observation[i].Tags[tag] = release.Replicas{Desired: 5, Available: 5}
	}
	return inc
}

// addCanary adds build tag in state, at 0 %, which canaries at 10 % for
// ttl seconds, judged by an SLO.
func (c *controlled) addCanary(tag string, state release.State, ttl int64) *incarnation {
	inc := c.add(tag, state, 0)
	inc.target.Canary = picchuv1alpha1.Canary{Percent: 10, TTL: ttl}
	inc.target.ServiceLevelObjectives = []picchuv1alpha1.ServiceLevelObjective{{Name: "availability"}}
	return inc
}

// ask sets a control annotation of a build's Revision, as alice ("" removes it).
func (c *controlled) ask(tag, key, value string) {
	rev := c.builds[tag].revision
	if value == "" {
		delete(rev.Annotations, key)
	} else {
		rev.Annotations[key] = value
	}
	rev.Annotations[picchuv1alpha1.AnnotationControlBy] = "alice"
	c.builds[tag].control = controlOf(rev)
}

// run decides and reports once, d after the run before, and returns each
// build's state and weight, as "v2 releasing 25".
func (c *controlled) run(d time.Duration) string {
	c.t.Helper()
	s := c.s
	s.now = s.now.Add(d)
	for _, inc := range s.incarnations {
		inc.decision = decision{}
	}
	cal, err := schedule.New(false)
	if err != nil {
		c.t.Fatal(err)
	}
	s.decide(release.DefaultTimeouts, cal)
	out := report(s, settle(s, acted{results: applier.Results{{Cluster: "east"}, {Cluster: "west"}}}), time.Minute, 20*time.Second)
	var got []string
	for _, st := range out.status.Revisions {
		c.builds[st.Tag].status = st
		got = append(got, fmt.Sprintf("%s %s %d", st.Tag, st.State.Current, st.CurrentPercent))
	}
	c.events = nil
	for _, a := range out.controls {
		c.events = append(c.events, a.reason+": "+a.note)
	}
	for _, e := range out.events {
		if e.reason == "RollbackIgnored" {
			c.events = append(c.events, e.reason+": "+e.note)
		}
	}
	return strings.Join(got, ", ")
}

// expect runs and checks the run's builds, and the controls acted on
// when wantEvents is not nil.
func (c *controlled) expect(d time.Duration, want string, wantEvents ...string) {
	c.t.Helper()
	if got := c.run(d); got != want {
		c.t.Fatalf("at %s: %s, want %s", c.s.now.Format(time.TimeOnly), got, want)
	}
	if wantEvents != nil && !slices.Equal(c.events, wantEvents) {
		c.t.Fatalf("at %s: controls %q, want %q", c.s.now.Format(time.TimeOnly), c.events, wantEvents)
	}
}

const step = 10 * time.Second

// TestControl_PauseHoldsAndResumeGoesOn: paused at 25 %, v2 holds past
// many step delays; resumed, it takes its next step at once (it is long
// due) and goes on at its pace.
func TestControl_PauseHoldsAndResumeGoesOn(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	c.add("v2", release.Releasing, 0)
	c.expect(0, "v2 releasing 25, v1 released 75")
	c.ask("v2", picchuv1alpha1.AnnotationPause, "now")
	c.expect(step, "v2 releasing 25, v1 released 75", "Paused: v2 paused at 25% in production by alice")
	for range 5 {
		c.expect(step, "v2 releasing 25, v1 released 75", []string{}...)
	}
	if c.builds["v2"].status.Paused == nil {
		t.Fatal("status.paused not recorded")
	}
	c.ask("v2", picchuv1alpha1.AnnotationPause, "")
	c.expect(step, "v2 releasing 50, v1 released 50", "Resumed: v2 resumed at 25% in production by alice")
	// Its last step releases it, and v1 leaves and is retired, in the
	// same run.
	c.expect(step, "v2 released 100, v1 retired 0")
}

// TestControl_PauseStopsTheCanarysTimer: a canary of a minute paused for
// ten passes a minute after it started, not counting the pause.
func TestControl_PauseStopsTheCanarysTimer(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	c.addCanary("v2", release.Deployed, 60)
	c.expect(0, "v2 canarying 10, v1 released 90")
	c.expect(30*time.Second, "v2 canarying 10, v1 released 90")
	c.ask("v2", picchuv1alpha1.AnnotationPause, "now")
	c.expect(0, "v2 canarying 10, v1 released 90")
	c.expect(10*time.Minute, "v2 canarying 10, v1 released 90")
	c.ask("v2", picchuv1alpha1.AnnotationPause, "")
	c.expect(0, "v2 canarying 10, v1 released 90", "Resumed: v2 resumed at 10% in production by alice")
	c.expect(29*time.Second, "v2 canarying 10, v1 released 90")
	// Its canary over, it passes and, its schedule open, is released at once.
	c.expect(time.Second, "v2 releasing 25, v1 released 75")
}

// TestControl_ResumedAsItsCanaryStarts: a build paused before its canary
// and resumed in the run its canary starts canaries its time from then
// (its start was recorded as no time at all, and its canary never ended).
func TestControl_ResumedAsItsCanaryStarts(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	c.addCanary("v2", release.Deploying, 60)
	c.ask("v2", picchuv1alpha1.AnnotationPause, "now")
	c.expect(0, "v2 deployed 0, v1 released 100", "Paused: v2 paused at 0% in production by alice")
	c.ask("v2", picchuv1alpha1.AnnotationPause, "")
	c.expect(step, "v2 canarying 10, v1 released 90", "Resumed: v2 resumed at 0% in production by alice")
	if start := c.builds["v2"].status.CanaryStartTimestamp; start == nil || !start.Equal(c.s.now) {
		t.Fatalf("canary started at %v, want %s", start, c.s.now)
	}
	c.expect(59*time.Second, "v2 canarying 10, v1 released 90")
	c.expect(time.Second, "v2 releasing 25, v1 released 75")
}

// TestControl_Promote: a promotion ends the canary at once and is acted on
// once; a full one then takes v2 to 100 % in one step.
func TestControl_Promote(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	v2 := c.addCanary("v2", release.Deployed, 600)
	c.expect(0, "v2 canarying 10, v1 released 90")
	req := picchuv1alpha1.PromoteRequest(false, c.s.now)
	c.ask("v2", picchuv1alpha1.AnnotationPromote, req)
	// It passes its canary and, its schedule open, is released in the same run.
	c.expect(0, "v2 releasing 25, v1 released 75", "Promoted: v2 promoted (next) from canarying in production by alice")
	if v2.status.Promoted != req {
		t.Fatalf("status.promoted %q, want %q", v2.status.Promoted, req)
	}
	c.expect(0, "v2 releasing 25, v1 released 75", []string{}...)
	c.ask("v2", picchuv1alpha1.AnnotationPromote, picchuv1alpha1.PromoteRequest(true, c.s.now))
	c.expect(time.Second, "v2 released 100, v1 retired 0", "Promoted: v2 promoted (full) from releasing in production by alice")
	c.expect(0, "v2 released 100, v1 retired 0", []string{}...)
}

// TestControl_RollbackToAnEarlierBuild: with v3 released and v1, v2
// retired, a rollback to v1 brings it back and released, ramping straight
// to 100 %, while v3 and v2 retire; a v4 applied after the request is
// released as usual.
func TestControl_RollbackToAnEarlierBuild(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Retired, 0).status.PeakPercent = 100
	c.add("v2", release.Retired, 0).status.PeakPercent = 100
	c.add("v3", release.Released, 100)
	c.builds["v1"].status.ReleaseEligible, c.builds["v2"].status.ReleaseEligible = false, false
	c.ask("v1", picchuv1alpha1.AnnotationRollback, picchuv1alpha1.RollbackRequest(c.s.now))
	c.expect(0, "v3 retiring 100, v2 retired 0, v1 retired 0", "RolledBackTo: v1 brought back: the app is rolled back to it in production by alice")
	if v1 := c.builds["v1"].status; !v1.ReleaseEligible || v1.PeakPercent != 100 || v1.RolledBack == "" {
		t.Fatalf("v1 eligible %t, peak %d, rolledBack %q; want brought back", v1.ReleaseEligible, v1.PeakPercent, v1.RolledBack)
	}
	c.expect(0, "v3 retiring 100, v2 retired 0, v1 deploying 0", []string{}...)
	c.expect(0, "v3 retiring 100, v2 retired 0, v1 deployed 0")
	c.expect(0, "v3 retiring 100, v2 retired 0, v1 pendingrelease 0")
	c.expect(0, "v3 retiring 0, v2 retired 0, v1 releasing 100")
	c.expect(0, "v3 retired 0, v2 retired 0, v1 released 100")
	v4 := c.add("v4", release.Created, 0)
	v4.revision.CreationTimestamp = metav1.NewTime(c.s.now.Add(time.Second))
	c.expect(0, "v4 deploying 0, v3 retired 0, v2 retired 0, v1 released 100")
	if !c.builds["v4"].status.ReleaseEligible || c.builds["v3"].status.ReleaseEligible {
		t.Fatalf("v4 eligible %t, v3 eligible %t; want v4 only", c.builds["v4"].status.ReleaseEligible, c.builds["v3"].status.ReleaseEligible)
	}
}

// TestControl_RollbackFromASlowClock: v2, released, is bad; a person on a
// laptop whose clock is 10 minutes slow rolls back to v1, writing a time
// before v2 was created. Received by the webhook, which stamps when, the
// request rolls v2 back. Without the stamp (no webhook), it is ignored,
// said so in status and in an event, and nothing claims it rolled back.
func TestControl_RollbackFromASlowClock(t *testing.T) {
	for _, stamped := range []bool{true, false} {
		t.Run(fmt.Sprintf("stamped %t", stamped), func(t *testing.T) {
			c := newControlled(t)
			c.add("v1", release.Retired, 0).status.PeakPercent = 100
			v2 := c.add("v2", release.Released, 100)
			c.builds["v1"].status.ReleaseEligible = false
			slow := v2.revision.CreationTimestamp.Add(-10 * time.Minute)
			if stamped {
				c.builds["v1"].revision.Annotations[picchuv1alpha1.AnnotationRollbackAt] = picchuv1alpha1.RollbackRequest(c.s.now)
			}
			c.ask("v1", picchuv1alpha1.AnnotationRollback, picchuv1alpha1.RollbackRequest(slow))
			if stamped {
				c.expect(0, "v2 retiring 100, v1 retired 0", "RolledBackTo: v1 brought back: the app is rolled back to it in production by alice")
				if v2 := c.builds["v2"].status; v2.ReleaseEligible {
					t.Fatalf("v2 still eligible after the rollback")
				}
				c.expect(0, "v2 retiring 100, v1 deploying 0", []string{}...)
				return
			}
			c.expect(0, "v2 released 100, v1 retired 0",
				"RollbackIgnored: the rollback to v1 requested by alice is ignored in production: no newer build was created before its time, "+
					"2026-11-25T08:51:00Z (written by the client's clock): it would roll nothing back")
			ignored := c.builds["v1"].status.IgnoredRollback
			if ignored == nil || ignored.Request != picchuv1alpha1.RollbackRequest(slow) || !strings.Contains(ignored.Reason, "roll nothing back") {
				t.Fatalf("status.revisions[v1].ignoredRollback = %+v; want the request and why", ignored)
			}
			if v1 := c.builds["v1"].status; v1.RolledBack != "" || v1.ReleaseEligible {
				t.Fatalf("v1 rolledBack %q, eligible %t; want neither", v1.RolledBack, v1.ReleaseEligible)
			}
			c.expect(time.Hour, "v2 released 100, v1 retired 0", []string{}...)
		})
	}
}

// TestControl_RollbackAYearAheadHoldsBackNoBuild: a rollback to v1 written
// a year ahead (a hand-written time, without the webhook, which refuses it)
// is ignored: it takes v2 out of release no more than v3, applied after it,
// which is released as usual; it stays ignored a year later.
func TestControl_RollbackAYearAheadHoldsBackNoBuild(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Retired, 0).status.PeakPercent = 100
	c.add("v2", release.Released, 100)
	c.builds["v1"].status.ReleaseEligible = false
	ahead := c.s.now.Add(365 * 24 * time.Hour)
	c.ask("v1", picchuv1alpha1.AnnotationRollback, picchuv1alpha1.RollbackRequest(ahead))
	c.expect(0, "v2 released 100, v1 retired 0",
		"RollbackIgnored: the rollback to v1 requested by alice is ignored in production: its time, 2027-11-25T10:00:00Z (written by the client's clock), "+
			"is 8760h0m0s ahead of Picchu's clock: it would hold back every build created until then")
	v3 := c.add("v3", release.Created, 0)
	v3.revision.CreationTimestamp = metav1.NewTime(c.s.now.Add(time.Second))
	c.expect(time.Second, "v3 deploying 0, v2 released 100, v1 retired 0", []string{}...)
	if !c.builds["v3"].status.ReleaseEligible {
		t.Fatal("v3, applied after the request, is not eligible")
	}
	c.s.now = ahead.Add(time.Hour)
	c.run(0)
	if len(c.events) > 0 {
		t.Fatalf("a year later: %q", c.events)
	}
	if !c.builds["v3"].status.ReleaseEligible || !c.builds["v2"].status.ReleaseEligible || c.builds["v1"].status.IgnoredRollback == nil {
		t.Fatal("a year later, the ignored request took a build out of release")
	}
}

// TestControl_AbortAndRetry: v2 aborted mid-ramp is rolled back; retried,
// the alerts that failed it are cleared (kept in its retries) and it is
// released again from the start.
func TestControl_AbortAndRetry(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	v2 := c.add("v2", release.Releasing, 0)
	c.expect(0, "v2 releasing 25, v1 released 75")
	v2.revision.Spec.Failed = true
	c.ask("v2", picchuv1alpha1.AnnotationFailedReason, "aborted: bad config")
	c.expect(0, "v2 failing 25, v1 released 75", "Aborted: v2 aborted (aborted: bad config) in production by alice")
	v2.status.TriggeredAlerts = []string{"shop_availability"}
	c.expect(step, "v2 failing 0, v1 released 100")
	c.expect(0, "v2 failed 0, v1 released 100")
	v2.revision.Spec.Failed = false
	c.ask("v2", picchuv1alpha1.AnnotationFailedReason, "")
	c.expect(0, "v2 deploying 0, v1 released 100", "Retried: v2 retried after it failed in production by alice")
	if len(v2.status.TriggeredAlerts) != 0 || v2.status.PeakPercent != 0 || len(v2.status.Retries) != 1 ||
		!slices.Equal(v2.status.Retries[0].TriggeredAlerts, []string{"shop_availability"}) || v2.status.Retries[0].PeakPercent != 25 {
		t.Fatalf("after retry: alerts %v, peak %d, retries %+v; want cleared and kept in retries", v2.status.TriggeredAlerts, v2.status.PeakPercent, v2.status.Retries)
	}
	c.expect(0, "v2 deployed 0, v1 released 100")
	c.expect(0, "v2 pendingrelease 0, v1 released 100")
	c.expect(0, "v2 releasing 25, v1 released 75")
}

// TestControl_AFailedBuildKeepsWhereItFailed: v2, failed by a comparison
// that named west, keeps west's entry, with the alert and the verdict,
// once rolled back to 0 % everywhere, where east's entry goes; retried,
// west's judgment is cleared with the build's own alerts.
func TestControl_AFailedBuildKeepsWhereItFailed(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	v2 := c.add("v2", release.Releasing, 0)
	c.expect(0, "v2 releasing 25, v1 released 75")
	const verdict = "worse than v1: 40.0 % errors (20 of 51) against 0.0 % (0 of 945)"
	// What the judgment recorded when the comparison failed it on west.
	v2.status.TriggeredAlerts = []string{"availability_baseline"}
	for i := range v2.status.Clusters {
		if e := &v2.status.Clusters[i]; e.Name == "west" {
			e.TriggeredAlerts, e.Verdict = []string{"availability_baseline"}, verdict
		}
	}
	v2.revision.Spec.Failed = true
	v2.revision.Annotations[picchuv1alpha1.AnnotationFailedAt] = c.s.now.Format(time.RFC3339)
	c.expect(0, "v2 failing 25, v1 released 75")
	c.expect(step, "v2 failing 0, v1 released 100")
	c.expect(0, "v2 failed 0, v1 released 100")
	c.expect(step, "v2 failed 0, v1 released 100")
	if got := v2.status.Clusters; len(got) != 1 || got[0].Name != "west" || got[0].Percent != 0 ||
		!slices.Equal(got[0].TriggeredAlerts, []string{"availability_baseline"}) || got[0].Verdict != verdict {
		t.Fatalf("v2 rolled back records clusters %+v, want west alone at 0 %% with its alert and verdict", got)
	}

	v2.revision.Spec.Failed = false
	c.ask("v2", picchuv1alpha1.AnnotationFailedReason, "")
	c.expect(0, "v2 deploying 0, v1 released 100")
	for _, e := range v2.status.Clusters {
		if len(e.TriggeredAlerts) > 0 || e.Verdict != "" {
			t.Errorf("retried v2 still records %s: alerts %v, verdict %q", e.Name, e.TriggeredAlerts, e.Verdict)
		}
	}
}

// TestWeights_ASecondBuildDuringTheFirstBuildsCanary: an app's first
// build serves everything while it canaries; a second build applied then
// takes its canary percent alone, not the 90 % the first build's canary
// leaves, and its peak counts only that; the first keeps the rest.
func TestWeights_ASecondBuildDuringTheFirstBuildsCanary(t *testing.T) {
	c := newControlled(t)
	c.addCanary("v1", release.Deployed, 60)
	c.expect(0, "v1 canarying 100")
	if peak := c.builds["v1"].status.PeakPercent; peak != 10 {
		t.Errorf("v1 serves all while it canaries and peaks at %d %%, want its canary's 10 %%", peak)
	}
	c.addCanary("v2", release.Deployed, 120)
	c.expect(10*time.Second, "v2 canarying 10, v1 canarying 90")
	c.expect(10*time.Second, "v2 canarying 10, v1 canarying 90")
	if peak := c.builds["v2"].status.PeakPercent; peak != 10 {
		t.Errorf("v2 peaks at %d %% in its canary, want 10 %%", peak)
	}
	// v1's canary ends: it is released, serving everything but v2's
	// canary, and a run later, v2's canary over, v2 ramps from it.
	c.expect(40*time.Second, "v2 canarying 10, v1 releasing 90")
	// Its ramp's next step, a delay later, is its max: with nothing but
	// v2's canary beside it, it is released.
	c.expect(10*time.Second, "v2 canarying 10, v1 released 90")
	c.expect(70*time.Second, "v2 releasing 25, v1 released 75")
}

// TestRollback_PacedOrImmediate: v2, failed at 50 %, gives its traffic
// back at the pace of v1's ramp by default (one step, after v1's delay),
// and in one step at once with release.rollback: immediate.
func TestRollback_PacedOrImmediate(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mode        picchuv1alpha1.RollbackMode
		after, then string
	}{
		{"paced", "", "v2 failing 50, v1 released 50", "v2 failing 0, v1 released 100"},
		{"immediate", picchuv1alpha1.RollbackImmediate, "v2 failing 0, v1 released 100", "v2 failed 0, v1 released 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newControlled(t)
			c.add("v1", release.Released, 100)
			v2 := c.add("v2", release.Releasing, 0)
			v2.target.Release.Rollback = tc.mode
			c.expect(0, "v2 releasing 25, v1 released 75")
			c.expect(step, "v2 releasing 50, v1 released 50")
			v2.revision.Spec.Failed = true
			// The run that fails it: v1's step comes a delay after its
			// last, unless the rollback is immediate.
			c.expect(time.Second, tc.after)
			c.expect(step, tc.then)
		})
	}
}

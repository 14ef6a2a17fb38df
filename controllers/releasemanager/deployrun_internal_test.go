package releasemanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/plan"
	"github.com/medium/picchu/plan/applier"
)

// runWith decides and reports once, from the verdicts judged before it,
// the clusters answering as results say, and returns each build's state and weight, as "v2 releasing 25".
func (c *controlled) runWith(results applier.Results) string {
	c.t.Helper()
	cal, err := schedule.New(false)
	if err != nil {
		c.t.Fatal(err)
	}
	s := c.s
	s.decide(release.DefaultTimeouts, cal)
	out := report(s, settle(s, acted{results: results}), time.Minute, 20*time.Second)
	var got []string
	for _, st := range out.status.Revisions {
		c.builds[st.Tag].status = st
		got = append(got, fmt.Sprintf("%s %s %d", st.Tag, st.State.Current, st.CurrentPercent))
	}
	return strings.Join(got, ", ")
}

// TestDeploy_FinishedGoesOnInTheSameRunOnlyWhereEveryLiveClusterTookIt: the
// run that sees a build deployed takes it to its first step when every
// live cluster takes the run and its alerts, if any, were checked in it;
// when a live cluster does not take the run, or not the build's objects,
// the build stays deploying and its step's weight does not count.
func TestDeploy_FinishedGoesOnInTheSameRunOnlyWhereEveryLiveClusterTookIt(t *testing.T) {
	cal, err := schedule.New(false)
	if err != nil {
		t.Fatal(err)
	}
	both := applier.Results{{Cluster: "east"}, {Cluster: "west"}}
	quiet := &Reconciler{Prometheus: staticSource{}, Timeouts: release.DefaultTimeouts, Calendar: cal}
	for _, tc := range []struct {
		name    string
		slo     bool
		judge   bool
		results applier.Results
		want    string
	}{
		{"every live cluster took the run", false, true, both, "v2 releasing 25, v1 released 75"},
		{"west refused the run", false, true, applier.Results{{Cluster: "east"}, {Cluster: "west", Err: errors.New("refused")}},
			"v2 deploying 0, v1 released 100"},
		{"west took the routes but not v2's objects", false, true, applier.Results{{Cluster: "east"},
			{Cluster: "west", Err: &plan.Errors{Builds: map[string]error{"v2": errors.New("its ConfigMap refused")}}}},
			// v1's weight is what every live cluster routes; v2's step is
			// not counted while it is not recorded past deploying.
			"v2 deploying 0, v1 released 75"},
		{"its SLO alerts checked in the run, quiet", true, true, both, "v2 releasing 25, v1 released 75"},
		{"its SLO alerts not checked in the run: deployed, and no further", true, false, both, "v2 deployed 0, v1 released 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newControlled(t)
			c.add("v1", release.Released, 100)
			v2 := c.add("v2", release.Deploying, 0)
			if tc.slo {
				v2.target.ServiceLevelObjectives = []picchuv1alpha1.ServiceLevelObjective{{Name: "availability", Enabled: true}}
			}
			quiet.markUnjudgeable(c.s)
			if tc.judge {
				quiet.judge(context.Background(), c.s)
			}
			if got := c.runWith(tc.results); got != tc.want {
				t.Fatalf("%s, want %s", got, tc.want)
			}
		})
	}
}

// TestDeploy_JudgedOnlyWhenItGoesOnToAJudgedState: a build whose deploy
// finishes has its alerts checked in that run when the run takes it on to
// a judged state, and not when it stays deployed (not eligible, or an
// external test to run first): there it is judged once it enters one, as
// before.
func TestDeploy_JudgedOnlyWhenItGoesOnToAJudgedState(t *testing.T) {
	cal, err := schedule.New(false)
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Prometheus: staticSource{"availability"}, Timeouts: release.DefaultTimeouts, Calendar: cal}
	for _, tc := range []struct {
		name   string
		change func(*picchuv1alpha1.RevisionTarget)
		want   release.Verdict
	}{
		{"eligible: on to its release, judged", func(*picchuv1alpha1.RevisionTarget) {}, release.Firing},
		{"not eligible: stays deployed, not judged", func(t *picchuv1alpha1.RevisionTarget) { t.Release.Eligible = false }, release.Unjudged},
		{"an external test first: not judged", func(t *picchuv1alpha1.RevisionTarget) { t.ExternalTest.Enabled = true }, release.Unjudged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newControlled(t)
			c.add("v1", release.Released, 100)
			v2 := c.add("v2", release.Deploying, 0)
			v2.target.ServiceLevelObjectives = []picchuv1alpha1.ServiceLevelObjective{{Name: "availability", Enabled: true}}
			tc.change(v2.target)
			r.judge(context.Background(), c.s)
			if v2.verdict != tc.want {
				t.Fatalf("verdict %s, want %s", v2.verdict, tc.want)
			}
		})
	}
}

package releasemanager

import (
	"fmt"
	"testing"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/integrations/slack"
)

func TestNoticeKind(t *testing.T) {
	for _, tc := range []struct {
		from, to release.State
		peak     int32
		want     slack.Kind // empty: nothing to tell
	}{
		{release.Deployed, release.Canarying, 0, slack.Started},
		{release.Canarying, release.Canaried, 10, slack.CanaryPassed},
		{release.PendingRelease, release.Releasing, 10, slack.Ramping},
		{release.Canaried, release.Releasing, 10, slack.Ramping},
		{release.Releasing, release.Released, 100, slack.Released},
		{release.Releasing, release.Failing, 40, slack.Failed},
		{release.Deploying, release.Failing, 0, slack.Failed},
		{release.Failing, release.Failed, 40, slack.RolledBack},
		{release.Failing, release.Failed, 0, ""},
		{release.Created, release.Deploying, 0, ""},
		{release.Deploying, release.Deployed, 0, ""},
		{release.Released, release.Retiring, 100, ""},
		{release.Retiring, release.Retired, 100, ""},
	} {
		t.Run(fmt.Sprintf("%s→%s", tc.from, tc.to), func(t *testing.T) {
			got, ok := noticeKind(tc.from, tc.to, tc.peak)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("noticeKind = %q, %t; want %q", got, ok, tc.want)
			}
		})
	}
}

// TestNotices: a run's transitions become notices to the app's channel
// (its alerts' channel label), a failure naming its alerts and reason,
// a recommissioned build is told too, and a person's pause names who.
func TestNotices(t *testing.T) {
	v3 := build("v3", release.Releasing, 40, release.Step{State: release.Failing}, 40)
	v3.revision.Annotations = map[string]string{picchuv1alpha1.AnnotationFailedReason: "alerts firing"}
	v3.target.ServiceLevelObjectives = []picchuv1alpha1.ServiceLevelObjective{{Name: "availability", ServiceLevelObjectiveLabels: picchuv1alpha1.ServiceLevelObjectiveLabels{
		AlertLabels: map[string]string{"channel": "#shop-alerts"}}}}
	v1 := build("v1", release.Retired, 0, release.Step{State: release.Retired}, 0)
	v1.recommissioned = true
	v2 := build("v2", release.Releasing, 20, release.Step{State: release.Releasing}, 20)
	v2.control.by = "alice"
	s := reportSnapshot(v3, v2, v1)
	statuses := []picchuv1alpha1.ReleaseManagerRevisionStatus{{Tag: "v3", TriggeredAlerts: []string{"shop_availability"}}}
	controls := []controlAction{{inc: v2, action: "pause"}, {inc: v2, action: "abort"}}
	got := notices(s, []transition{{inc: v3, index: 0, state: release.Failing}}, controls, statuses)
	want := []slack.Notice{
		{App: "shop", Target: "production", Tag: "v3", Kind: slack.Failed, Channel: "#shop-alerts", Alerts: []string{"shop_availability"}, Reason: "alerts firing"},
		{App: "shop", Target: "production", Tag: "v1", Kind: slack.Recommissioned},
		{App: "shop", Target: "production", Tag: "v2", Kind: slack.Paused, By: "alice"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("notices %+v, want %+v", got, want)
	}
}

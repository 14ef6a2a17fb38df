package silencer

import (
	"context"
	"slices"
	"testing"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/silence"
	"github.com/medium/picchu/integrations/alertmanager"
	"github.com/medium/picchu/test/kit"
)

// TestSync_TwoInstancesShareOneAlertmanager runs two Picchu instances, a
// and b, that each drive an app "shop" in a target "production" of
// namespace "picchu" (two delivery clusters with the same names), against
// one real Alertmanager that also holds a silence an older Picchu left
// (its marker names no instance). a adopts the older silence, rewriting
// it scoped to the app; each instance creates, renews and expires only
// its own silences, bounded in length, and never changes the other's.
func TestSync_TwoInstancesShareOneAlertmanager(t *testing.T) {
	ctx := context.Background()
	am := kit.StartAlertmanager(ctx, t)
	c, err := alertmanager.New(alertmanager.Config{Address: am.URL()})
	if err != nil {
		t.Fatal(err)
	}
	const maxLength = 30 * time.Minute
	start := time.Now().Truncate(time.Second)
	now := start
	clock := func() time.Time { return now }
	a := &Reconciler{Alertmanager: c, Instance: "a", MaxLength: maxLength, Now: clock}
	b := &Reconciler{Alertmanager: c, Instance: "b", MaxLength: maxLength, Now: clock}
	recA := &record{namespace: "picchu", app: "shop", target: "production"}
	recB := &record{namespace: "picchu", app: "shop", target: "production"}
	latency := picchuv1alpha1.ReleaseSilence{Matchers: []picchuv1alpha1.SilenceMatcher{{Name: "alertname", Value: "HighLatency"}}}
	input := func(r *Reconciler, state release.State) silence.Input {
		in := r.newInput("picchu", "shop", "production")
		in.Builds = []silence.Build{{Tag: "v2", State: state, Percent: 20, Remaining: time.Hour, Silences: []picchuv1alpha1.ReleaseSilence{latency}}}
		return in
	}
	sync := func(r *Reconciler, rec *record, state release.State) {
		t.Helper()
		if _, err := r.sync(ctx, rec, input(r, state), true); err != nil {
			t.Fatalf("instance %s, v2 %s: %v\n%s", r.Instance, state, err, am.LogTail())
		}
	}
	// byInstance lists the silences of the app's v2 per instance ("" for
	// none), and checks every live one Picchu wrote.
	byInstance := func() map[string][]alertmanager.Silence {
		t.Helper()
		all, err := c.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]alertmanager.Silence{}
		for _, s := range all {
			k, instance, ok := silence.ParseMarker(s.Comment)
			if !ok || k.Tag != "v2" {
				continue
			}
			out[instance] = append(out[instance], s)
		}
		return out
	}
	active := func(ss []alertmanager.Silence) []alertmanager.Silence {
		return slices.DeleteFunc(slices.Clone(ss), alertmanager.Silence.Expired)
	}
	scope := alertmanager.Matcher{Name: "namespace", Value: "shop-production", IsEqual: true}
	checkWritten := func(s alertmanager.Silence, instance string) {
		t.Helper()
		if !slices.Contains(s.Matchers, scope) {
			t.Errorf("instance %s's silence %s: matchers %+v lack %+v", instance, s.ID, s.Matchers, scope)
		}
		if s.EndsAt.After(now.Add(maxLength)) {
			t.Errorf("instance %s's silence %s ends %s after now, beyond the bound %s", instance, s.ID, s.EndsAt.Sub(now), maxLength)
		}
	}

	// An older Picchu's silence of v2, unscoped and ending in a day.
	older := alertmanager.Silence{
		Matchers: []alertmanager.Matcher{{Name: "alertname", Value: "HighLatency", IsEqual: true}, {Name: "slo", Value: "true"}, {Name: "canary", Value: "true"}},
		StartsAt: now, EndsAt: now.Add(24 * time.Hour), CreatedBy: silence.CreatedBy,
		Comment: "shop v2 is being released in production [picchu silence picchu/shop/production/v2/0]",
	}
	olderID, err := c.Post(ctx, older)
	if err != nil {
		t.Fatal(err)
	}

	sync(a, recA, release.Releasing)
	got := byInstance()
	if len(active(got[""])) != 0 || len(active(got["a"])) != 1 {
		t.Fatalf("after a's run: %+v; want the older silence (%s) replaced by one of a's", got, olderID)
	}
	heldA := active(got["a"])[0]
	checkWritten(heldA, "a")

	sync(b, recB, release.Releasing)
	got = byInstance()
	if len(active(got["b"])) != 1 || len(active(got["a"])) != 1 || active(got["a"])[0].ID != heldA.ID || !active(got["a"])[0].EndsAt.Equal(heldA.EndsAt) {
		t.Fatalf("after b's run: %+v; want one silence of b's beside a's %s, unchanged", got, heldA.ID)
	}
	heldB := active(got["b"])[0]
	checkWritten(heldB, "b")

	// Two thirds of the bound later, a renews its silence: in place, to
	// the bound; b's is not touched.
	now = start.Add(20 * time.Minute)
	sync(a, recA, release.Releasing)
	got = byInstance()
	renewed := active(got["a"])
	if len(renewed) != 1 || !renewed[0].EndsAt.Equal(now.Add(maxLength)) {
		t.Fatalf("a's silences %+v; want one renewed to end %s from now", renewed, maxLength)
	}
	checkWritten(renewed[0], "a")
	if bs := active(got["b"]); len(bs) != 1 || bs[0].ID != heldB.ID || !bs[0].EndsAt.Equal(heldB.EndsAt) {
		t.Errorf("b's silences after a renewed its own: %+v; want %s unchanged", bs, heldB.ID)
	}

	// b's release ends: b expires its own silence only.
	sync(b, recB, release.Released)
	got = byInstance()
	if len(active(got["b"])) != 0 || len(active(got["a"])) != 1 {
		t.Fatalf("after b's release ended: %+v; want b's expired and a's active", got)
	}
	sync(a, recA, release.Released)
	if got = byInstance(); len(active(got["a"])) != 0 {
		t.Errorf("after a's release ended: %+v; want a's expired", got)
	}
}

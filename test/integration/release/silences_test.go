package release_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/silence"
	"github.com/medium/picchu/integrations/alertmanager"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/kit"
)

// expiryBound is how long after its release ends a build's silence must
// be expired: the operator hears the ReleaseManager's change and expires it
// at once.
const expiryBound = 10 * time.Second

// TestSilences_HeldWhileReleasingExpiredWhenTheReleaseEnds runs the
// operator, as Picchu instance "east" with --max-silence at its least
// (10 min), with a real Alertmanager that instance "west" shares, while app
// "hushed" releases v1 (no silences), then v2 and v3, whose target asks to
// silence HighLatency during their release: v2's silence is active in
// Alertmanager while it ramps, scoped to the app's namespace, with
// Picchu's SLO and canary alerts excluded, ending no more than the bound
// ahead, and expired soon after it is released; v3's, failed mid-ramp,
// soon after it fails. West's silence of the same app, target and builds
// is never touched.
func TestSilences_HeldWhileReleasingExpiredWhenTheReleaseEnds(t *testing.T) {
	ctx := context.Background()
	am := kit.StartAlertmanager(ctx, t)
	amc, err := alertmanager.New(alertmanager.Config{Address: am.URL(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const maxSilence = 2 * silence.DefaultMargin
	t.Cleanup(func() { running.Restart(t) })
	running.Restart(t, func(o *operator.Options) {
		o.AlertmanagerAddress, o.InstanceID, o.MaxSilence = am.URL(), "east", maxSilence
	})
	createdBefore, expiredBefore := silenceCount(t, "created"), silenceCount(t, "expired")

	const app = "hushed"
	west := westSilences(t, amc, app, "v2", "v3")
	create(t, build{app: app, tag: "v1", commit: 1, delay: time.Second})
	state(t, time.Minute, app, "v1", "released")
	if s := silencesOf(t, amc, app, "", "east"); len(s) > 0 {
		t.Fatalf("silences for v1, which asks for none: %+v", s)
	}

	createHushed(t, build{app: app, tag: "v2", commit: 2, delay: 2 * time.Second})
	held := activeSilence(t, amc, app, "v2")
	want := []alertmanager.Matcher{
		{Name: "alertname", Value: "HighLatency", IsEqual: true},
		{Name: "severity", Value: "page", IsEqual: true},
		{Name: "namespace", Value: app + "-production", IsEqual: true},
		{Name: "slo", Value: "true"},
		{Name: "canary", Value: "true"},
	}
	if !slices.Equal(held.Matchers, want) {
		t.Errorf("matchers %+v, want %+v", held.Matchers, want)
	}
	if !strings.HasPrefix(held.Comment, "pods warm up ") || held.CreatedBy != "picchu" {
		t.Errorf("comment %q by %q", held.Comment, held.CreatedBy)
	}
	if left := time.Until(held.EndsAt); left < silence.DefaultMargin {
		t.Errorf("the silence ends in %s, before the ramp and a margin", left)
	}
	// The ramp and two margins would take it beyond the bound.
	if length := held.EndsAt.Sub(held.StartsAt); length > maxSilence {
		t.Errorf("the silence lasts %s, beyond --max-silence %s", length, maxSilence)
	}
	if st := releaseState(t, app, "v2"); !strings.HasPrefix(st, "releasing") {
		t.Errorf("v2 %s when its silence was found; want releasing", st)
	}
	st := state(t, time.Minute, app, "v2", "released")
	gone := expired(t, amc, held.ID)
	if st.State.LastUpdated != nil {
		// Alertmanager ends a silence it expires at the time it does.
		t.Logf("v2's silence expired %s after v2 was released", gone.EndsAt.Sub(st.State.LastUpdated.Time).Round(time.Millisecond))
	}

	v3 := createHushed(t, build{app: app, tag: "v3", commit: 3, delay: 2 * time.Second})
	percentAtLeast(t, app, "v3", 10)
	held = activeSilence(t, amc, app, "v3")
	failed := time.Now()
	fail(t, v3)
	gone = expired(t, amc, held.ID)
	t.Logf("v3's silence expired %s after v3 was failed", gone.EndsAt.Sub(failed).Round(time.Millisecond))
	state(t, time.Minute, app, "v3", "failed")

	if n := silenceCount(t, "created") - createdBefore; n != 2 {
		t.Errorf("picchu_alert_silences_total{outcome=\"created\"} grew by %g, want 2", n)
	}
	if n := silenceCount(t, "expired") - expiredBefore; n != 2 {
		t.Errorf("picchu_alert_silences_total{outcome=\"expired\"} grew by %g, want 2", n)
	}
	if s := silencesOf(t, amc, app, "", "east"); len(s) != 2 {
		t.Errorf("silences of %s: %+v; want v2's and v3's, expired", app, s)
	}
	for _, w := range west {
		now := silenceByID(t, amc, w.ID)
		if now.Expired() || !now.EndsAt.Equal(w.EndsAt) || now.Comment != w.Comment || !slices.Equal(now.Matchers, w.Matchers) {
			t.Errorf("west's silence %s was %+v, is %+v; want it untouched", w.ID, w, now)
		}
	}
}

// westSilences creates, as instance "west" would, an active silence of
// HighLatency for each of app's builds tags in target production, and
// returns them as Alertmanager lists them.
func westSilences(t *testing.T, c *alertmanager.Client, app string, tags ...string) []alertmanager.Silence {
	t.Helper()
	var out []alertmanager.Silence
	for _, tag := range tags {
		k := silence.Key{Namespace: env.Namespace, App: app, Target: "production", Tag: tag}
		entry := picchuv1alpha1.ReleaseSilence{Matchers: []picchuv1alpha1.SilenceMatcher{{Name: "alertname", Value: "HighLatency"}}}
		s := alertmanager.Silence{StartsAt: time.Now(), EndsAt: time.Now().Add(time.Hour), CreatedBy: silence.CreatedBy, Comment: silence.Comment(k, "west", entry)}
		for _, m := range silence.Matchers(k, entry) {
			s.Matchers = append(s.Matchers, alertmanager.Matcher{Name: m.Name, Value: m.Value, IsRegex: m.IsRegex, IsEqual: m.IsEqual})
		}
		id, err := c.Post(context.Background(), s)
		if err != nil {
			t.Fatalf("creating west's silence of %s: %v", tag, err)
		}
		out = append(out, silenceByID(t, c, id))
	}
	return out
}

// silenceByID reads the silence id from Alertmanager.
func silenceByID(t *testing.T, c *alertmanager.Client, id string) alertmanager.Silence {
	t.Helper()
	all, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no silence %s in Alertmanager", id)
	return alertmanager.Silence{}
}

// createHushed creates b's Revision with a release silence of the
// HighLatency pages.
func createHushed(t *testing.T, b build) *picchuv1alpha1.Revision {
	t.Helper()
	rev := b.revision()
	rev.Spec.Targets[0].ReleaseSilences = []picchuv1alpha1.ReleaseSilence{{
		Matchers: []picchuv1alpha1.SilenceMatcher{{Name: "alertname", Value: "HighLatency"}, {Name: "severity", Value: "page"}},
		Comment:  "pods warm up",
	}}
	if err := env.Delivery.Client.Create(context.Background(), rev); err != nil {
		t.Fatalf("creating %s: %v", rev.Name, err)
	}
	return rev
}

// silencesOf lists the silences Picchu instance created for app's build
// tag (every build when tag is empty).
func silencesOf(t *testing.T, c *alertmanager.Client, app, tag, instance string) []alertmanager.Silence {
	t.Helper()
	all, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []alertmanager.Silence
	for _, s := range all {
		if k, marked, ok := silence.ParseMarker(s.Comment); ok && marked == instance && k.App == app && (tag == "" || k.Tag == tag) {
			out = append(out, s)
		}
	}
	return out
}

// activeSilence waits until Alertmanager holds one active silence of
// instance "east" for app's build tag, and returns it.
func activeSilence(t *testing.T, c *alertmanager.Client, app, tag string) alertmanager.Silence {
	t.Helper()
	var out alertmanager.Silence
	kit.Eventually(t, 30*time.Second, fmt.Sprintf("an active silence for %s %s", app, tag), func() error {
		var active []alertmanager.Silence
		for _, s := range silencesOf(t, c, app, tag, "east") {
			if s.Status != nil && s.Status.State == alertmanager.StateActive {
				active = append(active, s)
			}
		}
		if len(active) != 1 {
			return fmt.Errorf("%d active silences (%s)", len(active), releaseState(t, app, tag))
		}
		out = active[0]
		return nil
	})
	return out
}

// expired waits until silence id is expired in Alertmanager, and returns it.
func expired(t *testing.T, c *alertmanager.Client, id string) alertmanager.Silence {
	t.Helper()
	var out alertmanager.Silence
	kit.Eventually(t, expiryBound, "silence "+id+" expired", func() error {
		all, err := c.List(context.Background())
		if err != nil {
			return err
		}
		for _, s := range all {
			if s.ID == id {
				if !s.Expired() {
					return fmt.Errorf("%+v", s.Status)
				}
				out = s
				return nil
			}
		}
		return fmt.Errorf("no silence %s", id)
	})
	return out
}

// releaseState is the state of app's build tag, for messages.
func releaseState(t *testing.T, app, tag string) string {
	t.Helper()
	rm, err := releaseManager(context.Background(), app)
	if err != nil {
		return err.Error()
	}
	for _, st := range rm.Status.Revisions {
		if st.Tag == tag {
			return fmt.Sprintf("%s at %d%%", st.State.Current, st.CurrentPercent)
		}
	}
	return "no status"
}

// silenceCount is picchu_alert_silences_total for outcome.
func silenceCount(t *testing.T, outcome string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "picchu_alert_silences_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

package release_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/silence"
	"github.com/medium/picchu/integrations/alertmanager"
	"github.com/medium/picchu/integrations/prometheus"
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
// Alertmanager while it ramps, scoped to the app's namespace and the
// fleet's clusters (Alertmanager silences the app's page from each of them
// and from none, not from west's cluster), with Picchu's SLO and canary
// alerts excluded, ending no more than the bound
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
		eastFleet(t),
		{Name: "slo", Value: "true"},
		{Name: "canary", Value: "true"},
	}
	if !slices.Equal(held.Matchers, want) {
		t.Errorf("matchers %+v, want %+v", held.Matchers, want)
	}
	// The silence reaches the app's alerts from the fleet's clusters and
	// from none, never those of the same-named app west releases on its
	// own clusters through the same Alertmanager.
	for _, cluster := range append(eastClusters(t), "", westCluster) {
		silenced := cluster != westCluster
		if got := silencedBy(t, am.URL(), app, cluster); slices.Contains(got, held.ID) != silenced {
			t.Errorf("HighLatency of %s from cluster %q is silenced by %q; want v2's silence %s among them: %v", app, cluster, got, held.ID, silenced)
		}
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
		for _, m := range silence.Matchers(k, entry, silence.Fleet{Label: prometheus.DefaultClusterLabel, Values: []string{westCluster}}) {
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

// westCluster is the cluster of west's fleet, as its alerts name it.
const westCluster = "west-1"

// eastClusters are the values of the cluster label on the alerts of the
// clusters of east's fleet, production, sorted.
func eastClusters(t *testing.T) []string {
	t.Helper()
	clusters := &picchuv1alpha1.ClusterList{}
	if err := env.Delivery.Client.List(context.Background(), clusters, client.InNamespace(env.Namespace),
		client.MatchingLabels{picchuv1alpha1.LabelFleet: "production"}); err != nil {
		t.Fatal(err)
	}
	var values []string
	for i := range clusters.Items {
		values = append(values, clusters.Items[i].PrometheusClusterLabelValue())
	}
	if len(values) != len(env.Targets) {
		t.Fatalf("fleet production has clusters %q; want the %d targets", values, len(env.Targets))
	}
	slices.Sort(values)
	return values
}

// eastFleet is the matcher that keeps east's silences to its fleet's
// clusters, and to alerts of none.
func eastFleet(t *testing.T) alertmanager.Matcher {
	t.Helper()
	var quoted []string
	for _, v := range eastClusters(t) {
		quoted = append(quoted, regexp.QuoteMeta(v))
	}
	return alertmanager.Matcher{Name: prometheus.DefaultClusterLabel, Value: strings.Join(quoted, "|") + "|", IsRegex: true, IsEqual: true}
}

// silencedBy fires, in Alertmanager at url, HighLatency paging for app's
// namespace in production from cluster (none when empty), and returns the
// silences Alertmanager says silence it.
func silencedBy(t *testing.T, url, app, cluster string) []string {
	t.Helper()
	labels := map[string]string{"alertname": "HighLatency", "severity": "page", "namespace": app + "-production", "probe": "silenced-by-" + cluster}
	if cluster != "" {
		labels[prometheus.DefaultClusterLabel] = cluster
	}
	body, err := json.Marshal([]map[string]any{{"labels": labels, "startsAt": time.Now(), "endsAt": time.Now().Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("firing an alert: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("firing an alert: %s", resp.Status)
	}
	var by []string
	kit.Eventually(t, 10*time.Second, "Alertmanager holding the alert of cluster "+cluster, func() error {
		resp, err := http.Get(url + "/api/v2/alerts?filter=" + neturl.QueryEscape(`probe="`+labels["probe"]+`"`))
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		var alerts []struct {
			Status struct {
				SilencedBy []string `json:"silencedBy"`
			} `json:"status"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
			return fmt.Errorf("reading the alerts: %w", err)
		}
		if len(alerts) != 1 {
			return fmt.Errorf("%d alerts", len(alerts))
		}
		by = alerts[0].Status.SilencedBy
		return nil
	})
	return by
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

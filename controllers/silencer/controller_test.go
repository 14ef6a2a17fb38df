package silencer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/silence"
	"github.com/medium/picchu/integrations/alertmanager"
)

// fakeAlertmanager keeps silences in memory and logs every request.
type fakeAlertmanager struct {
	silences map[string]alertmanager.Silence
	requests []string
	next     int
	failPost error
}

func (f *fakeAlertmanager) List(context.Context, ...string) ([]alertmanager.Silence, error) {
	f.requests = append(f.requests, "list")
	var out []alertmanager.Silence
	for _, s := range f.silences {
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeAlertmanager) Post(_ context.Context, s alertmanager.Silence) (string, error) {
	f.requests = append(f.requests, "post "+s.ID)
	if f.failPost != nil {
		return "", f.failPost
	}
	if s.ID != "" {
		old := f.silences[s.ID]
		old.Status = &alertmanager.Status{State: alertmanager.StateExpired}
		f.silences[s.ID] = old
	}
	f.next++
	s.ID = fmt.Sprintf("s%d", f.next)
	s.Status = &alertmanager.Status{State: alertmanager.StateActive}
	f.silences[s.ID] = s
	return s.ID, nil
}

func (f *fakeAlertmanager) Expire(_ context.Context, id string) error {
	f.requests = append(f.requests, "expire "+id)
	s, ok := f.silences[id]
	if !ok {
		return alertmanager.ErrNotFound
	}
	s.Status = &alertmanager.Status{State: alertmanager.StateExpired}
	f.silences[id] = s
	return nil
}

// requests returns and clears the requests logged.
func (f *fakeAlertmanager) take() []string {
	out := f.requests
	f.requests = nil
	return out
}

// TestSync_AsksAlertmanagerOnlyWhenThereIsSomethingToDo follows one app
// through a release: Alertmanager is asked once at the start, then only
// when a silence is created or expired, never on the events between.
func TestSync_AsksAlertmanagerOnlyWhenThereIsSomethingToDo(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	am := &fakeAlertmanager{silences: map[string]alertmanager.Silence{
		"other": {ID: "other", CreatedBy: "someone", Comment: "maintenance", Status: &alertmanager.Status{State: alertmanager.StateActive}},
	}}
	r := &Reconciler{Alertmanager: am, Now: func() time.Time { return now }}
	rec := &record{namespace: "picchu", app: "shop", target: "production"}
	silences := []picchuv1alpha1.ReleaseSilence{{Matchers: []picchuv1alpha1.SilenceMatcher{{Name: "alertname", Value: "HighLatency"}}}}
	input := func(state release.State, percent int32) silence.Input {
		return silence.Input{Now: now, Namespace: "picchu", App: "shop", Target: "production", Builds: []silence.Build{
			{Tag: "v1", State: release.Released, Percent: 100 - percent, Silences: silences},
			{Tag: "v2", State: state, Percent: percent, Remaining: time.Minute, Silences: silences},
		}}
	}
	steps := []struct {
		what    string
		in      silence.Input
		want    []string
		requeue bool
	}{
		{"started, v2 deployed", input(release.Deployed, 0), []string{"list"}, false},
		{"v2 deployed again", input(release.Deployed, 0), nil, false},
		{"v2 ramps", input(release.Releasing, 10), []string{"list", "post "}, true},
		{"v2 steps up", input(release.Releasing, 20), nil, true},
		{"v2 steps up again", input(release.Releasing, 40), nil, true},
		{"v2 released", input(release.Released, 100), []string{"list", "expire s1"}, false},
		{"v2 released, later", input(release.Released, 100), nil, false},
	}
	for _, s := range steps {
		result, err := r.sync(ctx, rec, s.in, true)
		if err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := am.take(); !slices.Equal(got, s.want) {
			t.Errorf("%s: requests %q, want %q", s.what, got, s.want)
		}
		if (result.RequeueAfter > 0) != s.requeue {
			t.Errorf("%s: requeue after %s; want one only while a silence is held", s.what, result.RequeueAfter)
		}
	}
	created := am.silences["s1"]
	if created.CreatedBy != "picchu" || !strings.HasSuffix(created.Comment, "[picchu silence picchu/shop/production/v2/0]") {
		t.Errorf("created %+v", created)
	}
	if !created.Expired() || am.silences["other"].Expired() {
		t.Errorf("states: ours expired %v, the other's %v; want ours only", created.Expired(), am.silences["other"].Expired())
	}
}

// TestSync_NothingConfiguredAsksNothing: an app whose Revisions configure
// no silence, and that holds none, costs Alertmanager nothing.
func TestSync_NothingConfiguredAsksNothing(t *testing.T) {
	am := &fakeAlertmanager{silences: map[string]alertmanager.Silence{}}
	r := &Reconciler{Alertmanager: am}
	rec := &record{}
	now := time.Now()
	for _, state := range release.States() {
		in := silence.Input{Now: now, Namespace: "picchu", App: "shop", Target: "production",
			Builds: []silence.Build{{Tag: "v2", State: state, Percent: 50, Remaining: time.Minute}}}
		if _, err := r.sync(context.Background(), rec, in, false); err != nil {
			t.Fatal(err)
		}
	}
	if len(am.requests) > 0 {
		t.Errorf("requests %q, want none", am.requests)
	}
}

// TestSync_AFailureIsReturnedAndAlertmanagerAskedAgain: a silence that
// cannot be created is an error, and the next run lists the silences again
// before it tries again.
func TestSync_AFailureIsReturnedAndAlertmanagerAskedAgain(t *testing.T) {
	am := &fakeAlertmanager{silences: map[string]alertmanager.Silence{}, failPost: errors.New("503 Service Unavailable")}
	r := &Reconciler{Alertmanager: am}
	rec := &record{}
	in := silence.Input{Now: time.Now(), Namespace: "picchu", App: "shop", Target: "production", Builds: []silence.Build{{
		Tag: "v2", State: release.Releasing, Percent: 10, Remaining: time.Minute,
		Silences: []picchuv1alpha1.ReleaseSilence{{Matchers: []picchuv1alpha1.SilenceMatcher{{Name: "alertname", Value: "HighLatency"}}}},
	}}}
	if _, err := r.sync(context.Background(), rec, in, true); err == nil || !strings.Contains(err.Error(), "creating the silence of picchu/shop/production/v2/0: 503") {
		t.Fatalf("sync = %v; want the creation's failure", err)
	}
	am.failPost = nil
	am.take()
	if _, err := r.sync(context.Background(), rec, in, true); err != nil {
		t.Fatal(err)
	}
	if got, want := am.take(), []string{"list", "post "}; !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}
}

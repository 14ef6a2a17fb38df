package plugin

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// fleetOf is n apps in 10 namespaces, each releasing v2 in production at a
// percent that the store saw move in 5 steps.
func fleetOf(n int, now time.Time) (*store, []picchuv1alpha1.Revision, []picchuv1alpha1.ReleaseManager) {
	st := &store{weights: map[string][]weight{}, now: func() time.Time { return now }}
	var revs []picchuv1alpha1.Revision
	var rms []picchuv1alpha1.ReleaseManager
	for i := range n {
		ns, app := fmt.Sprintf("team-%d", i%10), fmt.Sprintf("app-%04d", i)
		for _, tag := range []string{"v1", "v2"} {
			rev := picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-" + tag}}
			rev.Spec.App = picchuv1alpha1.RevisionApp{Name: app, Tag: tag}
			rev.Status.Conditions = []metav1.Condition{{Type: picchuv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Message: tag + " ramps"}}
			revs = append(revs, rev)
		}
		rm := picchuv1alpha1.ReleaseManager{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-production"}}
		rm.Spec = picchuv1alpha1.ReleaseManagerSpec{App: app, Target: "production", Fleet: "production"}
		rm.Status.Releasing = &picchuv1alpha1.ReleasingStatus{Tag: "v2", Percent: int32(i % 100), Wave: "east",
			ForecastFinish: &metav1.Time{Time: now.Add(time.Duration(i) * time.Second)}}
		for step, p := range []int32{10, 20, 40, 80, 100} {
			st.record(ns+"/"+rm.Name, weight{at: now.Add(time.Duration(step-5) * time.Minute), tag: "v2", percent: p})
		}
		rms = append(rms, rm)
	}
	return st, revs, rms
}

// TestFleetView_FiltersSortsAndDraws: the namespace filter and the search
// keep the rows they name, the sort orders them, and a sparkline steps.
func TestFleetView_FiltersSortsAndDraws(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	st, revs, rms := fleetOf(30, now)
	v := newFleetView(st, revs, rms, fleetQuery{namespace: "team-3", sort: "percent"}, now)
	if len(v.Rows) != 3 || v.Apps != 30 || len(v.Namespaces) != 10 {
		t.Fatalf("team-3: %d rows of %d, %d namespaces", len(v.Rows), v.Apps, len(v.Namespaces))
	}
	for i, row := range v.Rows {
		if row.Namespace != "team-3" || (i > 0 && row.Percent > v.Rows[i-1].Percent) {
			t.Errorf("row %d: %+v", i, row)
		}
	}
	if v := newFleetView(st, revs, rms, fleetQuery{search: "app-0017"}, now); len(v.Rows) != 1 || v.Rows[0].App != "app-0017" {
		t.Errorf("searching app-0017: %+v", v.Rows)
	}
	// 10 → 100 % in five steps over five minutes: each step a vertical
	// and a horizontal segment, ending at the right edge at 100 %.
	if got := v.Rows[0].Spark; !strings.HasPrefix(got, "0.0,21.6 24.0,21.6 24.0,19.2 ") || !strings.HasSuffix(got, " 120.0,0.0") {
		t.Errorf("sparkline %q", got)
	}
	if v.Rows[0].Health != "Progressing" {
		t.Errorf("health %q, want Progressing", v.Rows[0].Health)
	}
}

// BenchmarkDashboard_FleetPage renders the fleet page of 1000 apps, as the
// dashboard does for each page that asks: from the store's objects to HTML.
func BenchmarkDashboard_FleetPage(b *testing.B) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	st, revs, rms := fleetOf(1000, now)
	b.ReportAllocs()
	for b.Loop() {
		v := newFleetView(st, revs, rms, fleetQuery{}, now)
		if err := dashboardTemplates.ExecuteTemplate(io.Discard, "page", page{Title: "Releases", Page: "fleet", Data: v}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStore_ForgetsAReleaseManagerThatWent: the weights kept of a
// ReleaseManager go with it, whether its deletion was seen or only found
// (DeletedFinalStateUnknown), and the pages are told.
func TestStore_ForgetsAReleaseManagerThatWent(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	st, _, rms := fleetOf(2, now)
	st.hub = newHub()
	page, unsubscribe := st.hub.subscribe()
	defer unsubscribe()
	st.forget(&rms[0])
	st.forget(toolscache.DeletedFinalStateUnknown{Key: "team-1/app-0001-production", Obj: &rms[1]})
	if len(st.weights) != 0 {
		t.Errorf("weights kept after both went: %v", st.weights)
	}
	select {
	case <-page:
	default:
		t.Error("the page was not told")
	}
}

// TestStore_ChartsEachClusterAsRecorded: each cluster's percent of a build
// is kept at the time the cluster took it, once per change, and charted as
// steps from the first to now; a build the ReleaseManager no longer
// records is dropped.
func TestStore_ChartsEachClusterAsRecorded(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now := t0.Add(40 * time.Second)
	st := &store{weights: map[string][]weight{}, hub: newHub(), now: func() time.Time { return now }}
	rm := &picchuv1alpha1.ReleaseManager{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "app-production"}}
	at := func(d time.Duration) *picchuv1alpha1.Timestamp {
		ts := picchuv1alpha1.NewTimestamp(t0.Add(d))
		return &ts
	}
	record := func(east, west int32, eastAt, westAt time.Duration) {
		rm.Status.Revisions = []picchuv1alpha1.ReleaseManagerRevisionStatus{{Tag: "v2", Clusters: []picchuv1alpha1.ReleaseManagerRevisionClusterStatus{
			{Name: "east", Percent: east, LastUpdated: at(eastAt)}, {Name: "west", Percent: west, LastUpdated: at(westAt)},
		}}}
		st.observe(rm)
	}
	record(10, 10, 0, time.Second)
	record(20, 10, 10*time.Second, time.Second)
	record(20, 10, 10*time.Second, time.Second) // nothing new
	record(20, 20, 10*time.Second, 12*time.Second)
	got := st.clusterHistory("team/app-production", "v2")
	if len(got["east"]) != 2 || len(got["west"]) != 2 || !got["east"][1].at.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("kept %+v", got)
	}
	c := newChart("v2", got, []string{"east", "west"}, now)
	if c == nil || len(c.Series) != 2 || c.Since != "40s" {
		t.Fatalf("chart %+v", c)
	}
	// 40 s over 480 px: east at 10 % (y 108) from 0 s, 20 % (y 96) from 10 s.
	if want := "0.0,108.0 120.0,108.0 120.0,96.0 480.0,96.0"; c.Series[0].Points != want || c.Series[0].Class != "c0" || c.Series[0].Now != 20 {
		t.Errorf("east: %+v, want points %q", c.Series[0], want)
	}
	if want := "12.0,108.0 144.0,108.0 144.0,96.0 480.0,96.0"; c.Series[1].Points != want || c.Series[1].Class != "c1" {
		t.Errorf("west: %+v, want points %q", c.Series[1], want)
	}
	rm.Status.Revisions = []picchuv1alpha1.ReleaseManagerRevisionStatus{{Tag: "v3"}}
	st.observe(rm)
	if got := st.clusterHistory("team/app-production", "v2"); len(got) != 0 {
		t.Errorf("v2 kept after it went from the status: %+v", got)
	}
	if newChart("v2", nil, []string{"east"}, now) != nil {
		t.Error("a chart without weights")
	}
}

// TestWavesOf: each wave of the releasing build, with its percent, its
// bake and whether it is done, ramping or waiting.
func TestWavesOf(t *testing.T) {
	spec := &picchuv1alpha1.RevisionTarget{Name: "production", Release: picchuv1alpha1.ReleaseInfo{Waves: []picchuv1alpha1.ReleaseWave{
		{Name: "canary-region", Bake: &metav1.Duration{Duration: time.Minute}}, {}, {Name: "rest"},
	}}}
	record := &picchuv1alpha1.ReleaseManagerRevisionStatus{Wave: 1, WavePercents: []int32{100, 20, 0}}
	got := wavesOf(build{spec: spec, record: record})
	want := []waveView{
		{Name: "canary-region", Bake: "1m0s", Percent: 100, State: "done"},
		{Name: "wave-2", Bake: "none", Percent: 20, State: "ramping"},
		{Name: "rest", Bake: "none", Percent: 0, State: "waiting"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("waves %+v, want %+v", got, want)
	}
	if got := wavesOf(build{spec: &picchuv1alpha1.RevisionTarget{Name: "staging"}, record: record}); got != nil {
		t.Errorf("a target without waves: %+v", got)
	}
}

// TestRights_KeepsABoundedNumberOfAnswers: answers for ever more
// namespaces (a loop over made-up names) keep at most maxRightsAnswers:
// past it, the oldest go, and once they expired, all that expired.
func TestRights_KeepsABoundedNumberOfAnswers(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	r := &rights{now: func() time.Time { return now }, answers: map[string]rightsAnswer{}}
	const n = 4 * maxRightsAnswers
	for i := range n {
		now = now.Add(10 * time.Millisecond)
		r.keep(fmt.Sprintf("ns-%d", i), rightsAnswer{at: now})
		if len(r.answers) > maxRightsAnswers {
			t.Fatalf("after %d answers, %d kept", i+1, len(r.answers))
		}
	}
	for i := n - maxRightsAnswers; i < n; i++ {
		if _, ok := r.answers[fmt.Sprintf("ns-%d", i)]; !ok {
			t.Errorf("ns-%d, among the %d newest answers, was dropped", i, maxRightsAnswers)
		}
	}
	now = now.Add(rightsTTL)
	r.keep("late", rightsAnswer{at: now})
	if len(r.answers) != 1 {
		t.Errorf("a minute later, %d answers are kept beside the new one", len(r.answers)-1)
	}
}

// openStream opens the event stream of srv and reads its first message;
// it returns the response (its body open) or the status it was refused
// with.
func openStream(t *testing.T, srv *httptest.Server) (*http.Response, int) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, resp.StatusCode
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "retry: 2000\n" {
		t.Fatalf("the stream's first line: %q, %v", line, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, resp.StatusCode
}

// TestEvents_OpensAtMostMaxStreams: the stream after maxStreams is refused
// with 503; once a page goes, another may follow.
func TestEvents_OpensAtMostMaxStreams(t *testing.T) {
	d := &dashboard{store: &store{hub: newHub()}, streams: make(chan struct{}, maxStreams), writeTimeout: streamWriteTimeout}
	srv := httptest.NewServer(http.HandlerFunc(d.events))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	var open []*http.Response
	for range maxStreams {
		resp, status := openStream(t, srv)
		if resp == nil {
			t.Fatalf("stream %d of %d refused: %d", len(open)+1, maxStreams, status)
		}
		open = append(open, resp)
	}
	if _, status := openStream(t, srv); status != http.StatusServiceUnavailable {
		t.Fatalf("stream %d: %d, want 503", maxStreams+1, status)
	}
	open[0].Body.Close()
	// The server notices the page went when its connection closes.
	d.store.hub.changed()
	kit.Eventually(t, 10*time.Second, "a place for a new stream", func() error {
		if len(d.streams) == maxStreams {
			return fmt.Errorf("%d streams held", len(d.streams))
		}
		return nil
	})
	if resp, status := openStream(t, srv); resp == nil {
		t.Errorf("a stream after one went: %d", status)
	}
}

// TestEvents_AStreamThatCannotBeWrittenLetsItsPlaceGo: a write that
// cannot finish within writeTimeout ends the stream and frees its place.
func TestEvents_AStreamThatCannotBeWrittenLetsItsPlaceGo(t *testing.T) {
	d := &dashboard{store: &store{hub: newHub()}, streams: make(chan struct{}, maxStreams), writeTimeout: time.Nanosecond}
	srv := httptest.NewServer(http.HandlerFunc(d.events))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		// The server ends the exchange: an answer cut short, or none.
		if resp, err := srv.Client().Get(srv.URL); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream was still open 10 s after a write that could not finish")
	}
	kit.Eventually(t, 10*time.Second, "the stream's place freed", func() error {
		if n := len(d.streams); n != 0 {
			return fmt.Errorf("%d streams held", n)
		}
		return nil
	})
}

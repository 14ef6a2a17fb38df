package plugin

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
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

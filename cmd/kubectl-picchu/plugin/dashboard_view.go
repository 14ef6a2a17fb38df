package plugin

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// fleetView is the fleet page: a row per app and target.
type fleetView struct {
	// Namespace is the one namespace read, or "" for all.
	Namespace string
	// Filter and Query are the page's namespace filter and search.
	Filter, Query string
	// Sort is the column the rows are sorted by.
	Sort       string
	Namespaces []string
	Rows       []fleetRow
	// Apps is the number of rows before the filter and the search.
	Apps int
}

// fleetRow is one app's release in one target.
type fleetRow struct {
	Namespace, App, Target string
	// Releasing is the tag of the build releasing, "" when none is.
	Releasing string
	Percent   int32
	Wave      string
	// Health is the badge of the app's newest Revision: Ready, Progressing,
	// Stalled, Failed or Unknown.
	Health, HealthWhy string
	ETA               string
	// Spark is the polyline of the releasing build's weights, in a box of
	// sparkWidth × sparkHeight, empty when there is none.
	Spark string
}

const (
	sparkWidth  = 120
	sparkHeight = 24
)

// fleetQuery is what the fleet page is asked for.
type fleetQuery struct {
	namespace, search, sort string
}

// newFleetView builds the fleet page from the store's objects.
func newFleetView(st *store, revs []picchuv1alpha1.Revision, rms []picchuv1alpha1.ReleaseManager, q fleetQuery, now time.Time) fleetView {
	v := fleetView{Namespace: st.namespace, Filter: q.namespace, Query: q.search, Sort: q.sort, Apps: len(rms)}
	newest := newestRevisions(revs)
	seen := map[string]bool{}
	for i := range rms {
		rm := &rms[i]
		if !seen[rm.Namespace] {
			seen[rm.Namespace] = true
			v.Namespaces = append(v.Namespaces, rm.Namespace)
		}
		if q.namespace != "" && rm.Namespace != q.namespace {
			continue
		}
		if q.search != "" && !strings.Contains(rm.Spec.App, q.search) && !strings.Contains(rm.Spec.Target, q.search) {
			continue
		}
		row := fleetRow{Namespace: rm.Namespace, App: rm.Spec.App, Target: rm.Spec.Target, ETA: none}
		if rel := rm.Status.Releasing; rel != nil {
			row.Releasing, row.Percent, row.Wave = rel.Tag, rel.Percent, rel.Wave
			row.ETA = eta(rel.ForecastFinish, now)
			row.Spark = sparkline(st.history(rm.Namespace+"/"+rm.Name, rel.Tag), now)
		}
		row.Health, row.HealthWhy = health(newest[rm.Namespace+"/"+rm.Spec.App])
		v.Rows = append(v.Rows, row)
	}
	slices.Sort(v.Namespaces)
	slices.SortStableFunc(v.Rows, rowOrder(q.sort))
	return v
}

// rowOrder sorts rows by app (the default), namespace, percent or health.
func rowOrder(by string) func(a, b fleetRow) int {
	byApp := func(a, b fleetRow) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.Target, b.Target), cmp.Compare(a.Namespace, b.Namespace))
	}
	switch by {
	case "namespace":
		return func(a, b fleetRow) int { return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), byApp(a, b)) }
	case "percent":
		return func(a, b fleetRow) int { return cmp.Or(cmp.Compare(b.Percent, a.Percent), byApp(a, b)) }
	case "health":
		return func(a, b fleetRow) int { return cmp.Or(cmp.Compare(a.Health, b.Health), byApp(a, b)) }
	}
	return byApp
}

// newestRevisions is each app's newest Revision, by namespace/app.
func newestRevisions(revs []picchuv1alpha1.Revision) map[string]*picchuv1alpha1.Revision {
	out := map[string]*picchuv1alpha1.Revision{}
	for i := range revs {
		rev := &revs[i]
		key := rev.Namespace + "/" + rev.Spec.App.Name
		if old, ok := out[key]; !ok || compareRevisions(*old, *rev) < 0 {
			out[key] = rev
		}
	}
	return out
}

// health is the badge of a Revision from its kstatus conditions, and why.
func health(rev *picchuv1alpha1.Revision) (string, string) {
	if rev == nil {
		return "Unknown", "no Revision"
	}
	if rev.Spec.Failed {
		reason, _ := annotation(rev, picchuv1alpha1.AnnotationFailedReason)
		return "Failed", rev.Spec.App.Tag + " failed: " + cmp.Or(reason, "no reason given")
	}
	conditions := rev.Status.Conditions
	if c := meta.FindStatusCondition(conditions, picchuv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		return "Stalled", c.Message
	}
	if c := meta.FindStatusCondition(conditions, picchuv1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
		return "Ready", c.Message
	}
	if c := meta.FindStatusCondition(conditions, picchuv1alpha1.ConditionReconciling); c != nil && c.Status == metav1.ConditionTrue {
		return "Progressing", c.Message
	}
	return "Unknown", "no Ready condition yet"
}

// sparkline draws weights as the points of an SVG polyline, over the last
// minutes up to now, 0 % at the bottom and 100 % at the top; "" without
// weights.
func sparkline(ws []weight, now time.Time) string {
	if len(ws) == 0 {
		return ""
	}
	start := ws[0].at
	span := max(now.Sub(start), time.Second)
	x := func(t time.Time) float64 { return float64(sparkWidth) * float64(t.Sub(start)) / float64(span) }
	y := func(p int32) float64 { return float64(sparkHeight) * (1 - float64(min(max(p, 0), 100))/100) }
	var sb strings.Builder
	prev := ws[0].percent
	for i, w := range ws {
		if i > 0 {
			// A step: the weight held until the next one.
			fmt.Fprintf(&sb, "%.1f,%.1f ", x(w.at), y(prev))
		}
		fmt.Fprintf(&sb, "%.1f,%.1f ", x(w.at), y(w.percent))
		prev = w.percent
	}
	fmt.Fprintf(&sb, "%.1f,%.1f", float64(sparkWidth), y(prev))
	return sb.String()
}

// appView is the app page: per target, the release.
type appView struct {
	Namespace, App string
	// Forbidden is why the user may not act on the app's builds, "" when
	// they may.
	Forbidden string
	Targets   []targetView
}

// targetView is an app's release in one target.
type targetView struct {
	Name      string
	Releasing string
	ETA       string
	// Clusters are the columns of the weight matrix.
	Clusters   []string
	Builds     []buildView
	Timeline   []timelineView
	Conditions []metav1.Condition
}

// buildView is one build of an app in a target.
type buildView struct {
	Tag, State, Next, Alerts, Verdict, Pods string
	// Failed is why the build failed, as its Revision says; "" when it
	// did not.
	Failed  string
	Percent int32
	// Weights are its percent in each cluster, in the order of Clusters;
	// "-" where it has none recorded.
	Weights []string
	Paused  bool
	Actions []actionLink
}

// timelineView is a step of the timeline.
type timelineView struct {
	Age, Tag, What string
}

// newAppView builds the app page from the app's objects.
func newAppView(namespace string, a *app, now time.Time, forbidden string) appView {
	v := appView{Namespace: namespace, App: a.name, Forbidden: forbidden}
	for _, target := range a.targets() {
		rm := a.manager(target)
		tv := targetView{Name: target, Releasing: releasing(rm), ETA: none}
		if rm != nil && rm.Status.Releasing != nil {
			tv.ETA = eta(rm.Status.Releasing.ForecastFinish, now)
		}
		builds := a.builds(target)
		tv.Clusters = clusterNames(builds)
		for _, b := range builds {
			current, desired := b.pods()
			bv := buildView{Tag: b.tag, State: orNone(b.state()), Percent: b.percent(), Next: next(b, now),
				Alerts: joined(b.alerts()), Pods: fmt.Sprintf("%d/%d", current, desired), Paused: b.paused(), Verdict: none}
			if b.record != nil && b.record.Verdict != "" {
				bv.Verdict = b.record.Verdict
			}
			if b.revision != nil && b.revision.Spec.Failed {
				reason, _ := annotation(b.revision, picchuv1alpha1.AnnotationFailedReason)
				bv.Failed = cmp.Or(reason, "no reason given")
			}
			for _, c := range tv.Clusters {
				bv.Weights = append(bv.Weights, clusterWeight(b, c))
			}
			bv.Actions = actionsOf(namespace, a.name, b, forbidden)
			tv.Builds = append(tv.Builds, bv)
		}
		for _, s := range timeline(currentBuilds(builds)) {
			tv.Timeline = append(tv.Timeline, timelineView{Age: since(now, s.at), Tag: s.tag, What: s.what})
		}
		if rm != nil {
			tv.Conditions = rm.Status.Conditions
		}
		v.Targets = append(v.Targets, tv)
	}
	return v
}

// clusterNames are the clusters any of builds has a record in, sorted.
func clusterNames(builds []build) []string {
	var out []string
	for _, b := range builds {
		if b.record == nil {
			continue
		}
		for _, c := range b.record.Clusters {
			if !slices.Contains(out, c.Name) {
				out = append(out, c.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// clusterWeight is b's percent in cluster c: "40%", or "-" when b has no
// record there.
func clusterWeight(b build, c string) string {
	if b.record != nil {
		for _, rc := range b.record.Clusters {
			if rc.Name == c {
				return percent(rc.Percent)
			}
		}
	}
	return "-"
}

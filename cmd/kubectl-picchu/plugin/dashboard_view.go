package plugin

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	return steps(ws, ws[0].at, now, sparkWidth, sparkHeight)
}

// steps draws weights from start to now as the points of an SVG polyline
// in a width × height box: each weight holds until the next, 0 % at the
// bottom and 100 % at the top.
func steps(ws []weight, start, now time.Time, width, height int) string {
	span := max(now.Sub(start), time.Second)
	x := func(t time.Time) float64 {
		return float64(width) * min(max(float64(t.Sub(start))/float64(span), 0), 1)
	}
	y := func(p int32) float64 { return float64(height) * (1 - float64(min(max(p, 0), 100))/100) }
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
	fmt.Fprintf(&sb, "%.1f,%.1f", float64(width), y(prev))
	return sb.String()
}

// appView is the app page: per target, the release.
type appView struct {
	Namespace, App string
	// Forbidden is why the user may not act on the app's builds, "" when
	// they may.
	Forbidden string
	Targets   []targetView
	// Events are the newest Events of the app's Revisions and
	// ReleaseManagers; NoEvents says why there are none to show.
	Events   []eventView
	NoEvents string
}

// eventView is one Event.
type eventView struct {
	Age, Type, Reason, Object, Message string
}

// maxEvents is how many Events the app page shows.
const maxEvents = 20

// targetView is an app's release in one target.
type targetView struct {
	Name      string
	Releasing string
	ETA       string
	// Clusters are the columns of the weight matrix.
	Clusters []string
	Builds   []buildView
	// Waves are the releasing build's waves, when its target releases in
	// waves.
	Waves []waveView
	// Chart is each cluster's weight of the releasing build over its
	// release; nil when no cluster recorded one.
	Chart      *chartView
	Timeline   []timelineView
	Conditions []metav1.Condition
}

// waveView is one wave of a release.
type waveView struct {
	Name, Bake string
	Percent    int32
	// State is "ramping" for the wave the build ramps in, "done" for the
	// waves before, "waiting" for those after.
	State string
}

// buildView is one build of an app in a target.
type buildView struct {
	Tag, State, Next, Alerts, Verdict, Pods string
	// Failed is why the build failed, as its Revision says; "" when it
	// did not.
	Failed  string
	Percent int32
	// Weights are its percent in each cluster, in the order of Clusters.
	Weights []cellView
	Paused  bool
	Actions []actionLink
}

// cellView is a build's percent in a cluster: "40%", or "-" where it has
// none recorded; and, while its judgment is against it there, the alerts
// seen firing in that cluster and the verdict on it.
type cellView struct{ Cluster, Percent, Alerts, Verdict string }

// timelineView is a step of the timeline.
type timelineView struct {
	Age, Tag, What string
}

// appSources are what the app page reads besides the app's objects: the
// weights each cluster took, by ReleaseManager (namespace/name) and build.
type appSources struct {
	clusterHistory func(key, tag string) map[string][]weight
	events         []corev1.Event
	noEvents       string
}

// newAppView builds the app page from the app's objects.
func newAppView(namespace string, a *app, src appSources, now time.Time, forbidden string) appView {
	v := appView{Namespace: namespace, App: a.name, Forbidden: forbidden, NoEvents: src.noEvents}
	for _, target := range a.targets() {
		rm := a.manager(target)
		tv := targetView{Name: target, Releasing: releasing(rm), ETA: none}
		builds := a.builds(target)
		tv.Clusters = clusterNames(builds)
		if rm != nil && rm.Status.Releasing != nil {
			rel := rm.Status.Releasing
			tv.ETA = eta(rel.ForecastFinish, now)
			if src.clusterHistory != nil {
				tv.Chart = newChart(rel.Tag, src.clusterHistory(rm.Namespace+"/"+rm.Name, rel.Tag), tv.Clusters, now)
			}
			for _, b := range builds {
				if b.tag == rel.Tag {
					tv.Waves = wavesOf(b)
				}
			}
		}
		for _, b := range builds {
			current, desired := b.pods()
			bv := buildView{Tag: b.tag, State: orNone(b.state()), Percent: b.percent(), Next: next(b, now),
				Alerts: joined(b.alerts()), Pods: fmt.Sprintf("%d/%d", current, desired), Paused: b.paused(), Verdict: none}
			if b.record != nil && b.record.Verdict != "" {
				bv.Verdict = b.record.Verdict
			}
			if b.record != nil && b.record.TriggeredWhere != "" {
				bv.Alerts += " (" + b.record.TriggeredWhere + ")"
			}
			if b.revision != nil && b.revision.Spec.Failed {
				reason, _ := annotation(b.revision, picchuv1alpha1.AnnotationFailedReason)
				bv.Failed = cmp.Or(reason, "no reason given")
			}
			for _, c := range tv.Clusters {
				bv.Weights = append(bv.Weights, clusterCell(b, c))
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
	for _, e := range src.events {
		v.Events = append(v.Events, eventView{Age: since(now, eventTime(e)), Type: e.Type, Reason: e.Reason,
			Object: e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name, Message: e.Message})
	}
	return v
}

// wavesOf are the waves of build b, from its target's waves and the
// percents its record keeps of each; nil without waves.
func wavesOf(b build) []waveView {
	if b.spec == nil || b.record == nil || len(b.spec.Release.Waves) < 2 {
		return nil
	}
	waves := b.spec.Release.Waves
	var out []waveView
	for i, w := range waves {
		wv := waveView{Name: cmp.Or(w.Name, fmt.Sprintf("wave-%d", i+1)), Bake: "none", State: "waiting"}
		if w.Bake != nil && w.Bake.Duration > 0 {
			wv.Bake = w.Bake.Duration.String()
		}
		if i < len(b.record.WavePercents) {
			wv.Percent = b.record.WavePercents[i]
		}
		switch {
		case int32(i) < b.record.Wave:
			wv.State = "done"
		case int32(i) == b.record.Wave:
			wv.State = "ramping"
		}
		out = append(out, wv)
	}
	return out
}

// chartView is a chart of each cluster's weight of a build over time.
type chartView struct {
	Tag string
	// Since is when the chart starts, as an age ("3m ago").
	Since  string
	Series []seriesView
}

// seriesView is one cluster's line in a chart.
type seriesView struct {
	Cluster string
	// Class colours the line (c0 to c5).
	Class string
	// Points are the SVG polyline's points, in a chartWidth × chartHeight box.
	Points string
	// Now is the cluster's percent now.
	Now int32
}

const (
	chartWidth  = 480
	chartHeight = 120
)

// newChart charts history (by cluster) of build tag from its first weight
// to now; clusters orders the lines. Nil when there is no weight.
func newChart(tag string, history map[string][]weight, clusters []string, now time.Time) *chartView {
	var start time.Time
	for _, ws := range history {
		if len(ws) > 0 && (start.IsZero() || ws[0].at.Before(start)) {
			start = ws[0].at
		}
	}
	if start.IsZero() {
		return nil
	}
	c := &chartView{Tag: tag, Since: since(now, start)}
	for i, cluster := range clusters {
		ws := history[cluster]
		if len(ws) == 0 {
			continue
		}
		c.Series = append(c.Series, seriesView{Cluster: cluster, Class: fmt.Sprintf("c%d", i%6),
			Points: steps(ws, start, now, chartWidth, chartHeight), Now: ws[len(ws)-1].percent})
	}
	return c
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

// clusterCell is b's percent in cluster c ("40%", or "-" when b has no
// record there), and what its judgment says of that cluster: the alerts
// seen firing there and its verdict.
func clusterCell(b build, c string) cellView {
	cell := cellView{Cluster: c, Percent: "-"}
	if b.record != nil {
		for _, rc := range b.record.Clusters {
			if rc.Name == c {
				cell.Percent, cell.Alerts, cell.Verdict = percent(rc.Percent), strings.Join(rc.TriggeredAlerts, ", "), rc.Verdict
			}
		}
	}
	return cell
}

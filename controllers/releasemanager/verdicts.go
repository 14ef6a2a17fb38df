package releasemanager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/compare"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/integrations/scope"
	"github.com/medium/picchu/plan/manifests"
)

// ClusterAlertSource also says which cluster each firing alert names, by
// its cluster label (package prometheus).
type ClusterAlertSource interface {
	FiringAlertsIn(ctx context.Context, app scope.App, tag string, canaryOnly bool) ([]prometheus.Alert, error)
}

// ClusterTrafficSource says in which clusters a build's SLO totals
// counted requests, and counts builds' requests and errors of an SLO over
// a window, by cluster: per raw series of the SLO's own queries, or from
// its recorded series, saying why (package prometheus, Client.Counts).
type ClusterTrafficSource interface {
	ReachedIn(ctx context.Context, app scope.App, tag string, metrics []string) (map[string][]string, error)
	Counts(ctx context.Context, app scope.App, sli prometheus.SLI, tags []string, window time.Duration) (prometheus.SLICounts, error)
}

// The Prometheus client counts the baseline comparison's requests: the
// sources are told apart by their methods, so a signature that drifts
// would turn the comparison off without a word, were it not for this.
var _ ClusterTrafficSource = (*prometheus.Client)(nil)

// BaselineAlertSuffix ends the name Picchu records, among a build's
// triggered alerts, for an SLO whose baseline comparison failed it:
// "<slo>_baseline".
const BaselineAlertSuffix = "_baseline"

// appScope selects the alerts and series of the app in the target: those
// of its namespace there and of its fleet's clusters.
func (s *snapshot) appScope() scope.App {
	clusters := make([]string, 0, len(s.fleet))
	for _, fc := range s.fleet {
		clusters = append(clusters, fc.obj.PrometheusClusterLabelValue())
	}
	slices.Sort(clusters)
	return scope.App{Name: s.rm.Spec.App, Namespace: picchuv1alpha1.AppNamespace(s.rm.Spec.App, s.rm.Spec.Target), Clusters: clusters}
}

// clusterOf names, by the value of its cluster label, each cluster of the
// fleet.
func (s *snapshot) clusterOf() map[string]string {
	out := make(map[string]string, len(s.fleet))
	for _, fc := range s.fleet {
		out[fc.obj.PrometheusClusterLabelValue()] = fc.obj.Name
	}
	return out
}

// firingIn records, of alerts, those that name a cluster, by the fleet
// cluster they name, in inc.firingIn. The sources answer for the fleet
// alone (appScope): an alert of another fleet's cluster is another team's.
func (s *snapshot) firingIn(inc *incarnation, alerts []prometheus.Alert) {
	clusters := s.clusterOf()
	for _, a := range alerts {
		if name, ok := clusters[a.Cluster]; ok && a.Cluster != "" {
			if inc.firingIn == nil {
				inc.firingIn = map[string][]string{}
			}
			inc.firingIn[name] = union(inc.firingIn[name], []string{a.Name})
		}
	}
}

// firingWhere says where the alerts firing this run come from: the
// clusters they name, and the waves where the build takes traffic, such as
// "cluster west; wave west (2/2)"; "" when neither says anything.
func (s *snapshot) firingWhere(inc *incarnation) string {
	var parts []string
	clusters := slices.Sorted(maps.Keys(inc.firingIn))
	switch len(clusters) {
	case 0:
	case 1:
		parts = append(parts, "cluster "+clusters[0])
	default:
		parts = append(parts, "clusters "+strings.Join(clusters, ", "))
	}
	if w := s.servingWaves(inc); w != "" {
		parts = append(parts, w)
	}
	return strings.Join(parts, "; ")
}

// gate is a point of a build's release where it needs evidence that it
// served requests, and a baseline comparison when its SLOs ask for one,
// before it goes on: its canary, once run its time, in the first wave's
// clusters (every cluster without waves); and, with waves, its first step
// in each later wave, once held for the step's delay.
type gate struct {
	// name says which: "canary", or "wave <its name>".
	name string
	// wave is the name of the gate's wave, "" without waves.
	wave string
	// since is when the build started taking traffic there: the window
	// the comparison counts.
	since time.Time
	// clusters are the live clusters of the wave.
	clusters []*fleetCluster
}

// gateOf returns the gate the build is at, if any.
func (s *snapshot) gateOf(inc *incarnation) (gate, bool) {
	if inc.target == nil {
		return gate{}, false
	}
	state := release.State(inc.status.State.Current)
	switch {
	case state.RunsCanary():
		start := inc.status.CanaryStartTimestamp
		if start == nil || s.now.Before(start.Add(time.Duration(inc.target.Canary.TTL)*time.Second)) {
			return gate{}, false // the canary runs its time first
		}
		return gate{name: "canary", wave: s.waveName(0), since: start.Time, clusters: s.liveIn(0)}, true
	case state.IsRamping():
		w := int(inc.status.Wave)
		percents := s.wavePercents(inc)
		if len(s.waves) < 2 || w < 1 || w >= len(percents) {
			return gate{}, false
		}
		first := release.NextPercent(inc.target.Release, 0)
		if percents[w] <= 0 || percents[w] > first {
			return gate{}, false
		}
		clusters := s.liveIn(w)
		var since time.Time
		for _, c := range inc.status.Clusters {
			if c.Percent > 0 && c.LastUpdated != nil && slices.ContainsFunc(clusters, func(fc *fleetCluster) bool { return fc.obj.Name == c.Name }) {
				since = latest(since, c.LastUpdated.Time)
			}
		}
		if since.IsZero() || s.now.Before(since.Add(release.StepDelay(inc.target.Release))) {
			return gate{}, false // the first step is held for its delay first
		}
		return gate{name: "wave " + s.waveName(w), wave: s.waveName(w), since: since, clusters: clusters}, true
	}
	return gate{}, false
}

// liveIn are the live clusters of wave w: every live cluster without waves.
func (s *snapshot) liveIn(w int) []*fleetCluster {
	var out []*fleetCluster
	for _, fc := range s.fleet {
		if fc.live && (len(s.waves) < 2 || fc.wave == w) {
			out = append(out, fc)
		}
	}
	return out
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// checkEvidence holds a build at a gate (its canary, a wave's first step)
// that no request reached, unless it opted out (canary.allowNoTraffic):
// each of its enabled SLOs' recorded totals must show requests for its tag
// in every live cluster of the gate's wave (a series without the cluster
// label counts for every cluster), and each of its grouped Datadog
// monitors must have a group for it, or its verdict is NoEvidence.
func (r *Reconciler) checkEvidence(ctx context.Context, s *snapshot, inc *incarnation, srcs []namedSource) {
	g, ok := s.gateOf(inc)
	if !ok || inc.target.Canary.AllowNoTraffic {
		return
	}
	var missing, problems []string
	for _, ns := range srcs {
		var unreached []string
		var err error
		switch src := ns.src.(type) {
		case ClusterTrafficSource:
			if metrics := sloMetrics(s.rm.Spec.App, inc.target); len(metrics) > 0 {
				unreached, err = unreachedIn(ctx, src, s.appScope(), inc, g, metrics)
			}
		case TrafficSource:
			if metrics := sloMetrics(s.rm.Spec.App, inc.target); len(metrics) > 0 {
				unreached, err = src.Unreached(ctx, s.appScope(), inc.tag, metrics)
			}
		case GroupSource:
			unreached, err = src.Ungrouped(ctx, s.appScope(), inc.tag, inc.revision.Spec.CanaryWithSLIRules)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", ns.name, err))
		}
		if len(unreached) > 0 {
			missing = append(missing, fmt.Sprintf("%s (%s)", strings.Join(unreached, ", "), ns.name))
		}
	}
	switch {
	case len(problems) > 0:
		inc.verdict = release.Unobserved
		s.alertProblems = append(s.alertProblems, fmt.Sprintf("%s: %s", inc.tag, strings.Join(problems, "; ")))
	case len(missing) > 0:
		inc.verdict = release.NoEvidence
		s.noEvidence = append(s.noEvidence, fmt.Sprintf("%s: no request counted for its tag at its %s in %s", inc.tag, g.name, strings.Join(missing, "; ")))
	}
}

// unreachedIn returns, of metrics, those that counted no request of the
// build in some live cluster of the gate's wave, each with those clusters
// ("shop:availability:total on west"), and marks them "no evidence" in
// inc.clusterVerdicts.
func unreachedIn(ctx context.Context, src ClusterTrafficSource, app scope.App, inc *incarnation, g gate, metrics []string) ([]string, error) {
	reached, err := src.ReachedIn(ctx, app, inc.tag, metrics)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range metrics {
		values := reached[m]
		if len(values) == 0 {
			out = append(out, m)
			continue
		}
		if slices.Contains(values, "") {
			continue // series without the cluster label count for every cluster
		}
		var without []string
		for _, fc := range g.clusters {
			if !slices.Contains(values, fc.obj.PrometheusClusterLabelValue()) {
				without = append(without, fc.obj.Name)
				inc.judgeCluster(fc.obj.Name, "no evidence: no request counted in "+m)
			}
		}
		if len(without) > 0 {
			out = append(out, m+" on "+strings.Join(without, ", "))
		}
	}
	return out, nil
}

// firedIn records that alert fired for the build on cluster this run, with
// the verdict there.
func (inc *incarnation) firedIn(cluster, alert, verdict string) {
	if inc.firingIn == nil {
		inc.firingIn = map[string][]string{}
	}
	inc.firingIn[cluster] = union(inc.firingIn[cluster], []string{alert})
	inc.judgeCluster(cluster, verdict)
}

// judgeCluster records what the judgment says against the build on a
// cluster this run.
func (inc *incarnation) judgeCluster(cluster, verdict string) {
	if inc.clusterVerdicts == nil {
		inc.clusterVerdicts = map[string]string{}
	}
	inc.clusterVerdicts[cluster] = verdict
}

// compareBaselines judges a build at a gate against its baseline for each
// enabled SLO whose canary asks for it (canary.baseline): the build's and
// its baseline's requests and errors over the same window, in the gate's
// clusters, by the test of package compare. A significantly worse build, or
// one with an outlier cluster, fails (its verdict is Firing, with
// "<slo>_baseline" among its alerts and the figures in inc.comparison,
// recorded on its outlier clusters, or on every cluster compared when none
// is an outlier). One with too few requests holds (NoEvidence), unless its
// target's canary.allowNoTraffic lets it pass: it goes on, and
// inc.comparison says it passed on too few requests, as it does until
// another gate compares it again. The app's first build, with no
// baseline, is not compared.
func (r *Reconciler) compareBaselines(ctx context.Context, s *snapshot, inc *incarnation, srcs []namedSource) {
	g, ok := s.gateOf(inc)
	if !ok {
		if strings.Contains(inc.status.Verdict, allowedOnTooFew) {
			// Between gates, a build let pass on too few requests
			// keeps saying so: it was never truly compared.
			inc.comparison = inc.status.Verdict
		}
		return
	}
	var src ClusterTrafficSource
	for _, ns := range srcs {
		if cs, isCounts := ns.src.(ClusterTrafficSource); isCounts {
			src = cs
		}
	}
	baseline := s.baselineOf(inc, g)
	if src == nil || baseline == nil {
		return
	}
	for _, slo := range inc.target.ServiceLevelObjectives {
		if !slo.Enabled || slo.ServiceLevelIndicator.Canary.Baseline == nil {
			continue
		}
		if decided := s.compareSLO(ctx, src, inc, baseline.tag, slo, g); decided {
			return
		}
	}
}

// maxVerdict is the longest verdict a build's status holds
// (status.revisions[].verdict).
const maxVerdict = 2048

// compareSLO compares the build with its baseline for one SLO at gate g,
// and says whether that decided the build's verdict this run (it fails, it
// holds, or the comparison could not count): then no other SLO is compared.
func (s *snapshot) compareSLO(ctx context.Context, src ClusterTrafficSource, inc *incarnation, baseline string, slo picchuv1alpha1.ServiceLevelObjective, g gate) bool {
	b := slo.ServiceLevelIndicator.Canary.Baseline
	in, recorded, err := baselineInput(ctx, src, s.appScope(), slo, inc.tag, baseline, g, s.now.Sub(g.since))
	if err != nil {
		inc.verdict = release.Unobserved
		s.alertProblems = append(s.alertProblems, fmt.Sprintf("%s: comparing %s with %s: %v", inc.tag, slo.Name, baseline, err))
		return true
	}
	in.Config = compare.Config{Confidence: b.ConfidencePercent / 100, MinRequests: float64(b.MinRequests)}
	res := compare.Compare(in)
	text := res.Describe(compare.Names{Canary: inc.tag, Baseline: baseline, SLO: slo.Name, Wave: g.wave})
	if recorded != "" {
		text += fmt.Sprintf("; counted from the recorded %s and %s, whose increase counts again what the other pods served before when a pod's series leaves the sum, because %s",
			manifests.SLOMetric(s.rm.Spec.App, slo.Name, "total"), manifests.SLOMetric(s.rm.Spec.App, slo.Name, "errors"), recorded)
	}
	switch res.Outcome {
	case compare.Fail:
		s.failAgainstBaseline(inc, baseline, slo.Name+BaselineAlertSuffix, in, res, truncate(text, maxVerdict))
		return true
	case compare.TooFew:
		if inc.target.Canary.AllowNoTraffic {
			// A build allowed to pass without requests passes without
			// enough of them to compare, saying so.
			inc.comparison = truncate(strings.Join(slices.DeleteFunc([]string{inc.comparison, passedOnTooFew(text, inc.tag, slo.Name)},
				func(v string) bool { return v == "" }), "; "), maxVerdict)
			return false
		}
		inc.verdict = release.NoEvidence
		inc.comparison = truncate(text, maxVerdict)
		s.noEvidence = append(s.noEvidence, fmt.Sprintf("%s: %s", inc.tag, text))
		return true
	}
	return false
}

// allowedOnTooFew ends the verdict of a build canary.allowNoTraffic let
// pass on too few requests (passedOnTooFew).
const allowedOnTooFew = ", as canary.allowNoTraffic lets it"

// passedOnTooFew rewrites the text of a comparison that holds a build on
// too few requests ("v5 holds availability: too few requests (…) in 2
// clusters") for a build canary.allowNoTraffic lets pass: "v5 passes
// availability on too few requests (…) in 2 clusters, as
// canary.allowNoTraffic lets it".
func passedOnTooFew(text, tag, slo string) string {
	figures, ok := strings.CutPrefix(text, tag+" holds "+slo+": ")
	if !ok {
		figures = text
	}
	return fmt.Sprintf("%s passes %s on %s%s", tag, slo, figures, allowedOnTooFew)
}

// failAgainstBaseline fails a build a baseline comparison found worse
// (its alert and figures recorded), on its outlier clusters, or on every
// cluster compared when none is an outlier.
func (s *snapshot) failAgainstBaseline(inc *incarnation, baseline, alert string, in compare.Input, res compare.Result, text string) {
	inc.verdict = release.Firing
	inc.firing = union(inc.firing, []string{alert})
	inc.comparison = text
	for _, o := range res.Outliers {
		if name, ok := s.clusterOf()[o.Cluster]; ok {
			inc.firedIn(name, alert, fmt.Sprintf("outlier: %.1f %% errors (%.0f of %.0f) against %.1f %% in the other clusters",
				100*o.Canary.Ratio(), o.Canary.Errors, o.Canary.Requests, 100*o.Others.Ratio()))
		}
	}
	if len(res.Outliers) > 0 {
		return
	}
	// Worse pooled, and no cluster worse than the others: it failed in
	// every cluster compared (a wave of one cluster is that cluster's
	// failure), so each is named.
	for _, c := range res.Clusters {
		if name, ok := s.clusterOf()[c]; ok {
			cc, bc := in.Canary[c], in.Baseline[c]
			inc.firedIn(name, alert, fmt.Sprintf("worse than %s: %.1f %% errors (%.0f of %.0f) against %.1f %% (%.0f of %.0f)",
				baseline, 100*cc.Ratio(), cc.Errors, cc.Requests, 100*bc.Ratio(), bc.Errors, bc.Requests))
		}
	}
}

// baselineOf is the build the judged one replaces at gate g: the newest
// older build that takes traffic in the gate's wave and has not failed.
func (s *snapshot) baselineOf(inc *incarnation, g gate) *incarnation {
	w := 0
	if len(g.clusters) > 0 {
		w = g.clusters[0].wave
	}
	older := false
	for _, other := range s.incarnations {
		if other == inc {
			older = true
			continue
		}
		state := release.State(other.status.State.Current)
		if !older || state.IsFailed() {
			continue
		}
		if percents := s.wavePercents(other); w < len(percents) && percents[w] > 0 {
			return other
		}
	}
	return nil
}

// baselineInput counts, for the app's SLO, the canary's and the baseline's
// requests and errors over window in the gate's clusters, by the value of
// their cluster label (series without it count as one cluster, ""). It
// also returns why they were counted from the SLO's recorded series, ""
// when they were counted per raw series.
func baselineInput(ctx context.Context, src ClusterTrafficSource, app scope.App, slo picchuv1alpha1.ServiceLevelObjective, canary, baseline string, g gate, window time.Duration) (compare.Input, string, error) {
	sli := slo.ServiceLevelIndicator
	counts, err := src.Counts(ctx, app, prometheus.SLI{
		TotalQuery: sli.TotalQuery, ErrorQuery: sli.ErrorQuery, TagKey: sli.TagKey,
		RecordedTotal: manifests.SLOMetric(app.Name, slo.Name, "total"), RecordedErrors: manifests.SLOMetric(app.Name, slo.Name, "errors"),
	}, []string{canary, baseline}, window)
	if err != nil {
		return compare.Input{}, "", err
	}
	in := compare.Input{Canary: map[string]compare.Counts{}, Baseline: map[string]compare.Counts{}}
	wanted := map[string]bool{"": true}
	for _, fc := range g.clusters {
		wanted[fc.obj.PrometheusClusterLabelValue()] = true
	}
	for _, side := range []struct {
		tag string
		out map[string]compare.Counts
	}{{canary, in.Canary}, {baseline, in.Baseline}} {
		for cluster, n := range counts.Total[side.tag] {
			if wanted[cluster] {
				side.out[cluster] = compare.Counts{Requests: n, Errors: counts.Errors[side.tag][cluster]}
			}
		}
	}
	return in, counts.Recorded, nil
}

// clusterVerdicts puts the judgment of this run in a build's cluster
// entries: the alerts that named each cluster join those on record, and
// each entry's verdict is this run's (none when nothing is against it).
func clusterVerdicts(entries []picchuv1alpha1.ReleaseManagerRevisionClusterStatus, inc *incarnation) {
	for i := range entries {
		e := &entries[i]
		if alerts := inc.firingIn[e.Name]; inc.verdict == release.Firing && len(alerts) > 0 {
			e.TriggeredAlerts = union(e.TriggeredAlerts, alerts)
		}
		if inc.verdict != release.Unjudged {
			e.Verdict = inc.clusterVerdicts[e.Name]
		}
	}
}

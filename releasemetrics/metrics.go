// Package releasemetrics holds the Prometheus metrics of Picchu's releases:
// how long builds take to reach each phase, the traffic weight of each build,
// how many incarnations are in each state and the revisions Picchu failed.
//
// The collectors are package globals. Nothing is registered at init: the
// operator (and tests) call Register once with the registry to expose them
// on, normally controller-runtime's metrics.Registry. Every function is safe
// for concurrent use.
package releasemetrics

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Label names.
const (
	labelApp    = "app"
	labelTarget = "target"
	labelTag    = "tag"
	labelState  = "state"
	// labelRevision is the tag of the build an oldest age is of: the
	// original's name for it.
	labelRevision = "revision"
	labelCluster  = "cluster"
)

var (
	// slowBuckets cover the latencies measured from the commit or the
	// Revision's creation: from 2 minutes to about 73 hours.
	slowBuckets = prometheus.ExponentialBuckets(120, 3, 8)
	// fastBuckets cover the time spent in one phase: from 30 seconds to
	// about 18 hours.
	fastBuckets = prometheus.ExponentialBuckets(30, 3, 8)
	// reconcileBuckets cover the time between two runs of a ReleaseManager.
	reconcileBuckets = []float64{10, 15, 20, 30, 45, 60, 90, 120}
)

func newLatency(name, help string, buckets []float64) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    name,
		Help:    help,
		Buckets: buckets,
	}, []string{labelApp, labelTarget})
}

var (
	gitCreateLatency = newLatency("picchu_git_create_latency",
		"Seconds from a build's git commit to the creation of its Revision.", slowBuckets)
	gitDeployLatency = newLatency("picchu_git_deploy_latency",
		"Seconds from a build's git commit to the build being deployed.", slowBuckets)
	gitCanaryLatency = newLatency("picchu_git_canary_latency",
		"Seconds from a build's git commit to the end of its canary.", slowBuckets)
	gitPendingReleaseLatency = newLatency("picchu_git_pending_release_latency",
		"Seconds from a build's git commit to the build being pending release.", slowBuckets)
	gitReleaseLatency = newLatency("picchu_git_release_latency",
		"Seconds from a build's git commit to the build being released.", slowBuckets)
	revisionDeployLatency = newLatency("picchu_revision_deploy_latency",
		"Seconds from the creation of a build's Revision to the build being deployed.", slowBuckets)
	revisionCanaryLatency = newLatency("picchu_revision_canary_latency",
		"Seconds from the creation of a build's Revision to the end of its canary.", slowBuckets)
	revisionPendingReleaseLatency = newLatency("picchu_revision_pending_release_latency",
		"Seconds from the creation of a build's Revision to the build being pending release.", slowBuckets)
	revisionReleaseLatency = newLatency("picchu_revision_release_latency",
		"Seconds from the creation of a build's Revision to the build being released.", slowBuckets)

	revisionRollbackLatency = newLatency("picchu_revision_rollback_latency",
		"Seconds from a build failing to its traffic being back on the previous release.", fastBuckets)
	deployLatency = newLatency("picchu_deploy_latency",
		"Seconds a build spent deploying.", fastBuckets)
	canaryLatency = newLatency("picchu_canary_latency",
		"Seconds a build spent canarying.", fastBuckets)
	releaseLatency = newLatency("picchu_release_latency",
		"Seconds a build spent ramping up to its full release.", fastBuckets)

	reconcileInterval = newLatency("picchu_release_manager_reconcile_interval",
		"Seconds between two reconciles of a ReleaseManager.", reconcileBuckets)

	// stepLateness is labelled by target only: it is a fleet's figure, and
	// a thousand apps would make it a thousand histograms.
	stepLateness = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "picchu_release_step_lateness_seconds",
		Help:    "Seconds from when a ramp step was due to when every live cluster of the target had its weights.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60},
	}, []string{labelTarget})

	releaseWeight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "picchu_revision_release_weight",
		Help: "Percent of an app's traffic in a target that a build receives.",
	}, []string{labelApp, labelTarget, labelTag})
	// clusterWeight is releaseWeight per cluster: a series per build and
	// cluster that routes to it, which is what a rollout in waves, or a
	// cluster that lags, is seen by.
	clusterWeight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "picchu_release_cluster_weight",
		Help: "Percent of an app's traffic in a target that a build receives in a cluster, as last applied there.",
	}, []string{labelApp, labelTarget, labelTag, labelCluster})
	// alertChecks counts the alert checks of judged builds by source and
	// outcome; it has no app label, so it stays a handful of series.
	alertChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picchu_alert_checks_total",
		Help: "Alert checks of the builds being judged, by source (Prometheus, Datadog) and outcome (clear, firing, error).",
	}, []string{"source", "outcome"})
	incarnationCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "picchu_incarnation_count",
		Help: "Number of an app's builds in a target that are in a state.",
	}, []string{labelApp, labelTarget, labelState})
	oldestAge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "picchu_revision_oldest_age_seconds",
		Help: "Age in seconds of the oldest of an app's builds in a target that is in a state, and its tag (revision), as the original labelled it.",
	}, []string{labelApp, labelTarget, labelState, labelRevision})

	revisionFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picchu_revision_failed",
		Help: "Number of revisions Picchu failed.",
	}, []string{labelApp, labelTag})

	releaseControls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "picchu_release_controls_total",
		Help: "Manual controls of releases acted on, by app, target and action (pause, resume, promote, abort, retry, rollback).",
	}, []string{labelApp, labelTarget, "action"})
)

// latencies are the histograms, by app and target.
var latencies = []*prometheus.HistogramVec{
	gitCreateLatency, gitDeployLatency, gitCanaryLatency, gitPendingReleaseLatency, gitReleaseLatency,
	revisionDeployLatency, revisionCanaryLatency, revisionPendingReleaseLatency, revisionReleaseLatency,
	revisionRollbackLatency, deployLatency, canaryLatency, releaseLatency, reconcileInterval,
}

// collectors are every collector of the package, in registration order.
var collectors = []prometheus.Collector{
	gitCreateLatency,
	gitDeployLatency,
	gitCanaryLatency,
	gitPendingReleaseLatency,
	gitReleaseLatency,
	revisionDeployLatency,
	revisionCanaryLatency,
	revisionPendingReleaseLatency,
	revisionReleaseLatency,
	revisionRollbackLatency,
	deployLatency,
	canaryLatency,
	releaseLatency,
	reconcileInterval,
	stepLateness,
	releaseWeight,
	clusterWeight,
	alertChecks,
	incarnationCount,
	oldestAge,
	revisionFailed,
	releaseControls,
}

var (
	registerOnce sync.Once
	registerErr  error
)

// Register registers every collector of the package with reg. Only the first
// call registers; later calls return the first call's result, whatever reg
// they pass. A collector reg already holds counts as registered. It returns
// the first error met; it never panics. A nil reg is an error and does not
// count as the first call.
func Register(reg prometheus.Registerer) error {
	if reg == nil {
		return errors.New("releasemetrics: nil registerer")
	}
	registerOnce.Do(func() {
		registerErr = register(reg, collectors)
	})
	return registerErr
}

// register registers cs with reg, treating AlreadyRegisteredError as success,
// and returns the first other error.
func register(reg prometheus.Registerer, cs []prometheus.Collector) error {
	var first error
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				continue
			}
			if first == nil {
				first = err
			}
		}
	}
	return first
}

// Phase is a latency the release engine observes once per build.
type Phase int

const (
	// PhaseDeployed is a build having been deployed.
	PhaseDeployed Phase = iota
	// PhaseCanaried is a build having finished its canary.
	PhaseCanaried
	// PhasePendingRelease is a build waiting to be released.
	PhasePendingRelease
	// PhaseReleased is a build having been released.
	PhaseReleased
	// PhaseRolledBack is a failed build's traffic being back on the previous
	// release.
	PhaseRolledBack
)

// Build is what the latencies of one build are computed from.
type Build struct {
	// GitTime is when the build's commit was made; zero when unknown.
	GitTime time.Time
	// RevisionTime is when the build's Revision was created; zero when
	// unknown.
	RevisionTime time.Time
	// DeployingStart is when the build started deploying; zero when unknown.
	DeployingStart time.Time
	// CanaryStart is when the build started its canary; zero when unknown.
	CanaryStart time.Time
	// ReleaseStart is when the build started releasing; zero when unknown.
	ReleaseStart time.Time
	// FailingStart is when the build started failing; zero when unknown.
	FailingStart time.Time
	// Metrics is the build's record of what was already observed. It is
	// updated in place: each latency observed is remembered in it, in whole
	// seconds, so it is observed once. When nil, nothing is observed, since
	// nothing could be remembered.
	Metrics *picchuv1alpha1.ReleaseManagerRevisionMetricsStatus
}

// observeOnce observes now-start on h for (app, target) and remembers it, in
// whole seconds, in *field, unless *field is already set, start is zero or
// the latency is negative. It reports whether it observed.
func observeOnce(h *prometheus.HistogramVec, app, target string, field **int, start, now time.Time) bool {
	if *field != nil || start.IsZero() || now.IsZero() {
		return false
	}
	d := now.Sub(start)
	if d < 0 {
		return false
	}
	secs := int(d / time.Second)
	*field = &secs
	h.WithLabelValues(app, target).Observe(d.Seconds())
	return true
}

// ObserveCreated observes git_create_latency (RevisionTime-GitTime) once,
// remembering it in Metrics.GitCreateSecondsInt. Nothing is observed when
// either time is zero or the latency is negative.
func ObserveCreated(app, target string, b Build) {
	if b.Metrics == nil {
		return
	}
	observeOnce(gitCreateLatency, app, target, &b.Metrics.GitCreateSecondsInt, b.GitTime, b.RevisionTime)
}

// Observe records the latencies of reaching phase at now, each once: the
// field of b.Metrics that remembers it is set (whole seconds) and the
// histogram observed only if that field was nil. A latency whose start is
// zero, or that is negative, is neither observed nor remembered, so a later
// call may still observe it.
//
//   - PhaseDeployed: git_deploy (now-GitTime, GitDeploySecondsInt),
//     revision_deploy (now-RevisionTime, RevisionDeploySecondsInt) and
//     deploy_latency (now-DeployingStart, DeploySecondsInt).
//   - PhaseCanaried: git_canary (GitCanarySecondsInt), revision_canary
//     (RevisionCanarySecondsInt) and canary_latency (now-CanaryStart,
//     CanarySecondsInt).
//   - PhasePendingRelease: git_pending_release (GitPendingReleaseSecondsInt)
//     and revision_pending_release (RevisionPendingReleaseSecondsInt).
//   - PhaseReleased: git_release (GitReleaseSecondsInt), revision_release
//     (RevisionReleaseSecondsInt) and release_latency (now-ReleaseStart,
//     ReleaseSecondsInt).
//   - PhaseRolledBack: revision_rollback_latency (now-FailingStart,
//     RevisionRollbackSecondsInt).
//
// Every latency, the time spent in a phase included, has its own field in
// the status, so each is observed at most once per build however often the
// phase is reported. When b.Metrics is nil nothing is observed.
func Observe(app, target string, phase Phase, now time.Time, b Build) {
	m := b.Metrics
	if m == nil {
		return
	}
	// Each latency: its histogram, its field, and when it started.
	type latency struct {
		h     *prometheus.HistogramVec
		field **int
		start time.Time
	}
	var latencies []latency
	switch phase {
	case PhaseDeployed:
		latencies = []latency{{gitDeployLatency, &m.GitDeploySecondsInt, b.GitTime},
			{revisionDeployLatency, &m.RevisionDeploySecondsInt, b.RevisionTime},
			{deployLatency, &m.DeploySecondsInt, b.DeployingStart}}
	case PhaseCanaried:
		latencies = []latency{{gitCanaryLatency, &m.GitCanarySecondsInt, b.GitTime},
			{revisionCanaryLatency, &m.RevisionCanarySecondsInt, b.RevisionTime},
			{canaryLatency, &m.CanarySecondsInt, b.CanaryStart}}
	case PhasePendingRelease:
		latencies = []latency{{gitPendingReleaseLatency, &m.GitPendingReleaseSecondsInt, b.GitTime},
			{revisionPendingReleaseLatency, &m.RevisionPendingReleaseSecondsInt, b.RevisionTime}}
	case PhaseReleased:
		latencies = []latency{{gitReleaseLatency, &m.GitReleaseSecondsInt, b.GitTime},
			{revisionReleaseLatency, &m.RevisionReleaseSecondsInt, b.RevisionTime},
			{releaseLatency, &m.ReleaseSecondsInt, b.ReleaseStart}}
	case PhaseRolledBack:
		latencies = []latency{{revisionRollbackLatency, &m.RevisionRollbackSecondsInt, b.FailingStart}}
	}
	for _, l := range latencies {
		observeOnce(l.h, app, target, l.field, l.start, now)
	}
}

// key is one (app, target).
type key struct{ app, target string }

// gauges remembers, per (app, target), the label values of the series set on
// each gauge vector, so the ones no longer reported can be deleted. mu guards
// both the index and the changes to the vectors it indexes, so concurrent
// calls for one (app, target) leave index and vectors in agreement.
var (
	mu          sync.Mutex
	weightTags  = map[key]map[string]struct{}{}
	clusterTags = map[key]map[[2]string]struct{}{}
	countStates = map[key]map[string]struct{}{}
	ageStates   = map[key]map[[2]string]struct{}{}
)

// setAll sets vec's series (app, target, labels(v)...) to values[v] for
// each v and deletes those in index[k] that values lacks. It is called
// with mu held.
func setAll[K comparable, V int | int32 | float64](vec *prometheus.GaugeVec, index map[key]map[K]struct{}, k key,
	values map[K]V, labels func(K) []string) {
	series := func(v K) []string { return append([]string{k.app, k.target}, labels(v)...) }
	for v := range index[k] {
		if _, ok := values[v]; !ok {
			vec.DeleteLabelValues(series(v)...)
		}
	}
	if len(values) == 0 {
		delete(index, k)
		return
	}
	seen := make(map[K]struct{}, len(values))
	for v, x := range values {
		vec.WithLabelValues(series(v)...).Set(float64(x))
		seen[v] = struct{}{}
	}
	index[k] = seen
}

// one is the label value of a series labelled by one value beside app and
// target; tagCluster, of one labelled by tag and cluster.
func one(v string) []string     { return []string{v} }
func pair(v [2]string) []string { return v[:] }

// SetWeights sets the release weight of every build of (app, target), by tag,
// in percent, and deletes the series of tags not in weights.
func SetWeights(app, target string, weights map[string]int32) {
	mu.Lock()
	defer mu.Unlock()
	setAll(releaseWeight, weightTags, key{app, target}, weights, one)
}

// SetClusterWeights sets the release weight of every build of (app,
// target) in every cluster, by (tag, cluster), and deletes the series of
// the pairs not in weights.
func SetClusterWeights(app, target string, weights map[[2]string]int32) {
	mu.Lock()
	defer mu.Unlock()
	setAll(clusterWeight, clusterTags, key{app, target}, weights, pair)
}

// AlertCheck counts an alert check of source with outcome: "clear",
// "firing" or "error".
func AlertCheck(source, outcome string) {
	alertChecks.WithLabelValues(source, outcome).Inc()
}

// Oldest is the oldest build in a state: its tag and age.
type Oldest struct {
	Tag string
	Age time.Duration
}

// SetStates sets incarnation_count per state of (app, target) from counts and
// oldest_age_seconds per state from oldest, labelled with the oldest build's
// tag (revision). The series of states absent from counts are deleted from
// incarnation_count, and those absent from oldest, or of a build no longer
// the oldest in its state, from oldest_age_seconds: one series per state.
func SetStates(app, target string, counts map[string]int, oldest map[string]Oldest) {
	ages := make(map[[2]string]float64, len(oldest))
	for s, o := range oldest {
		ages[[2]string{s, o.Tag}] = o.Age.Seconds()
	}
	mu.Lock()
	defer mu.Unlock()
	k := key{app, target}
	setAll(incarnationCount, countStates, k, counts, one)
	setAll(oldestAge, ageStates, k, ages, pair)
}

// ObserveReconcileInterval observes the time between two runs of (app,
// target). A negative d is not observed.
func ObserveReconcileInterval(app, target string, d time.Duration) {
	if d < 0 {
		return
	}
	reconcileInterval.WithLabelValues(app, target).Observe(d.Seconds())
}

// Failed counts a revision Picchu failed.
func Failed(app, tag string) {
	revisionFailed.WithLabelValues(app, tag).Inc()
}

// Controlled counts a manual control of a release in target acted on.
func Controlled(app, target, action string) {
	releaseControls.WithLabelValues(app, target, action).Inc()
}

// ForgetRevision deletes the failure count of a build, when garbage
// collection deletes its Revision: the series of every failed tag would
// otherwise stay for as long as the process.
func ForgetRevision(app, tag string) {
	revisionFailed.DeleteLabelValues(app, tag)
}

// Forget deletes every series of (app, target): release weights,
// incarnation counts, oldest ages and the latency histograms. It is called
// when the ReleaseManager of (app, target) goes away, so that the series of
// apps that went do not pile up.
func Forget(app, target string) {
	mu.Lock()
	defer mu.Unlock()
	k := key{app, target}
	labels := prometheus.Labels{labelApp: app, labelTarget: target}
	for _, vec := range []*prometheus.GaugeVec{releaseWeight, clusterWeight, incarnationCount, oldestAge} {
		vec.DeletePartialMatch(labels)
	}
	releaseControls.DeletePartialMatch(labels)
	for _, vec := range latencies {
		vec.DeletePartialMatch(labels)
	}
	delete(weightTags, k)
	delete(clusterTags, k)
	delete(countStates, k)
	delete(ageStates, k)
}

// ObserveStepLateness observes that a ramp step in target, due at due, was
// on every live cluster at applied.
func ObserveStepLateness(target string, due, applied time.Time) {
	stepLateness.WithLabelValues(target).Observe(max(applied.Sub(due), 0).Seconds())
}

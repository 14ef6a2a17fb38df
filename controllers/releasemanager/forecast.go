package releasemanager

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/forecast"
	"github.com/medium/picchu/plan/applier"
)

// ForecastInput is what a forecast is made from: the app's record in one
// target and what the delivery cluster holds of it, as a run would read them.
type ForecastInput struct {
	// ReleaseManager is the app's in the target as recorded (with its
	// status); for an app the target has not run yet, one with its spec
	// (app, target, fleet) and namespace alone.
	ReleaseManager *picchuv1alpha1.ReleaseManager
	// Revisions are the app's Revisions. One not applied yet (no creation
	// time) counts as created at Now.
	Revisions []picchuv1alpha1.Revision
	// Clusters are the Clusters of the ReleaseManager's namespace: those
	// of its fleet are the target's.
	Clusters []picchuv1alpha1.Cluster
	// Tag is the build to forecast; the newest Revision's when empty.
	Tag string
	// Now is when the forecast starts.
	Now time.Time
	// Timeouts, Calendar and SyncPeriod are the operator's (their
	// defaults when zero or nil): the safety resync paces the runs while
	// nothing is due, as it paces the controller's.
	Timeouts   release.Timeouts
	Calendar   *schedule.Calendar
	SyncPeriod time.Duration
	// Horizon is how far ahead the forecast looks (DefaultForecastHorizon
	// when 0).
	Horizon time.Duration
	// ScaleDownDelay is the operator's (Reconciler.ScaleDownDelay): how
	// long the builds the release replaces keep their pods.
	ScaleDownDelay time.Duration
}

// DefaultForecastHorizon is how far ahead a forecast looks by default: far
// enough for a release schedule's windows, which open within two weeks.
const DefaultForecastHorizon = 30 * 24 * time.Hour

// maxForecastRuns bounds the runs of a forecast, whatever its horizon.
const maxForecastRuns = 100_000

// forecastAlertCheck is how often a run would read alerts: it sets no
// time of the forecast (no build is judged in it), only its runs' pace.
const forecastAlertCheck = 10 * time.Second

// Forecast forecasts the release of a build in a target: it runs the
// ReleaseManager's own decisions, run after run, on a virtual clock, from
// what the delivery cluster holds now, and records when each cluster takes
// each step, what holds the build and until when. Each run is what a run
// of the controller decides and records (decide, settle, report), with
// every check passing: no alert fires, every pre-flight check passes,
// every cluster answers and takes what it is sent at once, every build's
// pods are available, and an external test passes as soon as it runs. The
// next run comes when the report says it would.
func Forecast(in ForecastInput) (forecast.Forecast, error) {
	sim, err := newSimulation(in)
	if err != nil {
		return forecast.Forecast{}, err
	}
	out := sim.start(in.Now)
	horizon := cmp.Or(in.Horizon, DefaultForecastHorizon)
	now, rm := in.Now, sim.rm
	for run := 0; ; run++ {
		before := rm.Status
		s, next := sim.run(now)
		if run == 0 {
			out.Waves = s.forecastWaves(sim.last)
		}
		sim.observe(s, &out)
		st := statusOfTag(rm.Status, sim.tag)
		// Nothing moves by time alone: the run changed nothing, nothing is
		// due, and what holds the build has no end.
		still := sameStatus(&before, &rm.Status) && next >= sim.syncPeriod && len(sim.holds) > 0 &&
			!slices.ContainsFunc(sim.holds, func(h forecast.Hold) bool { return h.Until != nil })
		if sim.ended(&out, st, now, still) {
			if out.Outcome == forecast.NotReleased && len(sim.clusters) == 0 {
				out.Why += fmt.Sprintf(" (fleet %s has no Cluster in namespace %s)", rm.Spec.Fleet, rm.Namespace)
			}
			if out.Outcome == forecast.Released {
				out.Drains = sim.drains(now)
			}
			return out, nil
		}
		now = now.Add(next)
		switch {
		case now.Sub(in.Now) > horizon:
			out.Outcome, out.Why = forecast.Beyond, fmt.Sprintf("it is still %s %s from now", st.State.Current, forecast.Human(horizon))
			return out, nil
		case run >= maxForecastRuns:
			return out, fmt.Errorf("forecast of %s in %s: no end after %d runs", sim.tag, rm.Spec.Target, run)
		}
	}
}

// drains are the builds that served when the forecast was made and serve
// nothing once the build is released at now, with when their pods go.
func (sim *simulation) drains(now time.Time) []forecast.Drain {
	s := sim.snapshot(now)
	var out []forecast.Drain
	for _, inc := range s.incarnations {
		if inc.tag == sim.tag || !sim.served[inc.tag] || inc.status.CurrentPercent > 0 || inc.status.LastUpdated == nil {
			continue
		}
		delay := s.scaleDownDelayOf(inc)
		out = append(out, forecast.Drain{Tag: inc.tag, At: inc.status.LastUpdated.Add(delay), Delay: forecast.Human(delay)})
	}
	return out
}

// snapshot is the snapshot a run at now takes in the forecast.
func (sim *simulation) snapshot(now time.Time) *snapshot {
	s := simulated(sim.rm, sim.revs, sim.clusters, now)
	s.scaleDownDelay = sim.scaleDownDelay
	return s
}

// run is one run of the ReleaseManager at now, as a run of the controller
// decides, settles and reports it, every cluster taking all of it: it
// records the run's status in sim.rm, and returns the run's snapshot and
// how soon the next run comes.
func (sim *simulation) run(now time.Time) (*snapshot, time.Duration) {
	s := sim.snapshot(now)
	s.decide(sim.timeouts, sim.cal)
	o := report(s, settle(s, s.allApplied()), sim.syncPeriod, forecastAlertCheck)
	sim.rm.Status = o.status
	return s, o.next
}

// newSimulation prepares a forecast of in: copies of what it reads, the
// build, the fleet's Clusters, the operator's settings.
func newSimulation(in ForecastInput) (*simulation, error) {
	if in.ReleaseManager == nil {
		return nil, errors.New("forecast: no ReleaseManager")
	}
	sim := &simulation{rm: in.ReleaseManager.DeepCopy(), timeouts: withDefaults(in.Timeouts), cal: in.Calendar,
		syncPeriod: cmp.Or(in.SyncPeriod, DefaultSyncPeriod), last: map[string]int32{}, served: map[string]bool{},
		scaleDownDelay: scaleDownDelay(in.ScaleDownDelay)}
	for _, st := range sim.rm.Status.Revisions {
		sim.served[st.Tag] = st.CurrentPercent > 0
	}
	if sim.cal == nil {
		var err error
		if sim.cal, err = schedule.New(true); err != nil {
			return nil, fmt.Errorf("forecast: %w", err)
		}
	}
	sim.revs = make([]picchuv1alpha1.Revision, len(in.Revisions))
	for i := range in.Revisions {
		sim.revs[i] = *in.Revisions[i].DeepCopy()
		if sim.revs[i].CreationTimestamp.IsZero() {
			sim.revs[i].CreationTimestamp.Time = in.Now
		}
	}
	var err error
	if sim.tag, err = forecastTag(sim.rm, sim.revs, in.Tag); err != nil {
		return nil, err
	}
	for _, cl := range in.Clusters {
		if cl.Namespace == sim.rm.Namespace && cl.Labels[picchuv1alpha1.LabelFleet] == sim.rm.Spec.Fleet {
			sim.clusters = append(sim.clusters, *cl.DeepCopy())
		}
	}
	return sim, nil
}

// start is the forecast before its first run, made at now: the build and
// where it is, and what the forecast assumes.
func (sim *simulation) start(now time.Time) forecast.Forecast {
	rm := sim.rm
	out := forecast.Forecast{App: rm.Spec.App, Target: rm.Spec.Target, Fleet: rm.Spec.Fleet, Tag: sim.tag, Made: now, State: "new",
		Assumed: []string{"every cluster answers and runs the build's pods at once", "no alert fires and every pre-flight check passes"}}
	if assumeTestPasses(sim.revs, sim.tag, rm.Spec.Target) {
		out.Assumed = append(out.Assumed, "its external test passes at once")
	}
	if st := statusOfTag(rm.Status, sim.tag); st != nil {
		out.State = displayState(st.State.Current)
		for _, c := range st.Clusters {
			sim.last[c.Name] = c.Percent
		}
	}
	return out
}

// forecastTag is the build to forecast: tag, which a Revision of the app
// must target the target with, or the newest such build.
func forecastTag(rm *picchuv1alpha1.ReleaseManager, revs []picchuv1alpha1.Revision, tag string) (string, error) {
	for _, inc := range incarnationsOf(rm, revs) {
		if inc.revision != nil && (tag == "" || inc.tag == tag) {
			return inc.tag, nil
		}
	}
	if tag == "" {
		return "", fmt.Errorf("no Revision of %s targets %s", rm.Spec.App, rm.Spec.Target)
	}
	return "", fmt.Errorf("no Revision of %s with tag %s targets %s", rm.Spec.App, tag, rm.Spec.Target)
}

// assumeTestPasses marks the external test of tag in target as passed,
// when it has one that has not, and says whether it did.
func assumeTestPasses(revs []picchuv1alpha1.Revision, tag, target string) bool {
	for i := range revs {
		if revs[i].Spec.App.Tag != tag {
			continue
		}
		for j := range revs[i].Spec.Targets {
			t := &revs[i].Spec.Targets[j].ExternalTest
			if revs[i].Spec.Targets[j].Name == target && t.Enabled && !(t.Completed && t.Succeeded) {
				t.Started, t.Completed, t.Succeeded = true, true, true
				return true
			}
		}
	}
	return false
}

// simulated is the snapshot a run would take at now with every check
// passing: every enabled cluster of the fleet answers, and runs every
// build with all the pods it could want.
func simulated(rm *picchuv1alpha1.ReleaseManager, revs []picchuv1alpha1.Revision, clusters []picchuv1alpha1.Cluster, now time.Time) *snapshot {
	s := &snapshot{rm: rm, now: now, incarnations: incarnationsOf(rm, revs)}
	for _, inc := range s.incarnations {
		// No alert source holds it: it passes every check.
		inc.unjudgeable = true
	}
	for i := range clusters {
		fc, err := fleetMember(&clusters[i])
		switch {
		case fc == nil:
			continue
		case err != nil:
			fc.problem = err.Error()
		default:
			fc.conn = &applier.Cluster{}
		}
		fc.freeze = schedule.Frozen(fc.obj.Spec.Freezes, now)
		s.fleet = append(s.fleet, fc)
	}
	slices.SortFunc(s.fleet, func(a, b *fleetCluster) int { return strings.Compare(a.obj.Name, b.obj.Name) })
	s.assignWaves()
	s.observation = make(release.Observation, len(s.fleet))
	for i, fc := range s.fleet {
		tags := map[string]release.Replicas{}
		for _, inc := range s.incarnations {
			if inc.target != nil {
				n := plentyOf(inc.target.Scale)
				tags[inc.tag] = release.Replicas{Desired: n, Available: n}
			}
		}
		s.observation[i] = release.ClusterObservation{Name: fc.obj.Name, Live: fc.live, Observed: fc.conn != nil, Tags: tags}
	}
	return s
}

// plentyOf is more pods of a build than any gate asks one cluster for.
func plentyOf(scale picchuv1alpha1.ScaleInfo) int32 {
	return max(scale.Max, release.DefaultReplicas(scale), ptr.Deref(scale.Min, 0), 1)
}

// allApplied is every answering cluster taking all of a run.
func (s *snapshot) allApplied() acted {
	var results applier.Results
	for _, fc := range s.fleet {
		if fc.conn != nil {
			results = append(results, applier.Result{Cluster: fc.obj.Name})
		}
	}
	return acted{results: results}
}

// forecastWaves are the target's waves and their clusters, each cluster
// with the percent it has (from).
func (s *snapshot) forecastWaves(from map[string]int32) []forecast.Wave {
	out := make([]forecast.Wave, s.waveCount())
	bakes := s.bakes()
	for w := range out {
		out[w].Name = s.waveName(w)
		if w < len(bakes) && w+1 < len(out) && bakes[w] > 0 {
			out[w].Bake = forecast.Human(bakes[w])
		}
	}
	for _, fc := range s.fleet {
		out[fc.wave].Clusters = append(out[fc.wave].Clusters, forecast.Cluster{Name: fc.obj.Name, Standby: !fc.live, From: from[fc.obj.Name]})
	}
	return out
}

// simulation is what a forecast runs on, and keeps from run to run.
type simulation struct {
	// rm is the ReleaseManager whose status each run rewrites; revs and
	// clusters are the app's Revisions and the fleet's Clusters.
	rm         *picchuv1alpha1.ReleaseManager
	revs       []picchuv1alpha1.Revision
	clusters   []picchuv1alpha1.Cluster
	tag        string
	timeouts   release.Timeouts
	cal        *schedule.Calendar
	syncPeriod time.Duration
	// last is the percent each cluster last took.
	last map[string]int32
	// holds are those of the last run.
	holds []forecast.Hold
	// scaleDownDelay is the operator's; served are the builds that took
	// traffic when the forecast was made.
	scaleDownDelay time.Duration
	served         map[string]bool
}

// scaleDownDelay is the scale-down delay a Reconciler whose ScaleDownDelay
// is d runs with (setDefaults).
func scaleDownDelay(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultScaleDownDelay
	case d < 0:
		return 0
	}
	return d
}

// observe records a run's steps and holds of the build forecast.
func (sim *simulation) observe(s *snapshot, out *forecast.Forecast) {
	st := statusOfTag(s.rm.Status, sim.tag)
	if st != nil {
		for _, c := range st.Clusters {
			if c.Percent == sim.last[c.Name] || c.LastUpdated == nil {
				continue
			}
			sim.last[c.Name] = c.Percent
			for w := range out.Waves {
				for i := range out.Waves[w].Clusters {
					if cl := &out.Waves[w].Clusters[i]; cl.Name == c.Name {
						cl.Steps = append(cl.Steps, forecast.Step{Percent: c.Percent, At: c.LastUpdated.Time})
					}
				}
			}
		}
	}
	inc := s.incarnation(sim.tag)
	if inc == nil {
		return
	}
	now := sim.holdsOf(s, inc)
	for _, h := range now {
		i := slices.IndexFunc(sim.holds, func(o forecast.Hold) bool {
			return o.Cause == h.Cause && o.Detail == h.Detail && ptr.Equal(o.Until, h.Until)
		})
		if i < 0 {
			out.Holds = append(out.Holds, h)
		}
	}
	sim.holds = now
}

// holdsOf are what hold the build this run, as its decisions say: a
// canary's time, the release schedule, a freeze, a wave's bake, a pause.
func (sim *simulation) holdsOf(s *snapshot, inc *incarnation) []forecast.Hold {
	var out []forecast.Hold
	hold := func(cause, detail string, until time.Time) {
		h := forecast.Hold{Cause: cause, Detail: detail, From: s.now}
		if !until.IsZero() {
			h.Until = ptr.To(until)
		}
		out = append(out, h)
	}
	step, state := inc.step, inc.step.State
	waiting := state == release.Deployed || state == release.Tested || state == release.PendingRelease
	switch {
	case inc.control.paused && (state.RunsCanary() || state.IsPendingRelease() || state.IsRamping()):
		hold(forecast.Pause, "paused by "+inc.control.by, time.Time{})
	case state.RunsCanary() && !step.Due.IsZero():
		hold(forecast.Canary, fmt.Sprintf("at %d %% for %s", inc.target.Canary.Percent,
			forecast.Human(time.Duration(inc.target.Canary.TTL)*time.Second)), step.Due)
	case waiting && s.frozenWave(0).Open:
		fz := s.frozenWave(0)
		hold(forecast.Freeze, s.frozenIn(0), fz.Until)
	case state.IsPendingRelease() && step.Due.After(s.now):
		sched := inc.target.Release.Schedule
		hold(forecast.Schedule, fmt.Sprintf("%s schedule: %s", cmp.Or(string(sched), string(picchuv1alpha1.ScheduleInhumane)),
			sim.cal.Closed(sched, s.now)), step.Due)
	case inc.ramping && inc.ramp.Waiting == "frozen":
		fz := s.frozenWave(inc.wave.Wave)
		hold(forecast.Freeze, s.frozenIn(inc.wave.Wave), fz.Until)
	case (state == release.Deployed || state == release.Tested) && !inc.eligible:
		hold(forecast.Ineligible, "release.eligible is false: it takes no traffic until its ttl ends", step.Due)
	case inc.ramping && inc.ramp.Waiting == "bake":
		hold(forecast.Bake, fmt.Sprintf("wave %s waits out the bake of wave %s", s.waveName(inc.wave.Wave), s.waveName(inc.wave.Wave-1)), inc.ramp.Due)
	}
	return out
}

// frozenIn names the live clusters of wave w in a freeze, with the freeze.
func (s *snapshot) frozenIn(w int) string {
	var names []string
	for _, fc := range s.fleet {
		if fc.wave == w && fc.live && fc.freeze.Open {
			names = append(names, fmt.Sprintf("%s: %s", fc.obj.Name, fc.freeze.Name))
		}
	}
	return strings.Join(names, ", ")
}

// ended says whether the release forecast has ended after a run at now,
// recording how: released, out of release, or held with no end (still).
func (sim *simulation) ended(out *forecast.Forecast, st *picchuv1alpha1.ReleaseManagerRevisionStatus, now time.Time, still bool) bool {
	if st == nil {
		out.Outcome, out.Why = forecast.NotReleased, "its record is gone"
		return true
	}
	state := release.State(st.State.Current)
	switch {
	case state.IsReleased():
		out.Outcome, out.Finish = forecast.Released, ptr.To(now)
	case !st.ReleaseEligible && (state.IsRetiring() || state.IsRetired()):
		out.Outcome, out.Why = forecast.NotReleased, "it is not eligible for release, and retires at "+now.UTC().Format(time.RFC3339)
	case state.IsFailed() || state.IsTimedOut() || state.IsDeleted() || state == release.Deleting:
		out.Outcome, out.Why = forecast.NotReleased, "it goes "+string(state)
	case still && slices.ContainsFunc(sim.holds, func(h forecast.Hold) bool { return h.Cause == forecast.Ineligible }):
		out.Outcome, out.Why = forecast.NotReleased, "it is not eligible for release, and its ttl never ends"
	case still:
		out.Outcome, out.Why = forecast.Held, sim.holds[0].Detail
	default:
		return false
	}
	return true
}

// incarnation is the build tag, or nil.
func (s *snapshot) incarnation(tag string) *incarnation {
	for _, inc := range s.incarnations {
		if inc.tag == tag {
			return inc
		}
	}
	return nil
}

// statusOfTag is the status entry of tag, or nil.
func statusOfTag(st picchuv1alpha1.ReleaseManagerStatus, tag string) *picchuv1alpha1.ReleaseManagerRevisionStatus {
	for i := range st.Revisions {
		if st.Revisions[i].Tag == tag {
			return &st.Revisions[i]
		}
	}
	return nil
}

// forecastFinish records in status.releasing when the releasing build (one
// in its canary or its ramp) should be released: forecast when its release
// starts and again when what holds it changes (its state, its wave, a
// pause, a freeze), and carried over from before otherwise, so that a run
// that changes nothing else writes nothing.
func (r *Reconciler) forecastFinish(s *snapshot, before, after *picchuv1alpha1.ReleaseManagerStatus) {
	rel := after.Releasing
	if rel == nil {
		return
	}
	st := statusOfTag(*after, rel.Tag)
	if st == nil || !(release.State(st.State.Current).RunsCanary() || release.State(st.State.Current).IsRamping()) {
		return
	}
	if prev := before.Releasing; prev != nil && prev.Tag == rel.Tag && !holdChanged(before, after, rel.Tag) {
		// Also when the last forecast had no finish: nothing that holds
		// the build changed, and a forecast that runs to its horizon is
		// not made again at every run.
		rel.ForecastFinish = prev.ForecastFinish
		return
	}
	rm := s.rm.DeepCopy()
	rm.Status = *after.DeepCopy()
	in := ForecastInput{ReleaseManager: rm, Tag: rel.Tag, Now: s.now, Timeouts: r.Timeouts, Calendar: r.Calendar, SyncPeriod: r.SyncPeriod,
		ScaleDownDelay: cmp.Or(r.ScaleDownDelay, NoScaleDownDelay)}
	for _, inc := range s.incarnations {
		if inc.revision != nil {
			in.Revisions = append(in.Revisions, *inc.revision)
		}
	}
	for _, fc := range s.fleet {
		in.Clusters = append(in.Clusters, *fc.obj)
	}
	f, err := Forecast(in)
	if err != nil || f.Finish == nil {
		// Held with no end, or beyond the horizon: no finish to forecast.
		return
	}
	// Stored to the second, as every metav1.Time is.
	finish := metav1.NewTime(f.Finish.Round(time.Second))
	rel.ForecastFinish = &finish
}

// holdChanged says what holds the build tag changed from before to after:
// its state, its wave, its pause, or the fleet's freezes.
func holdChanged(before, after *picchuv1alpha1.ReleaseManagerStatus, tag string) bool {
	a, b := statusOfTag(*before, tag), statusOfTag(*after, tag)
	if a == nil || b == nil {
		return true
	}
	frozen := func(st *picchuv1alpha1.ReleaseManagerStatus) string {
		if c := meta.FindStatusCondition(st.Conditions, picchuv1alpha1.ConditionFrozen); c != nil {
			return string(c.Status) + c.Message
		}
		return ""
	}
	return a.State.Current != b.State.Current || a.Wave != b.Wave || (a.Paused == nil) != (b.Paused == nil) || frozen(before) != frozen(after)
}

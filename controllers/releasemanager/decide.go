package releasemanager

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
)

// decision is what a run decided for one build, beyond its step.
type decision struct {
	step release.Step
	// weight is the percent of traffic the build takes after this run: in
	// each wave (weights), the highest of them (weight). earned is, in
	// each wave, the part of it its own state granted it
	// (release.Allocation.Earned): its peak counts nothing else.
	weight  int32
	weights []int32
	earned  []int32
	// wave is the wave a releasing build ramps in after this run.
	wave release.WaveStep
	// eligible and peak are its releaseEligible and peakPercent after this run.
	eligible bool
	peak     int32
	// ramping says the build is the one whose traffic may grow; ramp is
	// its ramp's decision.
	ramping bool
	ramp    release.RampStep
	// passed are the states the build went through this run on its way
	// to its step's (release.Advance).
	passed []release.State
	// recommissioned says the build was brought back to serve.
	recommissioned bool
	// verdict is what the build's alerts say, and firing the alerts that
	// fire (set by judge, before the decisions).
	verdict release.Verdict
	firing  []string
	// firingIn are, of the firing alerts, those that name a cluster of
	// the fleet, by cluster (the sources ask for the fleet's alerts alone:
	// appScope).
	firingIn map[string][]string
	// clusterVerdicts say what the judgment holds against the build on a
	// cluster this run (no evidence, an outlier), by cluster.
	clusterVerdicts map[string]string
	// comparison is the figures of a baseline comparison that fails or
	// holds the build this run.
	comparison string
	// scale is how the build is sized this run: the one place that says
	// whether it ramps, read by both its ReplicaSet and autoscaler plans.
	scale release.ScalePlan
	// rollbackTarget says the app's rollback names this build; superseded
	// says it takes the build out of release; rollbackIgnored says why the
	// build's rollback request is ignored from this run on ("" when not).
	rollbackTarget, superseded bool
	rollbackIgnored            string
}

// decide runs the pure decisions: each build's next state, then the
// traffic, then whether an older build must be brought back.
func (s *snapshot) decide(t release.Timeouts, cal *schedule.Calendar) {
	s.rollBack()
	incs, facts := s.advance(t, cal)
	// A cluster that cannot be reached holds steps up, never a rollback.
	s.rollback = release.RollingBack(incs)
	s.allocate(incs)
	if !s.bringBack() {
		s.recommission()
	}
	s.afterTraffic(t, facts)
	for _, inc := range s.incarnations {
		if inc.target != nil {
			inc.scale = s.scale(inc)
		}
	}
}

// advance decides each build's next step from its facts
// (release.Advance), and returns the builds as the traffic's allocation
// sees them, with the facts each step came from.
func (s *snapshot) advance(t release.Timeouts, cal *schedule.Calendar) ([]release.Incarnation, []release.Facts) {
	incs := make([]release.Incarnation, len(s.incarnations))
	facts := make([]release.Facts, len(s.incarnations))
	for i, inc := range s.incarnations {
		f := s.facts(inc, cal)
		// A rollback takes the build out of release, deploying or not.
		f.Eligible = f.Eligible && !inc.superseded
		facts[i] = f
		inc.step, inc.passed = release.Advance(f, t, inc.mayEnter)
		if len(inc.passed) > 0 && inc.step.State.IsRamping() {
			inc.rampFromNothing(s.now)
		}
		inc.eligible, inc.peak = f.Eligible, inc.status.PeakPercent
		incs[i] = release.Incarnation{Tag: inc.tag, State: inc.step.State, Percent: inc.status.CurrentPercent, Next: inc.status.CurrentPercent,
			Abort: inc.aborts()}
	}
	return incs, facts
}

// allocate gives each build its traffic in each wave
// (release.AllocateWaves) from its state (incs) and its ramp's next step,
// and records the step it ramps by.
func (s *snapshot) allocate(incs []release.Incarnation) {
	builds := make([]release.WaveBuild, len(s.incarnations))
	ramps := make([][]release.RampStep, len(s.incarnations))
	for i, inc := range s.incarnations {
		builds[i], ramps[i] = s.waveBuild(inc, incs[i])
	}
	alloc := release.AllocateWaves(builds, s.waveCount())
	for i, inc := range s.incarnations {
		inc.weights, inc.earned = alloc.Percent[i], alloc.Earned[i]
		inc.weight = release.Highest(inc.weights)
		if w := rampingWave(alloc.Ramping, i, inc.wave.Wave); w >= 0 {
			inc.ramping = true
			if ramps[i] != nil {
				inc.ramp = ramps[i][w]
			}
		}
		if alloc.LostEligibility[i] {
			inc.eligible = false
		}
	}
}

// waveBuild is build inc, as allocated, in the waves of its target: its
// percents and next steps in each wave, its canary and max; and the steps
// of its ramp in each wave (none without a target). It sets the wave the
// build goes to next.
func (s *snapshot) waveBuild(inc *incarnation, allocated release.Incarnation) (release.WaveBuild, []release.RampStep) {
	percents := s.wavePercents(inc)
	inc.wave = s.nextWave(inc, percents)
	b := release.WaveBuild{Incarnation: allocated, Wave: inc.wave.Wave, Percents: percents, Nexts: slices.Clone(percents)}
	if inc.target == nil {
		return b, nil
	}
	b.Canary, b.Max = inc.target.Canary.Percent, inc.target.Release.Max
	ramps := s.ramps(inc, percents)
	for w, ramp := range ramps {
		b.Nexts[w] = ramp.Next
	}
	return b, ramps
}

// afterTraffic carries each build's step on from what this run's traffic
// records (release.AfterTraffic), in this run rather than the next: a ramp
// that reaches its maximum is released once the clusters take it, and the
// build it took the last traffic from leaves. A target that releases in
// waves reaches its maximum wave by wave: its builds' peaks are not
// passed on. A build brought back or recommissioned this run keeps its step.
func (s *snapshot) afterTraffic(t release.Timeouts, facts []release.Facts) {
	waves := s.waveCount() > 1
	for i, inc := range s.incarnations {
		if inc.target == nil || inc.recommissioned || inc.rollbackTarget {
			continue
		}
		peak := release.Highest(inc.earned)
		if s.rampDone(inc) {
			// Its ramp is at its max, and only newer builds' canaries
			// take the rest: its release is done.
			peak = release.MaxPercent(inc.target.Release)
			inc.peak = max(inc.peak, peak)
		}
		if waves {
			peak = 0
		}
		step := release.AfterTraffic(facts[i], t, inc.step, peak, inc.eligible)
		if step.Then != "" && !inc.mayEnter(step.Then) {
			continue
		}
		inc.step = step
	}
}

// rampDone says the build's ramp has stepped to its release.max and the
// build takes all the traffic the canaries of newer builds leave: its
// release is done, though a canary holds it under its max. (A target that
// releases in waves is released wave by wave.)
func (s *snapshot) rampDone(inc *incarnation) bool {
	if !inc.ramping || !(inc.step.State.IsRamping() || inc.step.State.IsReleased()) || s.waveCount() > 1 || inc.weight <= 0 ||
		inc.ramp.Next < release.MaxPercent(inc.target.Release) {
		return false
	}
	taken := inc.weight
	for _, other := range s.incarnations {
		if other != inc && other.step.State == release.Canarying {
			taken += other.weight
		}
	}
	return taken >= 100
}

// aborts says a failing build gives its traffic back in one step on every
// cluster: its target's release.rollback is immediate.
func (inc *incarnation) aborts() bool {
	return inc.target != nil && inc.target.Release.Rollback == picchuv1alpha1.RollbackImmediate
}

// mayEnter says the build may pass on to state in this run: a state in
// which builds are judged only once its alerts were checked (this run,
// or it was in one already), or when nothing could judge it.
func (inc *incarnation) mayEnter(state release.State) bool {
	return !state.IsJudged() || inc.verdict != release.Unjudged ||
		release.State(inc.status.State.Current).IsJudged() || inc.unjudgeable
}

// rampFromNothing records, for a build that passed on to its release
// this run, what the runs of the states it passed through would have: a
// build waiting between its canary and its release takes no traffic of its
// own (Allocate gives it none), so its ramp starts from nothing, now. Its
// first step comes at once, on a clock of its own: a canary's percent is
// never counted as a ramp step held.
func (inc *incarnation) rampFromNothing(now time.Time) {
	stamp := picchuv1alpha1.NewTimestamp(now)
	inc.status.CurrentPercent, inc.status.LastUpdated = 0, &stamp
	inc.status.WavePercents = make([]int32, len(inc.status.WavePercents))
}

// ramps are a build's ramp steps in each wave: it waits out the bake of
// the wave before in the wave it was just released to.
func (s *snapshot) ramps(inc *incarnation, percents []int32) []release.RampStep {
	capacity := s.capacity(inc)
	out := make([]release.RampStep, s.waveCount())
	for w := range out {
		if w == inc.wave.Wave && !inc.wave.Baking.IsZero() {
			// Released in the wave before: it waits out that wave's bake.
			out[w] = release.RampStep{Next: percents[w], Due: inc.wave.Baking, Waiting: "bake"}
			continue
		}
		out[w] = release.Ramp(release.RampInput{
			Now: s.now, Release: inc.target.Release, Percent: percents[w], Changed: stampOf(inc.status.LastUpdated),
			Hold: (s.holdsWave(w) && !s.rollback) || inc.verdict.Holds(), Capacity: capacity,
			Paused: inc.control.paused, Skip: inc.promotePending(), Full: inc.rampsFull(),
			Frozen:    s.frozenWave(w).Open && !s.rollback,
			Preflight: percents[w] <= 0 && s.preflightHolds(inc, w) && !s.rollback,
		})
	}
	return out
}

// scale is how a build is sized this run, after its step and traffic.
func (s *snapshot) scale(inc *incarnation) release.ScalePlan {
	return release.Scale(release.ScaleInput{
		Step: inc.step, Scale: inc.target.Scale, Release: inc.target.Release, Canary: inc.target.Canary.Percent,
		Percent: inc.weight, Others: s.others(inc), Factors: s.liveFactorsOf(inc),
		Desired: s.observationOf(inc).Live(inc.tag).Desired, TakingBack: s.rollback && inc.ramping && !inc.step.State.IsRollingBack(),
		Full: inc.rampsFull() || (s.rollback && inc.ramping && s.aborting()),
	})
}

// others are the builds other than inc that take traffic, with the pods
// this run observes them running on the live clusters (never a recorded
// count, which lags a run behind).
func (s *snapshot) others(inc *incarnation) []release.Serving {
	var out []release.Serving
	for _, o := range s.incarnations {
		if o == inc || o.status.CurrentPercent <= 0 {
			continue
		}
		out = append(out, release.Serving{Percent: o.status.CurrentPercent, Pods: s.observation.Live(o.tag).Available})
	}
	return out
}

// facts gathers what Next decides a build's step from: what its status
// records and what holds it, then what its Revision asks for.
func (s *snapshot) facts(inc *incarnation, cal *schedule.Calendar) release.Facts {
	f := s.recordedFacts(inc)
	if inc.revision != nil {
		s.revisionFacts(&f, inc, cal)
	}
	return f
}

// recordedFacts are a build's facts from its status and this run's
// observations: its state, traffic and verdict, the manual controls, and
// what holds it (a freeze of the first wave, where a canary and a ramp
// start; its preflights).
func (s *snapshot) recordedFacts(inc *incarnation) release.Facts {
	st := inc.status
	f := release.Facts{
		Now:            s.now,
		State:          release.State(st.State.Current),
		Since:          stampOf(st.State.LastUpdated),
		RevisionExists: inc.revision != nil,
		Deployment:     s.observationOf(inc).Deployment(inc.tag),
		Percent:        st.CurrentPercent,
		PeakPercent:    st.PeakPercent,
		Eligible:       st.ReleaseEligible,
		TTL:            time.Duration(st.TTL) * time.Second,
		Created:        timeOf(st.RevisionTimestamp),
		Verdict:        inc.verdict,
		WavesLeft:      s.wavesLeft(inc),
		Control:        release.Control{Paused: inc.control.paused, Promote: inc.promotePending()},
		DrainEnd:       s.drainEnd(inc),
	}
	if fz := s.frozenWave(0); fz.Open {
		f.Frozen, f.FrozenUntil = true, fz.Until
	}
	if len(inc.preflight) > 0 {
		f.Preflight = s.preflightHolds(inc, 0)
		f.DeployHeld = inc.deployHeld()
		f.PreflightRetry = s.preflightRetry()
	}
	return f
}

// revisionFacts adds to f what build inc's Revision says: whether it is
// failed, when it was created, its release settings, its external test,
// its canary and, in a state that consults it, its release window.
func (s *snapshot) revisionFacts(f *release.Facts, inc *incarnation, cal *schedule.Calendar) {
	target := inc.target
	f.Failed = inc.revision.Spec.Failed
	f.Created = inc.revision.CreationTimestamp.Time
	if f.State.IsDeploying() {
		// Until a build is deployed, its release settings follow the Revision.
		f.Eligible, f.TTL = target.Release.Eligible, time.Duration(target.Release.TTL)*time.Second
	}
	f.MaxPercent = target.Release.Max
	test := target.ExternalTest
	f.Test = release.ExternalTest{
		Enabled: test.Enabled, Started: test.Started, Completed: test.Completed, Succeeded: test.Succeeded,
		LastUpdated: timeOf(test.LastUpdated),
	}
	if test.Timeout != nil {
		f.Test.Timeout = test.Timeout.Duration
	}
	f.Canary = release.Canary{
		Percent: target.Canary.Percent, TTL: time.Duration(target.Canary.TTL) * time.Second,
		HasSLOs: len(target.ServiceLevelObjectives) > 0, Start: inc.canaryStart(s.now),
	}
	// A deploy that finishes may pass on to a state that consults it
	// (release.Advance).
	if f.State.ConsultsSchedule() || (f.State == release.Deploying && f.Deployment == release.IsDeployed) {
		f.Window = s.window(inc, f.Created, cal)
	}
}

// window is whether build inc's release schedule lets it release now, and
// when it next does if not. A build that already serves all the traffic
// (an app's first build) moves none by its release: no schedule holds it.
func (s *snapshot) window(inc *incarnation, created time.Time, cal *schedule.Calendar) release.Window {
	st, target := inc.status, inc.target
	sched := target.Release.Schedule
	var w release.Window
	w.Open = st.CurrentPercent >= 100 || cal.CanRelease(sched, st.PeakPercent, target.Canary.Percent, created, s.now)
	if !w.Open {
		w.Opens, _ = cal.NextWindow(sched, s.now)
	}
	return w
}

// capacity is the capacity gate's input for a build. A build without an
// autoscaler runs its full scale.default share from deployment on, so the
// gate asks for that share to be available: 90 % of it for the next
// percent. A build with an autoscaler is sized from the other builds' pods
// while it ramps (release.RampReplicas), and the gate asks for the same
// base capacity (release.BaseCapacity). Only the live clusters that run
// the build count (observationOf).
func (s *snapshot) capacity(inc *incarnation) release.CapacityInput {
	factors := s.liveFactorsOf(inc)
	in := release.CapacityInput{
		LiveClusters: len(factors), Factors: factors,
		Available: s.observationOf(inc).Live(inc.tag).Available, Observed: s.liveObservedOf(inc),
	}
	if release.AutoscalerKind(inc.target.Scale) == "" {
		count := release.DefaultReplicas(inc.target.Scale)
		in.ScaleMin, in.ScaleMax = &count, max(inc.target.Scale.Max, count)
		return in
	}
	_, hi := release.AutoscalerRange(inc.target.Scale)
	// An unset min counts as 0, so the gate falls back to scale.max as the
	// ramp's sizing does.
	in.ScaleMin, in.ScaleMax, in.HasAutoscaler = ptr.To(ptr.Deref(inc.target.Scale.Min, 0)), hi, true
	in.Others = s.others(inc)
	return in
}

// recommission brings back the newest retired build that did not fail when
// no healthy build that ever took traffic is left: the original's automatic
// rollback. It is released at once (its peak is set to 100) and ramps back
// at its own pace.
func (s *snapshot) recommission() {
	for _, inc := range s.incarnations {
		if inc.revision != nil && inc.step.State.IsServing() && !inc.revision.Spec.Failed && inc.peak > 0 {
			return
		}
	}
	for _, inc := range s.incarnations {
		st := inc.step.State
		if inc.revision == nil || inc.revision.Spec.Failed || inc.superseded || (!st.IsRetired() && !st.IsRetiring()) {
			continue
		}
		if inc.status.PeakPercent == 0 {
			// Never released: nothing to roll back to.
			continue
		}
		inc.eligible, inc.peak, inc.recommissioned = true, 100, true
		return
	}
}

// timeOf is t's time, zero when t is nil.
func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// stampOf is t's time, zero when t is nil.
func stampOf(t *picchuv1alpha1.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

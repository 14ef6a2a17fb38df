package release

import (
	"time"
)

// State is the state of an incarnation, as stored in the ReleaseManager's
// status.revisions[].state.current. The names are the original's.
type State string

// The incarnation states.
const (
	Created        State = "created"
	Deploying      State = "deploying"
	Deployed       State = "deployed"
	PendingTest    State = "pendingtest"
	Testing        State = "testing"
	Tested         State = "tested"
	Canarying      State = "canarying"
	Canaried       State = "canaried"
	PendingRelease State = "pendingrelease"
	Releasing      State = "releasing"
	Released       State = "released"
	Retiring       State = "retiring"
	Retired        State = "retired"
	Failing        State = "failing"
	Failed         State = "failed"
	Deleting       State = "deleting"
	Deleted        State = "deleted"
	TimingOut      State = "timingout"
)

// Action is what the reconciler must do on every cluster of the fleet for
// an incarnation in its (next) state.
type Action string

const (
	// Hold does nothing to the incarnation's objects.
	Hold Action = ""
	// Sync applies the incarnation's objects: config copies and ReplicaSet.
	Sync Action = "sync"
	// Retire scales the incarnation's ReplicaSet to zero and removes its
	// autoscaler objects; its config copies stay, so it can come back.
	Retire Action = "retire"
	// Delete removes every object of the incarnation.
	Delete Action = "delete"
)

// Deployment is what the fleet's ReplicaSets say about a build.
type Deployment int

const (
	// Unknown: a live cluster could not be observed, so nothing is concluded.
	Unknown Deployment = iota
	// NotDeployed: some live cluster lacks available replicas of the build.
	NotDeployed
	// IsDeployed: every live cluster runs the build with every desired
	// replica available (summed over the live clusters), at least one each.
	IsDeployed
)

// ExternalTest is what an outside test runner reported on the Revision.
type ExternalTest struct {
	Enabled, Started, Completed, Succeeded bool
	// LastUpdated is when the runner last reported; zero when never.
	LastUpdated time.Time
	// Timeout is how long the test may take after LastUpdated (or after the
	// test state was entered, without a report); 0 takes Timeouts.Testing.
	Timeout time.Duration
}

// failed says the test ended without success.
func (e ExternalTest) failed() bool { return e.Enabled && e.Completed && !e.Succeeded }

// Canary is the canary of a build.
type Canary struct {
	// Percent and TTL are the Revision's canary.percent and canary.ttl.
	Percent int32
	TTL     time.Duration
	// HasSLOs says the Revision has at least one SLO entry: a canary is only
	// run when something can judge it.
	HasSLOs bool
	// Start is when the canary first took traffic; zero until then.
	Start time.Time
}

// pending says the canary has yet to run or is running: it is configured
// and has not started, or has not lasted its TTL.
func (c Canary) pending(now time.Time) bool {
	if c.Percent <= 0 || c.TTL <= 0 || !c.HasSLOs {
		return false
	}
	return c.Start.IsZero() || now.Before(c.Start.Add(c.TTL))
}

// Window is what the release schedule says about starting a release.
type Window struct {
	// Open says a release may start now.
	Open bool
	// Opens is when it next may, when not Open; zero when unknown.
	Opens time.Time
}

// Facts are what a tick of one incarnation is decided from.
type Facts struct {
	// Now is the time of the decision.
	Now time.Time
	// State is the stored state; empty for an incarnation seen for the first time.
	State State
	// Since is when the stored state was entered (zero when unknown).
	Since time.Time
	// RevisionExists says the incarnation's Revision still exists and targets this target.
	RevisionExists bool
	// Failed is the Revision's spec.failed.
	Failed bool
	// Eligible is the release record's releaseEligible: the build may take
	// traffic. Losing all its traffic to a newer build takes it away;
	// recommissioning gives it back.
	Eligible bool
	// Created and TTL bound the life of a build that is never released:
	// once Created+TTL has passed it retires. A zero value never expires.
	Created time.Time
	TTL     time.Duration
	// Deployment is what the fleet shows for the build.
	Deployment Deployment
	// Percent of traffic the build takes now, and the most it ever took.
	Percent, PeakPercent int32
	// MaxPercent is release.max (0 means 100): reaching it ends the release,
	// unless WavesLeft: the target releases in waves and the build has not
	// reached it in every wave yet (NextWave).
	MaxPercent int32
	WavesLeft  bool
	// Test, Canary and Window are the build's external test, canary and
	// release schedule.
	Test   ExternalTest
	Canary Canary
	Window Window
	// Verdict is what the build's alerts say; a verdict that holds keeps a
	// canary from passing.
	Verdict Verdict
	// Control is what a person asked of the build.
	Control Control
	// Frozen says a cluster of the wave the build would start its canary
	// or ramp in is in a freeze window, open until FrozenUntil (zero when
	// unknown): the build does not start them until it closes.
	Frozen      bool
	FrozenUntil time.Time
	// Preflight says a pre-flight check fails on a live cluster of the
	// wave the build would start its canary or ramp in, where it has no
	// traffic yet (the cluster cannot be reached, has no room for its
	// pods, or its alerts fire): the build does not start them until the
	// checks pass. DeployHeld says a live cluster has no room for the
	// build's pods: its deploy deadline starts over rather than run out.
	// PreflightRetry is when the checks are made again.
	Preflight      bool
	DeployHeld     bool
	PreflightRetry time.Time
	// DrainEnd is when a build that lost its last route may lose its pods:
	// its scale-down delay after its traffic last moved, while proxies
	// still send it the requests of routes they have not reloaded. Zero
	// for a build that had no traffic: its pods may go at once.
	DrainEnd time.Time
}

// draining says the build's pods stay: it lost its last route less than
// its scale-down delay ago (DrainEnd).
func (f Facts) draining() bool { return !f.DrainEnd.IsZero() && f.Now.Before(f.DrainEnd) }

// failed says the build is bad: marked failed, or its external test failed.
func (f Facts) failed() bool { return f.Failed || f.Test.failed() }

// expiry is when a build that is never released retires; zero for never.
func (f Facts) expiry() time.Time {
	if f.Created.IsZero() || f.TTL <= 0 {
		return time.Time{}
	}
	return f.Created.Add(f.TTL)
}

// Timeouts bound the time an incarnation may stay in a state. A state not
// named here has no bound: a build may wait for its schedule, canary or
// traffic for as long as these take.
type Timeouts struct {
	// Created bounds the created state.
	Created time.Duration
	// Deploying bounds the deploying state: the deploy deadline.
	Deploying time.Duration
	// Testing bounds pendingtest and testing, from the test runner's last
	// report, when the Revision's externalTest.timeout is not set.
	Testing time.Duration
}

// DefaultTimeouts are the original's: one hour in created, 15 minutes to
// deploy, and the external test's schema default of two hours.
var DefaultTimeouts = Timeouts{Created: time.Hour, Deploying: 15 * time.Minute, Testing: 2 * time.Hour}

// Step is the decision of one tick for one incarnation.
type Step struct {
	// State is the state to store now.
	State State
	// Action is what to do on every cluster.
	Action Action
	// Then, when set, is the state to store once Action succeeded on every
	// cluster of the fleet; until then the incarnation stays in State.
	Then State
	// Unfinished, when set, is the state to store instead of State (or
	// Then) while Action has not succeeded on every live cluster, with the
	// weights recorded before: a step that passed through a state entered
	// only once its action is done (a deploy that finished, Advance) leaves
	// the build where it was until it is.
	Unfinished State
	// Due, when not zero, is when this incarnation needs another tick even
	// if nothing changes (a deadline, a canary's end, a schedule opening).
	Due time.Time
	// Unknown says the stored state is not one this version of Picchu
	// handles: the incarnation is held as it is, and this is reported.
	Unknown bool
	// Drop says the incarnation is gone for good and its status entry can go.
	Drop bool
	// Restart says the stored state's clock starts over now, as if it had
	// just been entered: a deploy a cluster with no room holds does not
	// run out its deadline.
	Restart bool
}

// Next decides the tick of one incarnation: the original's state machine,
// with its timeouts per state (see Timeouts) and without its bugs: the
// external test's own timeout applies, a tested build that is not eligible
// waits for its TTL instead of timing out, a person's spec.failed is
// honoured in every state, and a stored state it does not know is held and
// reported, never acted on.
func Next(f Facts, t Timeouts) Step {
	state := f.State
	if state == "" {
		state = Created
	}
	handle, ok := handlers[state]
	if !ok {
		return Step{State: state, Unknown: true}
	}
	// Nearly every state starts with: no Revision, so the build leaves.
	if !f.RevisionExists && state != Deleting && state != Deleted {
		return deleting(f)
	}
	return handle(f, t)
}

// handlers are the states Next knows, each with its decision.
var handlers map[State]func(Facts, Timeouts) Step

func init() {
	handlers = map[State]func(Facts, Timeouts) Step{
		Created:        created,
		Deploying:      deploying,
		Deployed:       deployed,
		PendingTest:    underTest,
		Testing:        underTest,
		Tested:         tested,
		Canarying:      canarying,
		Canaried:       canaried,
		PendingRelease: pendingRelease,
		Releasing:      releasing,
		Released:       releasing,
		Retiring:       retiring,
		Retired:        retired,
		Failing:        failing,
		Failed:         failedState,
		Deleting:       deletingState,
		Deleted:        deleted,
		TimingOut:      timingOut,
	}
}

// States lists every state Next handles.
func States() []State {
	out := make([]State, 0, len(handlers))
	for s := range handlers {
		out = append(out, s)
	}
	return out
}

func created(f Facts, t Timeouts) Step {
	if !f.Since.IsZero() && f.Now.Sub(f.Since) > t.Created {
		return Step{State: TimingOut}
	}
	return startDeploying(f, t)
}

// startDeploying enters deploying: its deadline runs from now.
func startDeploying(f Facts, t Timeouts) Step {
	return Step{State: Deploying, Action: Sync, Due: f.Now.Add(t.Deploying)}
}

func deploying(f Facts, t Timeouts) Step {
	if f.failed() {
		return Step{State: Failing, Action: Sync}
	}
	if f.Deployment == IsDeployed {
		return Step{State: Deploying, Action: Sync, Then: Deployed}
	}
	if f.DeployHeld {
		// Pods that wait for room are a cluster's state, not the build's
		// fault: its deadline starts over once they find some.
		return Step{State: Deploying, Action: Sync, Due: f.PreflightRetry, Restart: true}
	}
	return deadline(f, Deploying, f.Since, t.Deploying)
}

// deadline stays in s until timeout has passed since since, then times out.
func deadline(f Facts, s State, since time.Time, timeout time.Duration) Step {
	due := since.Add(timeout)
	if !since.IsZero() && !f.Now.Before(due) {
		return Step{State: TimingOut}
	}
	return Step{State: s, Action: Sync, Due: due}
}

func deployed(f Facts, t Timeouts) Step {
	switch {
	case f.failed():
		return Step{State: Failing, Action: Sync}
	case f.Deployment == NotDeployed:
		return startDeploying(f, t)
	case f.Deployment == Unknown:
		// Nothing is promoted on data Picchu cannot see.
		return Step{State: Deployed, Action: Sync}
	case f.Test.Enabled:
		return testStep(f, t, Deployed)
	}
	return promote(f, Deployed)
}

// promote moves a deployed (or tested) build on: to its canary or to wait
// for its release when eligible, to retirement once its TTL has passed when
// not. Otherwise it stays in state until its TTL.
func promote(f Facts, state State) Step {
	if f.Eligible && f.Frozen {
		// Neither canary nor release starts in a freeze.
		return Step{State: state, Action: Sync, Due: f.FrozenUntil}
	}
	if f.Eligible && f.Preflight {
		// Nor on a cluster that failed its pre-flight checks.
		return Step{State: state, Action: Sync, Due: f.PreflightRetry}
	}
	if f.Eligible {
		if f.Canary.pending(f.Now) {
			return Step{State: Canarying, Action: Sync}
		}
		return Step{State: PendingRelease, Action: Sync}
	}
	expiry := f.expiry()
	if !expiry.IsZero() && !f.Now.Before(expiry) {
		return Step{State: Retiring, Action: Sync}
	}
	return Step{State: state, Action: Sync, Due: expiry}
}

// testStep is where the external test's report leads from state.
func testStep(f Facts, t Timeouts, state State) Step {
	switch {
	case f.Test.Completed && f.Test.Succeeded:
		if state == Tested {
			return promote(f, Tested)
		}
		return Step{State: Tested, Action: Sync}
	case f.Test.Started && !f.Test.Completed:
		return testDeadline(f, t, Testing, state)
	default:
		return testDeadline(f, t, PendingTest, state)
	}
}

// testDeadline keeps the build in test state s (entered from state from)
// until the test's own timeout, counted from the runner's last report.
func testDeadline(f Facts, t Timeouts, s, from State) Step {
	since := f.Test.LastUpdated
	if since.IsZero() {
		since = f.Since
		if from != s {
			since = f.Now
		}
	}
	timeout := f.Test.Timeout
	if timeout <= 0 {
		timeout = t.Testing
	}
	return deadline(f, s, since, timeout)
}

func underTest(f Facts, t Timeouts) Step {
	switch {
	case f.failed():
		return Step{State: Failing, Action: Sync}
	case !f.Test.Enabled:
		// The test was turned off: the build is simply deployed.
		return Step{State: Deployed, Action: Sync}
	}
	return testStep(f, t, f.State)
}

func tested(f Facts, t Timeouts) Step {
	switch {
	case f.failed():
		return Step{State: Failing, Action: Sync}
	case f.Test.Enabled && !(f.Test.Completed && f.Test.Succeeded):
		// The runner started again.
		return testStep(f, t, Tested)
	}
	return promote(f, Tested)
}

func canarying(f Facts, _ Timeouts) Step {
	if step, ok := leaving(f); ok {
		// Failed, or a rollback to an earlier build took it out of release.
		return step
	}
	switch {
	case f.Control.Promote:
		// A person ends the canary now, whatever its timer or alerts say.
		return Step{State: Canaried, Action: Sync}
	case f.Control.Paused:
		// Its timer stops; resuming moves its start on (Resumed).
		return Step{State: Canarying, Action: Sync}
	case f.Canary.pending(f.Now):
		var due time.Time
		if !f.Canary.Start.IsZero() {
			due = f.Canary.Start.Add(f.Canary.TTL)
		}
		return Step{State: Canarying, Action: Sync, Due: due}
	case f.Verdict.Holds():
		// The canary has run its time but cannot pass while its alerts
		// fire or cannot be read; the reconciler checks them again.
		return Step{State: Canarying, Action: Sync}
	}
	return Step{State: Canaried, Action: Sync}
}

// leaving says where a canaried build goes when it fails or is no longer
// eligible for release, if it goes: failing, or retiring.
func leaving(f Facts) (Step, bool) {
	switch {
	case f.Failed:
		return Step{State: Failing, Action: Sync}, true
	case !f.Eligible:
		return Step{State: Retiring, Action: Sync}, true
	}
	return Step{}, false
}

func canaried(f Facts, _ Timeouts) Step {
	if step, ok := leaving(f); ok {
		return step
	}
	return Step{State: PendingRelease, Action: Sync}
}

func pendingRelease(f Facts, _ Timeouts) Step {
	if step, ok := leaving(f); ok {
		return step
	}
	switch {
	case f.Frozen:
		// Not even a person starts a release in a freeze.
		return Step{State: PendingRelease, Action: Sync, Due: f.FrozenUntil}
	case f.Preflight:
		// Nor on a cluster that failed its pre-flight checks.
		return Step{State: PendingRelease, Action: Sync, Due: f.PreflightRetry}
	case f.Control.Promote:
		// A person starts the release now, whatever the schedule says.
		return Step{State: Releasing, Action: Sync}
	case f.Control.Paused:
		return Step{State: PendingRelease, Action: Sync}
	case f.Window.Open:
		return Step{State: Releasing, Action: Sync}
	}
	return Step{State: PendingRelease, Action: Sync, Due: f.Window.Opens}
}

// releasing handles releasing and released: a build is released once it
// has reached its release.max in its last wave.
func releasing(f Facts, _ Timeouts) Step {
	if step, ok := leaving(f); ok {
		return step
	}
	// A build its alerts fire for is not released: the alerts fail it.
	if f.PeakPercent >= percentCap(f.MaxPercent) && !(f.WavesLeft && f.State == Releasing) && !(f.Verdict == Firing && f.State == Releasing) {
		return Step{State: Released, Action: Sync}
	}
	return Step{State: f.State, Action: Sync}
}

func retiring(f Facts, t Timeouts) Step {
	switch {
	case f.failed():
		// A bad build is rolled back, whatever traffic it still has.
		return Step{State: Failing, Action: Sync}
	case f.Percent > 0 && f.Eligible:
		// Brought back while it still serves (recommissioned, or rolled
		// back to): it ramps again from what it has, taking the traffic
		// of the builds that leave.
		return Step{State: Releasing, Action: Sync}
	case f.Percent > 0:
		// It serves until newer builds have taken its traffic.
		return Step{State: Retiring, Action: Sync}
	case f.Eligible:
		return startDeploying(f, t)
	}
	return drain(f, Step{State: Retiring, Action: Retire, Then: Retired})
}

// drain is step, whose action removes the build's pods, once the build has
// drained (Facts.DrainEnd); until then its objects are held as they are,
// and its state moves on as step says once every live cluster routes it
// nothing.
func drain(f Facts, step Step) Step {
	if !f.draining() {
		return step
	}
	step.Action, step.Due = Hold, f.DrainEnd
	if step.Then == Deleted {
		// Its record goes with the deletion: it waits for it.
		step.Then = ""
	}
	return step
}

func retired(f Facts, t Timeouts) Step {
	switch {
	case f.failed():
		return Step{State: Failing, Action: Sync}
	case f.Eligible:
		// Recommissioned.
		return startDeploying(f, t)
	}
	return drain(f, Step{State: Retired, Action: Retire})
}

func failing(f Facts, t Timeouts) Step {
	switch {
	case f.Percent > 0 && !f.failed() && f.Eligible:
		// Retried while it still serves: its rollback stops, and it is
		// released again from what it has, judged anew.
		return Step{State: Releasing, Action: Sync}
	case f.Percent > 0 && !f.failed():
		// Retried, but out of release (a rollback to an earlier build):
		// it serves until others take its traffic, as a retiring build.
		return Step{State: Retiring, Action: Sync}
	case f.Percent > 0:
		// Its traffic goes back to older builds at their ramp's pace.
		return Step{State: Failing, Action: Sync}
	case !f.failed():
		return startDeploying(f, t)
	}
	return drain(f, Step{State: Failing, Action: Retire, Then: Failed})
}

func failedState(f Facts, t Timeouts) Step {
	if !f.failed() {
		return startDeploying(f, t)
	}
	return drain(f, Step{State: Failed, Action: Retire})
}

func deletingState(f Facts, t Timeouts) Step {
	if f.RevisionExists {
		return startDeploying(f, t)
	}
	return deleting(f)
}

func deleted(f Facts, t Timeouts) Step {
	if f.RevisionExists {
		return startDeploying(f, t)
	}
	return Step{State: Deleted, Drop: true}
}

func timingOut(f Facts, _ Timeouts) Step {
	if f.failed() {
		return Step{State: Failing, Action: Sync}
	}
	// Stuck: the Revision controller fails the whole Revision.
	return Step{State: TimingOut}
}

// deleting keeps a build that still takes traffic until the traffic has
// moved (its pods serve until then), then deletes it everywhere.
func deleting(f Facts) Step {
	if f.Percent > 0 {
		return Step{State: Deleting, Action: Sync}
	}
	return drain(f, Step{State: Deleting, Action: Delete, Then: Deleted})
}

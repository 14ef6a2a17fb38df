package release

// What a state says about a build, in one table: each predicate below reads
// its row, and TestStates_AnswerEveryPredicate checks every state has one.
type traits struct {
	// deploying: release settings still follow the Revision.
	deploying bool
	// serving: on its way to, or at, taking traffic.
	serving bool
	// routable: pods on every live cluster, a routing subset and a tag
	// route, whatever its traffic.
	routable bool
	// judged: its alerts are checked (unless the build opts out or has
	// proven itself).
	judged bool
	// inProgress: moving; the ReleaseManager is Reconciling until it settles.
	inProgress bool
	// entering: on its way to taking traffic in a wave where it has none
	// yet, so pre-flight checks hold it there.
	entering bool
	// scheduled: the release schedule is read, as it waits for its
	// release or may be about to.
	scheduled bool
	// ttlBound: a build that is not eligible waits here for its TTL.
	ttlBound bool
	// finished: done with, so a pause no longer matters.
	finished bool
	// stamped: the status records when it was entered in a start time of
	// its own.
	stamped bool
}

// stateTraits holds a row for every state, and for the empty state of a
// build seen for the first time.
var stateTraits = map[State]traits{
	"":             {deploying: true, entering: true},
	Created:        {deploying: true, inProgress: true, entering: true},
	Deploying:      {deploying: true, serving: true, inProgress: true, entering: true, stamped: true},
	Deployed:       {serving: true, routable: true, entering: true, scheduled: true, ttlBound: true},
	PendingTest:    {serving: true, routable: true, inProgress: true, entering: true},
	Testing:        {serving: true, routable: true, inProgress: true, entering: true},
	Tested:         {serving: true, routable: true, entering: true, scheduled: true, ttlBound: true},
	Canarying:      {serving: true, routable: true, judged: true, inProgress: true, entering: true, scheduled: true, stamped: true},
	Canaried:       {serving: true, routable: true, judged: true, inProgress: true, entering: true, scheduled: true},
	PendingRelease: {serving: true, routable: true, judged: true, inProgress: true, entering: true, scheduled: true, stamped: true},
	Releasing:      {serving: true, routable: true, judged: true, inProgress: true, entering: true, stamped: true},
	Released:       {serving: true, routable: true, judged: true},
	Retiring:       {inProgress: true},
	Retired:        {finished: true},
	Failing:        {inProgress: true},
	Failed:         {finished: true},
	Deleting:       {inProgress: true, finished: true},
	Deleted:        {finished: true},
	TimingOut:      {},
}

// IsDeploying says a build's release settings still follow its Revision.
func (s State) IsDeploying() bool { return stateTraits[s].deploying }

// IsServing says a build is on its way to, or at, taking traffic.
func (s State) IsServing() bool { return stateTraits[s].serving }

// IsRoutable says a build runs its pods on every live cluster and gets a
// routing subset and its tag route, whatever its traffic.
func (s State) IsRoutable() bool { return stateTraits[s].routable }

// IsJudged says a build's alerts are checked in this state: it canaries or
// is being released. (The build may still opt out, or have proven itself.)
func (s State) IsJudged() bool { return stateTraits[s].judged }

// IsEntering says a build is on its way to taking traffic: in a wave
// where it has none yet, pre-flight checks hold it (a rollback never
// waits on them).
func (s State) IsEntering() bool { return stateTraits[s].entering }

// IsInProgress says a build is moving: the ReleaseManager is Reconciling
// until it settles.
func (s State) IsInProgress() bool { return stateTraits[s].inProgress }

// ConsultsSchedule says the release schedule is read for a build in this
// state: it waits for its release, or may move on to wait for it now (a
// canary that ends passes on to its release in the same tick: Advance).
func (s State) ConsultsSchedule() bool { return stateTraits[s].scheduled }

// WaitsForTTL says a build that is not eligible for release waits in this
// state for its TTL, taking no traffic: it has settled there.
func (s State) WaitsForTTL() bool { return stateTraits[s].ttlBound }

// IsFinished says a build is done with: retired, failed or on its way out,
// so a pause no longer matters to it.
func (s State) IsFinished() bool { return stateTraits[s].finished }

// HasStartTime says the status records when a build entered this state
// in a start time of its own (deployingStartTimestamp and the like).
func (s State) HasStartTime() bool { return stateTraits[s].stamped }

// IsRollingOut says a build's pods are being rolled out to the fleet,
// against its deploy deadline.
func (s State) IsRollingOut() bool { return s == Deploying }

// RunsCanary says a build runs its canary: it takes the canary's share of
// the traffic while its alerts are judged.
func (s State) RunsCanary() bool { return s == Canarying }

// IsPendingRelease says a build waits to be released: for its schedule's
// window to open.
func (s State) IsPendingRelease() bool { return s == PendingRelease }

// IsRamping says a build is being released: its traffic ramps up.
func (s State) IsRamping() bool { return s == Releasing }

// IsReleased says a build is released: it reached its release's maximum
// (in every wave) and stays there.
func (s State) IsReleased() bool { return s == Released }

// IsRetiring says a build is retiring: its traffic moves to a newer build
// (or it is past its TTL) and its pods go once it has none.
func (s State) IsRetiring() bool { return s == Retiring }

// IsRetired says a build is retired: it has no traffic and no pods, and
// comes back if it is made eligible again.
func (s State) IsRetired() bool { return s == Retired }

// IsRollingBack says a failed build's traffic goes back to the previous
// release: the rollback is under way.
func (s State) IsRollingBack() bool { return s == Failing }

// IsRolledBack says a failed build was rolled back: it has no traffic and
// no pods.
func (s State) IsRolledBack() bool { return s == Failed }

// IsFailed says a build failed: it is rolling back or was rolled back.
func (s State) IsFailed() bool { return s.IsRollingBack() || s.IsRolledBack() }

// IsTimedOut says a build ran out of time deploying or testing: it is
// stuck until it is failed (the Revision controller fails it).
func (s State) IsTimedOut() bool { return s == TimingOut }

// IsDeleted says a build's objects were deleted on every cluster.
func (s State) IsDeleted() bool { return s == Deleted }

// PromotionTaken says a move from one state to another is what a promote
// request asks for: the canary ends, or a release waiting on its schedule
// starts.
func PromotionTaken(from, to State) bool {
	return (from.RunsCanary() && to == Canaried) || (from.IsPendingRelease() && to.IsRamping())
}

// legacyStates are states the original stored that it later removed,
// each with the state that means the same today: the Datadog canary
// states were folded into the canary ones (Datadog monitors now judge
// the canary like Prometheus alerts).
var legacyStates = map[State]State{
	"canaryingdatadog": Canarying,
	"canarieddatadog":  Canaried,
}

// Migrated is the state a recorded state s means today, and whether it
// is a legacy state of the original's that had to be migrated. Any other
// state is itself.
func Migrated(s State) (State, bool) {
	if to, ok := legacyStates[s]; ok {
		return to, true
	}
	return s, false
}

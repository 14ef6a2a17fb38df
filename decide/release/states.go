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
}

// stateTraits holds a row for every state, and for the empty state of a
// build seen for the first time.
var stateTraits = map[State]traits{
	"":             {deploying: true, entering: true},
	Created:        {deploying: true, inProgress: true, entering: true},
	Deploying:      {deploying: true, serving: true, inProgress: true, entering: true},
	Deployed:       {serving: true, routable: true, entering: true},
	PendingTest:    {serving: true, routable: true, inProgress: true, entering: true},
	Testing:        {serving: true, routable: true, inProgress: true, entering: true},
	Tested:         {serving: true, routable: true, entering: true},
	Canarying:      {serving: true, routable: true, judged: true, inProgress: true, entering: true},
	Canaried:       {serving: true, routable: true, judged: true, inProgress: true, entering: true},
	PendingRelease: {serving: true, routable: true, judged: true, inProgress: true, entering: true},
	Releasing:      {serving: true, routable: true, judged: true, inProgress: true, entering: true},
	Released:       {serving: true, routable: true, judged: true},
	Retiring:       {inProgress: true},
	Retired:        {},
	Failing:        {inProgress: true},
	Failed:         {},
	Deleting:       {inProgress: true},
	Deleted:        {},
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

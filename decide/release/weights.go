package release

// Incarnation is a build in a target as the release engine's traffic
// decision sees it.
type Incarnation struct {
	Tag string
	// State is the build's state after this tick.
	State State
	// Percent is the traffic it takes now.
	Percent int32
	// Canary is its canary.percent: the most it takes while canarying.
	Canary int32
	// Max is its release.max (0 means 100): the most it takes at all.
	Max int32
	// Next is the percent its ramp may step to now, already gated by the
	// step delay and CanRampTo; it equals Percent when no step is due.
	Next int32
}

// Allocation is the traffic of every build.
type Allocation struct {
	// Percent is each build's traffic, in the order given.
	Percent []int32
	// Ramping is the index of the build whose traffic may grow, or -1.
	Ramping int
	// LostEligibility marks the releasing or released builds older than the
	// ramping one that were left with no traffic: they retire.
	LostEligibility []bool
}

// Allocate shares 100% of the traffic among builds given newest first.
//
// The releasable builds, in order, are those canarying, then those releasing
// or released, then those retiring, deleting or failing that still have
// traffic; every other build gets 0. The first releasable build that is not
// canarying is the ramping one. Walking the releasable builds with 100% left:
//
//   - a canarying build gets its canary percent;
//   - the ramping build gets Next (Percent if it is leaving);
//   - a build after it keeps its traffic or gives some up, never gains;
//   - none gets more than its Max or than what is left.
//
// What is left at the end goes to the ramping build, or, when there is none,
// to the first releasable one, but never to a failing build while another
// may take it (leftoverReceiver). That is the one case where a build may
// exceed its canary percent or its Max: traffic must go somewhere, so a
// first-ever canary serves 100%, and a build whose Max is lowered keeps its
// traffic until an older one can take it back. The result sums to exactly 100 when
// any build is releasable. When none is, the newest build that has traffic
// and waits between its canary and its release (an app's first build) keeps
// 100%; otherwise all get 0. Allocate never panics:
// percents outside [0, 100] are clamped.
func Allocate(incs []Incarnation) Allocation {
	a := Allocation{
		Percent:         make([]int32, len(incs)),
		Ramping:         -1,
		LostEligibility: make([]bool, len(incs)),
	}
	order := releasable(incs)
	if len(order) == 0 {
		// Traffic must still go somewhere: an app's first build, between
		// its canary (where it served everything) and its release, keeps
		// serving all of it rather than leave the route with no weight.
		if i := holding(incs); i >= 0 {
			a.Percent[i] = 100
		}
		return a
	}
	for _, i := range order {
		if incs[i].State != Canarying {
			a.Ramping = i
			break
		}
	}
	left := int32(100)
	after := false
	for _, i := range order {
		inc := incs[i]
		var want int32
		switch {
		case inc.State == Canarying:
			want = clampPercent(inc.Canary)
		case i == a.Ramping && !leavingWithTraffic(inc.State):
			want = clampPercent(inc.Next)
		default:
			want = clampPercent(inc.Percent)
		}
		p := min(want, percentCap(inc.Max), left)
		a.Percent[i] = p
		left -= p
		if after && p == 0 && (inc.State == Releasing || inc.State == Released) {
			a.LostEligibility[i] = true
		}
		after = after || i == a.Ramping
	}
	a.Percent[leftoverReceiver(incs, order, a.Ramping)] += left
	return a
}

// leftoverReceiver is the build that takes what the walk left: the ramping
// build, else the first releasable one; but never a failing build while
// another may take it: the first releasable build that is not failing,
// else the newest build waiting with traffic between its canary and its
// release (holding).
func leftoverReceiver(incs []Incarnation, order []int, ramping int) int {
	receiver := ramping
	if receiver < 0 {
		receiver = order[0]
	}
	if incs[receiver].State != Failing {
		return receiver
	}
	for _, i := range order {
		if incs[i].State != Failing {
			return i
		}
	}
	if i := holding(incs); i >= 0 {
		return i
	}
	return receiver
}

// holding returns the index of the newest build that has traffic and waits
// between its canary and its release, or -1.
func holding(incs []Incarnation) int {
	for i, inc := range incs {
		if inc.Percent > 0 && (inc.State == Canaried || inc.State == PendingRelease) {
			return i
		}
	}
	return -1
}

// releasable lists the indexes of the builds that may take traffic, in the
// order the traffic is shared.
func releasable(incs []Incarnation) []int {
	var order []int
	for _, group := range []func(Incarnation) bool{
		func(inc Incarnation) bool { return inc.State == Canarying },
		func(inc Incarnation) bool { return inc.State == Releasing || inc.State == Released },
		func(inc Incarnation) bool { return leavingWithTraffic(inc.State) && inc.Percent > 0 },
	} {
		for i, inc := range incs {
			if group(inc) {
				order = append(order, i)
			}
		}
	}
	return order
}

// leavingWithTraffic says a build in state s keeps serving the traffic it
// has while it leaves, until newer builds take it.
func leavingWithTraffic(s State) bool {
	return s == Retiring || s == Deleting || s == Failing
}

// percentCap is the most traffic a build whose release.max is m may take:
// m, where 0 (unset) and anything above 100 mean 100.
func percentCap(m int32) int32 {
	if m <= 0 || m > 100 {
		return 100
	}
	return m
}

func clampPercent(p int32) int32 { return min(max(p, 0), 100) }

// RollingBack says traffic is leaving a failing build for one released
// before: some build is failing (after this tick) and still takes traffic,
// and no build is releasing, so the build that ramps, taking the traffic
// back, is a released one. Such a move is not held by a live cluster that
// cannot be reached, only paced by the ramp of the build taking the traffic
// back. A new build releasing meanwhile goes up, and waits as every step
// up does.
func RollingBack(incs []Incarnation) bool {
	failing := false
	for _, inc := range incs {
		switch {
		case inc.State == Releasing:
			return false
		case inc.State == Failing && inc.Percent > 0:
			failing = true
		}
	}
	return failing
}

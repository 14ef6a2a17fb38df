package release

import "slices"

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
	// Abort says a failing build gives all its traffic back at once
	// (release.rollback: immediate) rather than at the pace of the ramp
	// taking it back.
	Abort bool
}

// Allocation is the traffic of every build.
type Allocation struct {
	// Percent is each build's traffic, in the order given.
	Percent []int32
	// Earned is the part of each build's Percent that its canary or its
	// ramp's step granted it (Grant): a build's peakPercent counts only
	// this, never what it keeps as it leaves nor the traffic it holds only
	// because it is where the rest must go.
	Earned []int32
	// Ramping is the index of the build whose traffic may grow, or -1.
	Ramping int
	// LostEligibility marks the releasing or released builds older than the
	// ramping one that were left with no traffic: they retire.
	LostEligibility []bool
}

// Allocate shares 100% of the traffic among builds given newest first. Its
// promise, checked by a property test over random arrival sequences
// (docs/releasing.md), is that weights are earned: no build takes more
// than its own state grants it (Grant), and what no grant takes goes to
// builds that have proven themselves, or, before any has, to the oldest
// build that may serve, never to a newer one.
//
// The releasable builds, in order, are those canarying, then those releasing
// or released, then those retiring, deleting or failing that still have
// traffic. The first releasable build that is not canarying is the ramping
// one. Walking the releasable builds with 100% left, each gets what it is
// granted, or what is left:
//
//   - a canarying build gets its canary percent;
//   - the ramping build gets Next (Percent if it is leaving);
//   - a build after it keeps its traffic or gives some up, never gains;
//   - a failing build that aborts (Abort) gets nothing, and so does every
//     failing build when no releasing or released build ramps to take its
//     traffic back (takesBack: none is, or it is at its Max): nothing would
//     ever take it at a ramp's pace;
//   - none gets more than its Max.
//
// What is left at the end (a canary that ended, stored percents that do
// not add up, a lowered Max, an aborted rollback) goes first to the
// released builds, newest first, each up to its Max; then, all of it, to
// the receiver: the oldest build that may serve (a releasable one, or one
// with traffic waiting between its canary and its release) and is not
// failing, else the oldest that may serve. An app's first build is that
// receiver while it canaries and waits for its release: it serves
// everything, beside any canary of a newer build. The result sums to
// exactly 100 when any build may serve, and to 0 otherwise. Allocate never
// panics: percents outside [0, 100] are clamped.
func Allocate(incs []Incarnation) Allocation {
	a := Allocation{
		Percent:         make([]int32, len(incs)),
		Earned:          make([]int32, len(incs)),
		Ramping:         -1,
		LostEligibility: make([]bool, len(incs)),
	}
	order := releasable(incs)
	for _, i := range order {
		if incs[i].State != Canarying {
			a.Ramping = i
			break
		}
	}
	stalled := !takesBack(incs, a.Ramping)
	left := int32(100)
	for _, i := range order {
		inc := incs[i]
		if stalled && inc.State == Failing {
			// Nothing ramps to take its traffic back: it goes at once.
			inc.Abort = true
		}
		p := min(Grant(inc, i == a.Ramping), left)
		a.Percent[i] = p
		if earns(inc, i == a.Ramping) {
			a.Earned[i] = p
		}
		left -= p
	}
	// What no grant took: the released builds first, up to their Max.
	for _, i := range order {
		if inc := incs[i]; inc.State == Released && left > 0 {
			more := max(min(percentCap(inc.Max)-a.Percent[i], left), 0)
			a.Percent[i] += more
			left -= more
		}
	}
	if r := receiver(incs, order); r >= 0 {
		a.Percent[r] += left
		if incs[r].State.IsRamping() {
			// Its ramp has no healthy older build to take the traffic
			// from: it is granted all it serves, as an app's first build
			// is.
			a.Earned[r] = a.Percent[r]
		}
	}
	after := false
	for _, i := range order {
		if inc := incs[i]; after && a.Percent[i] == 0 && (inc.State == Releasing || inc.State == Released) {
			a.LostEligibility[i] = true
		}
		after = after || i == a.Ramping
	}
	return a
}

// Grant is the most traffic a build's own state grants it, whatever else
// serves: its canary percent while canarying; its ramp's step (Next) when
// it is the ramping build; what it has (Percent) when it is an older
// releasing or released build, or leaves (retiring, deleting, failing),
// and nothing for a failing build that aborts; never more than its Max.
// Every other state grants nothing. A build takes more only as the
// receiver of what no grant took (Allocate).
func Grant(inc Incarnation, ramping bool) int32 {
	var want int32
	switch {
	case inc.State == Canarying:
		want = clampPercent(inc.Canary)
	case inc.State == Failing && inc.Abort:
		want = 0
	case leavingWithTraffic(inc.State):
		want = clampPercent(inc.Percent)
	case inc.State != Releasing && inc.State != Released:
		return 0
	case ramping:
		want = clampPercent(inc.Next)
	default:
		want = clampPercent(inc.Percent)
	}
	return min(want, percentCap(inc.Max))
}

// takesBack says the ramping build (index ramping, -1 for none) takes a
// failing build's traffic back at its ramp's pace: it is releasing or
// released and its ramp goes higher than it is. With none such (the other
// builds canary, leave, or the ramping one is at its release.max), nothing
// ever would: a failing build gives its traffic back at once.
func takesBack(incs []Incarnation, ramping int) bool {
	if ramping < 0 {
		return false
	}
	inc := incs[ramping]
	limit := percentCap(inc.Max)
	return (inc.State == Releasing || inc.State == Released) && !(clampPercent(inc.Percent) >= limit && clampPercent(inc.Next) >= limit)
}

// earns says what a build's state grants it counts toward its peak: a
// canary's percent, and the ramping build's step. What a build keeps as
// it leaves, or as an older build while a newer one ramps, moves no peak.
func earns(inc Incarnation, ramping bool) bool {
	return inc.State == Canarying || (ramping && (inc.State == Releasing || inc.State == Released))
}

// receiver is the build that takes what is left once every build has its
// grant and the released builds are full: the oldest build that may serve
// (mayServe) and is not failing, else the oldest that may serve; -1 when
// none may.
func receiver(incs []Incarnation, order []int) int {
	oldest, healthy := -1, -1
	for i := len(incs) - 1; i >= 0; i-- {
		if !mayServe(incs[i], order, i) {
			continue
		}
		if oldest < 0 {
			oldest = i
		}
		if incs[i].State != Failing && healthy < 0 {
			healthy = i
		}
	}
	if healthy >= 0 {
		return healthy
	}
	return oldest
}

// mayServe says build i may serve traffic: it is releasable (in order),
// or it waits between its canary and its release with the traffic it had.
func mayServe(inc Incarnation, order []int, i int) bool {
	return slices.Contains(order, i) || waiting(inc)
}

// waiting says a build has traffic and waits between its canary and its
// release: canaried, or pending release. An app's first build waits so,
// serving everything.
func waiting(inc Incarnation) bool {
	return inc.Percent > 0 && (inc.State == Canaried || inc.State == PendingRelease)
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

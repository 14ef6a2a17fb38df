package release

import (
	"fmt"
	"slices"
	"testing"
	"testing/quick"
)

// inc builds an Incarnation whose ramp has no step due (Next = Percent).
func inc(tag string, s State, percent int32) Incarnation {
	return Incarnation{Tag: tag, State: s, Percent: percent, Next: percent}
}

func (i Incarnation) canary(p int32) Incarnation { i.Canary = p; return i }
func (i Incarnation) next(p int32) Incarnation   { i.Next = p; return i }
func (i Incarnation) upTo(p int32) Incarnation   { i.Max = p; return i }
func (i Incarnation) abort() Incarnation         { i.Abort = true; return i }

func TestAllocate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		incs    []Incarnation
		want    []int32
		ramping int
		lost    []int
	}{
		{"no builds", nil, []int32{}, -1, nil},
		{"nothing releasable", []Incarnation{inc("v2", Deployed, 0), inc("v1", Retired, 0)},
			[]int32{0, 0}, -1, nil},
		{"a first-ever canary serves everything",
			[]Incarnation{inc("v1", Canarying, 0).canary(10)}, []int32{100}, -1, nil},
		{"a canary takes its percent from the released build",
			[]Incarnation{inc("v2", Canarying, 0).canary(10), inc("v1", Released, 100)}, []int32{10, 90}, 1, nil},
		{"a first build keeps everything between its canary and its release",
			[]Incarnation{inc("v1", Canaried, 100).canary(10)}, []int32{100}, -1, nil},
		{"a first build keeps everything while its release is pending",
			[]Incarnation{inc("v2", Deployed, 0), inc("v1", PendingRelease, 100)}, []int32{0, 100}, -1, nil},
		{"a canaried build is not routed",
			[]Incarnation{inc("v2", Canaried, 10).canary(10), inc("v1", Released, 90)}, []int32{0, 100}, 1, nil},
		{"a pending release is not routed",
			[]Incarnation{inc("v2", PendingRelease, 10), inc("v1", Released, 90)}, []int32{0, 100}, 1, nil},
		{"a ramp step takes from the older build",
			[]Incarnation{inc("v2", Releasing, 10).next(20), inc("v1", Released, 90)}, []int32{20, 80}, 0, nil},
		{"no step due keeps the split",
			[]Incarnation{inc("v2", Releasing, 40), inc("v1", Released, 60)}, []int32{40, 60}, 0, nil},
		{"a completed ramp leaves the older build with nothing",
			[]Incarnation{inc("v2", Releasing, 80).next(100), inc("v1", Released, 20)}, []int32{100, 0}, 0, []int{1}},
		{"the oldest build gives up traffic first",
			[]Incarnation{inc("v3", Releasing, 0).next(10), inc("v2", Released, 30), inc("v1", Released, 70)},
			[]int32{10, 30, 60}, 0, nil},
		{"canary, ramp and drain at once",
			[]Incarnation{inc("v4", Canarying, 0).canary(5), inc("v3", Releasing, 20).next(40), inc("v2", Released, 80)},
			[]int32{5, 40, 55}, 1, nil},
		{"canaries come first and the ramp gets what is left",
			[]Incarnation{inc("v3", Canarying, 0).canary(30), inc("v2", Canarying, 0).canary(30), inc("v1", Releasing, 0).next(100)},
			[]int32{30, 30, 40}, 2, nil},
		{"canaries asking for more than 100 are cut",
			[]Incarnation{inc("v3", Canarying, 0).canary(60), inc("v2", Canarying, 0).canary(60), inc("v1", Released, 100)},
			[]int32{60, 40, 0}, 2, nil},
		{"with only canaries the oldest takes what is left",
			[]Incarnation{inc("v2", Canarying, 10).canary(10), inc("v1", Canarying, 20).canary(20)},
			[]int32{10, 90}, -1, nil},
		{"a second build's canary beside an app's first canary takes its percent alone",
			[]Incarnation{inc("v2", Canarying, 0).canary(10), inc("v1", Canarying, 100).canary(10)},
			[]int32{10, 90}, -1, nil},
		{"a canary beside an app's first build waiting for its release takes its percent alone",
			[]Incarnation{inc("v2", Canarying, 0).canary(10), inc("v1", PendingRelease, 100)},
			[]int32{10, 90}, -1, nil},
		{"an app's first build ramping beside a canary keeps the rest",
			[]Incarnation{inc("v2", Canarying, 10).canary(10), inc("v1", Releasing, 0).next(10)},
			[]int32{10, 90}, 1, nil},
		{"of two builds waiting for their release the older serves",
			[]Incarnation{inc("v2", Canaried, 10), inc("v1", PendingRelease, 90)},
			[]int32{0, 100}, -1, nil},
		{"an aborting build gives its traffic back at once",
			[]Incarnation{inc("v2", Failing, 40).abort(), inc("v1", Released, 60).next(70)},
			[]int32{0, 100}, 1, nil},
		{"an aborting build keeps serving when nothing else can",
			[]Incarnation{inc("v2", Failing, 100).abort(), inc("v1", Retired, 0)},
			[]int32{100, 0}, 0, nil},
		{"a failing build gives its traffic back to the released one",
			[]Incarnation{inc("v2", Failing, 50), inc("v1", Released, 50).next(70)}, []int32{30, 70}, 1, nil},
		{"a failed canary beside an app's first build's canary gives its traffic back at once",
			[]Incarnation{inc("v2", Failing, 10), inc("v1", Canarying, 90).canary(10)}, []int32{0, 100}, 0, nil},
		{"a failing build keeps serving when nothing else can",
			[]Incarnation{inc("v2", Failing, 100), inc("v1", Retired, 0)}, []int32{100, 0}, 0, nil},
		{"a retiring build serves beside a canary when no release runs",
			[]Incarnation{inc("v2", Canarying, 0).canary(10), inc("v1", Retiring, 100)}, []int32{10, 90}, 1, nil},
		{"a leaving build never grows from Next",
			[]Incarnation{inc("v2", Canarying, 0).canary(10), inc("v1", Deleting, 50).next(100), inc("v0", Retiring, 50)},
			[]int32{10, 50, 40}, 1, nil},
		{"leaving builds without traffic are not routed",
			[]Incarnation{inc("v3", Releasing, 100), inc("v2", Retiring, 0), inc("v1", Failed, 0)}, []int32{100, 0, 0}, 0, nil},
		{"a lowered max moves traffic to the older build when it can take it",
			[]Incarnation{inc("v2", Released, 100).upTo(50).next(50), inc("v1", Released, 100)}, []int32{50, 50}, 0, nil},
		{"a lowered max keeps traffic when nothing else can take it",
			[]Incarnation{inc("v1", Released, 100).upTo(50).next(50)}, []int32{100}, 0, nil},
		{"an older build above its max keeps what no grant takes, not the newer build",
			[]Incarnation{inc("v2", Releasing, 40), inc("v1", Released, 60).upTo(50)}, []int32{40, 60}, 0, nil},
		{"a canary above its max is capped",
			[]Incarnation{inc("v2", Canarying, 0).canary(30).upTo(20), inc("v1", Released, 100)}, []int32{20, 80}, 1, nil},
		{"percents out of range are clamped, not trusted",
			[]Incarnation{inc("v2", Releasing, 150).next(200), inc("v1", Released, -20)}, []int32{100, 0}, 0, []int{1}},
		{"stored percents summing under 100 are topped up by the released build",
			[]Incarnation{inc("v2", Releasing, 20), inc("v1", Released, 30)}, []int32{20, 80}, 0, nil},
		{"a canary's end gives its percent back to the released build, not the ramping one",
			[]Incarnation{inc("v3", Canaried, 10), inc("v2", Releasing, 30), inc("v1", Released, 60)}, []int32{0, 30, 70}, 1, nil},
		{"a legacy state holds no traffic",
			[]Incarnation{inc("v2", "canaryingdatadog", 100), inc("v1", Released, 0)}, []int32{0, 100}, 1, nil},
		{"only releasing and released lose eligibility",
			[]Incarnation{inc("v3", Releasing, 90).next(100), inc("v2", Retiring, 5), inc("v1", Released, 5)},
			[]int32{100, 0, 0}, 0, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Allocate(tc.incs)
			if !slices.Equal(a.Percent, tc.want) {
				t.Errorf("Percent = %v, want %v", a.Percent, tc.want)
			}
			if a.Ramping != tc.ramping {
				t.Errorf("Ramping = %d, want %d", a.Ramping, tc.ramping)
			}
			var lost []int
			for i, l := range a.LostEligibility {
				if l {
					lost = append(lost, i)
				}
			}
			if !slices.Equal(lost, tc.lost) {
				t.Errorf("LostEligibility at %v, want %v", lost, tc.lost)
			}
			if err := checkAllocation(tc.incs, a); err != nil {
				t.Error(err)
			}
		})
	}
}

// fuzzStates are the states an incarnation may hold, plus a legacy one.
var fuzzStates = []State{
	Created, Deploying, Deployed, PendingTest, Testing, Tested, Canarying, Canaried, PendingRelease,
	Releasing, Released, Retiring, Retired, Failing, Failed, Deleting, Deleted, TimingOut, "canaryingdatadog",
}

// decodeIncarnations turns 5 bytes per build into incarnations: a state and
// four percents in [-28, 227], so out-of-range values are common.
func decodeIncarnations(data []byte) []Incarnation {
	var incs []Incarnation
	for i := 0; i+5 <= len(data) && len(incs) < 16; i += 5 {
		pct := func(b byte) int32 { return int32(b) - 28 }
		incs = append(incs, Incarnation{
			Tag:   fmt.Sprintf("v%d", i/5),
			State: fuzzStates[int(data[i]&0x7f)%len(fuzzStates)], Percent: pct(data[i+1]),
			Canary: pct(data[i+2]), Max: pct(data[i+3]), Next: pct(data[i+4]),
			Abort: data[i]&0x80 != 0,
		})
	}
	return incs
}

func encodeIncarnations(incs ...Incarnation) []byte {
	var data []byte
	for _, inc := range incs {
		b := func(p int32) byte { return byte(p + 28) }
		state := byte(slices.Index(fuzzStates, inc.State))
		if inc.Abort {
			state |= 0x80
		}
		data = append(data, state, b(inc.Percent), b(inc.Canary), b(inc.Max), b(inc.Next))
	}
	return data
}

// TestAllocate_Invariants checks the invariants on random builds.
func TestAllocate_Invariants(t *testing.T) {
	prop := func(data []byte) bool {
		incs := decodeIncarnations(data)
		if err := checkAllocation(incs, Allocate(incs)); err != nil {
			t.Log(err)
			return false
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 20000}); err != nil {
		t.Error(err)
	}
}

// FuzzAllocate feeds Allocate any builds: it never panics and always keeps
// the invariants of checkAllocation.
func FuzzAllocate(f *testing.F) {
	f.Add([]byte{})
	f.Add(encodeIncarnations(inc("v1", Canarying, 0).canary(10)))
	f.Add(encodeIncarnations(inc("v2", Canarying, 0).canary(10), inc("v1", Released, 100)))
	f.Add(encodeIncarnations(inc("v2", Releasing, 10).next(20), inc("v1", Released, 90)))
	f.Add(encodeIncarnations(inc("v3", Canarying, 0).canary(60), inc("v2", Releasing, 20).next(40), inc("v1", Failing, 80)))
	f.Add(encodeIncarnations(inc("v2", Released, 100).upTo(50).next(50), inc("v1", Retiring, 0)))
	f.Add(encodeIncarnations(inc("v2", Releasing, 150).next(199), inc("v1", Released, -20).upTo(-5)))
	f.Fuzz(func(t *testing.T, data []byte) {
		incs := decodeIncarnations(data)
		if err := checkAllocation(incs, Allocate(incs)); err != nil {
			t.Fatalf("%v\nbuilds: %+v", err, incs)
		}
	})
}

// checkAllocation checks Allocate's result against its contract, derived
// from the states alone rather than from the walk: weights are earned.
// Every build but the receiver takes at most its limit (its canary, its
// ramp's step, what it keeps; a released build up to its Max), earning all
// it takes; the receiver, which takes what is left, is the oldest build
// that may serve and is not failing (else the oldest that may serve), so
// never a newer build while an older healthy one may serve; the traffic
// sums to 100 whenever a build may serve.
func checkAllocation(incs []Incarnation, a Allocation) error {
	if len(a.Percent) != len(incs) || len(a.Earned) != len(incs) || len(a.LostEligibility) != len(incs) {
		return fmt.Errorf("lengths %d, %d and %d for %d builds", len(a.Percent), len(a.Earned), len(a.LostEligibility), len(incs))
	}
	isReleasable := func(inc Incarnation) bool {
		switch inc.State {
		case Canarying, Releasing, Released:
			return true
		case Retiring, Deleting, Failing:
			return inc.Percent > 0
		}
		return false
	}
	mayServe := func(inc Incarnation) bool {
		return isReleasable(inc) || (inc.Percent > 0 && (inc.State == Canaried || inc.State == PendingRelease))
	}
	// The ramping build is the newest releasing or released one, else the
	// newest leaving one with traffic.
	ramping := slices.IndexFunc(incs, func(i Incarnation) bool { return i.State == Releasing || i.State == Released })
	if ramping < 0 {
		ramping = slices.IndexFunc(incs, func(i Incarnation) bool { return isReleasable(i) && i.State != Canarying })
	}
	if a.Ramping != ramping {
		return fmt.Errorf("ramping %d, want %d", a.Ramping, ramping)
	}
	recv, oldest := -1, -1
	for i := len(incs) - 1; i >= 0; i-- {
		if !mayServe(incs[i]) {
			continue
		}
		if oldest < 0 {
			oldest = i
		}
		if recv < 0 && incs[i].State != Failing {
			recv = i
		}
	}
	if recv < 0 {
		recv = oldest
	}
	// Nothing takes a failing build's traffic back at a ramp's pace when
	// no releasing or released build ramps, or the ramping one is at its
	// max: it goes at once.
	stalled := ramping < 0 || !(incs[ramping].State == Releasing || incs[ramping].State == Released) ||
		(clampPercent(incs[ramping].Percent) >= percentCap(incs[ramping].Max) && clampPercent(incs[ramping].Next) >= percentCap(incs[ramping].Max))
	limit := func(i int) int32 {
		inc := incs[i]
		var want int32
		switch {
		case inc.State == Canarying:
			want = clampPercent(inc.Canary)
		case inc.State == Failing && (inc.Abort || stalled):
			return 0
		case (inc.State == Releasing || inc.State == Released) && i == ramping:
			want = clampPercent(inc.Next)
		case isReleasable(inc):
			want = clampPercent(inc.Percent)
		default:
			return 0
		}
		return min(want, percentCap(inc.Max))
	}
	if err := failingNeverGains(incs, a); err != nil {
		return err
	}
	// The room the canaries take, first in the walk.
	var canaries int32
	for _, inc := range incs {
		if inc.State == Canarying {
			canaries += min(clampPercent(inc.Canary), percentCap(inc.Max), 100-canaries)
		}
	}
	var sum int32
	for i, inc := range incs {
		p, e := a.Percent[i], a.Earned[i]
		sum += p
		switch {
		case p < 0 || p > 100:
			return fmt.Errorf("%s gets %d%%", inc.Tag, p)
		case !mayServe(inc) && p != 0:
			return fmt.Errorf("%s is %s and gets %d%%", inc.Tag, inc.State, p)
		case e < 0 || e > p:
			return fmt.Errorf("%s earns %d%% of %d%%", inc.Tag, e, p)
		}
		lost := i > ramping && ramping >= 0 && p == 0 && (inc.State == Releasing || inc.State == Released)
		if a.LostEligibility[i] != lost {
			return fmt.Errorf("%s LostEligibility %v, want %v", inc.Tag, a.LostEligibility[i], lost)
		}
		allowed := limit(i)
		if inc.State == Released {
			// A released build takes back what no grant took, up to its Max.
			allowed = max(allowed, percentCap(inc.Max))
		}
		if i == recv && inc.State != Released {
			// It earns what its state grants, or all it takes when it
			// ramps with no healthy build to take traffic from (a
			// released build has its peak already).
			want := int32(0)
			switch {
			case inc.State == Releasing:
				want = p
			case inc.State == Canarying:
				want = min(p, allowed)
			}
			if e != want {
				return fmt.Errorf("receiver %s (%s) earns %d%% of %d%%, want %d%%", inc.Tag, inc.State, e, p, want)
			}
			continue
		}
		if p > allowed && i != recv {
			return fmt.Errorf("%s (%s) gets %d%%, above what it earned (%d%%); the receiver is %d", inc.Tag, inc.State, p, allowed, recv)
		}
		if inc.State == Released {
			continue // its peak is its max already
		}
		// A canary earns its percent, the ramping build its step; what a
		// build keeps earns it nothing.
		earning := inc.State == Canarying || (i == ramping && (inc.State == Releasing || inc.State == Released))
		if want := map[bool]int32{true: min(p, limit(i)), false: 0}[earning]; e != want {
			return fmt.Errorf("%s (%s) earns %d%% of the %d%% it was granted, want %d%%", inc.Tag, inc.State, e, p, want)
		}
	}
	switch {
	case recv < 0 && sum != 0:
		return fmt.Errorf("no build may serve, yet %d%% allocated", sum)
	case recv >= 0 && sum != 100:
		return fmt.Errorf("weights sum to %d", sum)
	}
	if ramping >= 0 {
		want := limit(ramping)
		if leavingWithTraffic(incs[ramping].State) && !(incs[ramping].State == Failing && (incs[ramping].Abort || stalled)) {
			want = min(clampPercent(incs[ramping].Percent), percentCap(incs[ramping].Max))
		}
		// The ramp gets its step unless canaries took the room.
		if p := a.Percent[ramping]; p < min(want, 100-canaries) {
			return fmt.Errorf("ramping %s gets %d%%, below its step %d%%", incs[ramping].Tag, p, want)
		}
	}
	return nil
}

// failingNeverGains: when the builds' traffic adds up to 100 %, as Picchu
// records it, a failing build never gets more than it has, whichever build
// takes its traffic back.
func failingNeverGains(incs []Incarnation, a Allocation) error {
	var recorded int32
	for _, inc := range incs {
		if inc.Percent < 0 || inc.Percent > 100 {
			return nil
		}
		recorded += inc.Percent
	}
	if recorded != 100 {
		return nil
	}
	// Traffic must go somewhere: when no other build may take it, a
	// failing build keeps what it has and takes what others give up.
	other := slices.ContainsFunc(incs, func(inc Incarnation) bool {
		switch inc.State {
		case Canarying, Releasing, Released:
			return true
		case Retiring, Deleting, Canaried, PendingRelease:
			return inc.Percent > 0
		}
		return false
	})
	if !other {
		return nil
	}
	for i, inc := range incs {
		if inc.State == Failing && a.Percent[i] > inc.Percent {
			return fmt.Errorf("failing %s gains: %d%% → %d%%", inc.Tag, inc.Percent, a.Percent[i])
		}
	}
	return nil
}

// TestAllocate_FailingNeverGains: builds in any states sharing exactly
// 100 % of the traffic; a failing build never gains any, and the traffic
// still adds up to 100 % whenever a build may take it.
func TestAllocate_FailingNeverGains(t *testing.T) {
	prop := func(data []byte, split []uint8) bool {
		incs := decodeIncarnations(data)
		if len(incs) == 0 {
			return true
		}
		// Only the states that may hold traffic hold it, as Picchu records.
		var holders []int
		for i := range incs {
			incs[i].Percent = 0
			switch incs[i].State {
			case Canarying, Canaried, PendingRelease, Releasing, Released, Retiring, Deleting, Failing:
				holders = append(holders, i)
			}
		}
		if len(holders) == 0 {
			return true
		}
		left := int32(100)
		for n, i := range holders {
			if n < len(split) {
				incs[i].Percent = min(int32(split[n])%101, left)
			}
			left -= incs[i].Percent
		}
		incs[holders[len(holders)-1]].Percent += left
		if err := failingNeverGains(incs, Allocate(incs)); err != nil {
			t.Logf("%v\nbuilds: %+v", err, incs)
			return false
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 20000}); err != nil {
		t.Error(err)
	}
}

func TestRollingBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		incs []Incarnation
		want bool
	}{
		{"a failing build with traffic and the release before it", []Incarnation{{State: Failing, Percent: 40}, {State: Released, Percent: 60}}, true},
		{"a failing build without traffic left", []Incarnation{{State: Failing}, {State: Released, Percent: 100}}, false},
		{"a release going up, nothing failing", []Incarnation{{State: Releasing, Percent: 40}, {State: Released, Percent: 60}}, false},
		{"a new build releasing while an older one fails goes up", []Incarnation{{State: Releasing, Percent: 20}, {State: Failing, Percent: 30}, {State: Released, Percent: 50}}, false},
		{"a canary beside a rollback", []Incarnation{{State: Canarying, Percent: 10}, {State: Failing, Percent: 30}, {State: Released, Percent: 60}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RollingBack(tc.incs); got != tc.want {
				t.Errorf("RollingBack = %t, want %t", got, tc.want)
			}
		})
	}
}

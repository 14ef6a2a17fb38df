package release

import (
	"slices"
	"testing"
	"testing/quick"
)

func TestWeights(t *testing.T) {
	for _, tc := range []struct {
		name   string
		builds []Candidate
		want   []int32
	}{
		{"nothing deployed yet", []Candidate{{"v1", Deploying, 0}}, []int32{0}},
		{"first deployed build takes all", []Candidate{{"v1", Deployed, 0}}, []int32{100}},
		{"the serving build keeps its traffic",
			[]Candidate{{"v2", Deployed, 0}, {"v1", Deployed, 100}}, []int32{0, 100}},
		{"a serving build that redeploys keeps its traffic",
			[]Candidate{{"v2", Deployed, 0}, {"v1", Deploying, 100}}, []int32{0, 100}},
		{"a deleted serving build hands over to the newest deployed",
			[]Candidate{{"v3", Deploying, 0}, {"v2", Deployed, 0}, {"v1", Deleting, 100}}, []int32{0, 100, 0}},
		{"a deleted serving build keeps traffic when no one can take it",
			[]Candidate{{"v2", Deploying, 0}, {"v1", Deleting, 100}}, []int32{0, 100}},
		{"a timed-out build hands over",
			[]Candidate{{"v2", TimingOut, 100}, {"v1", Deployed, 0}}, []int32{0, 100}},
		{"stored percents that do not add up are repaired",
			[]Candidate{{"v2", Deploying, 70}, {"v1", Deploying, 70}}, []int32{100, 0}},
		{"negative stored percents are ignored",
			[]Candidate{{"v1", Deploying, -5}}, []int32{0}},
		{"split traffic that sums to 100 is kept",
			[]Candidate{{"v2", Deployed, 30}, {"v1", Deployed, 70}}, []int32{30, 70}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Weights(tc.builds); !slices.Equal(got, tc.want) {
				t.Errorf("Weights(%v) = %v, want %v", tc.builds, got, tc.want)
			}
		})
	}
}

var states = []State{Created, Deploying, Deployed, Deleting, Deleted, TimingOut, Canarying, Released}

// TestWeights_AlwaysSumTo100OrNothing checks the invariant on any input.
func TestWeights_AlwaysSumTo100OrNothing(t *testing.T) {
	prop := func(stateIdx []uint8, percents []int8) bool {
		n := min(len(stateIdx), len(percents))
		builds := make([]Candidate, n)
		for i := range n {
			builds[i] = Candidate{Tag: string(rune('a' + i)), State: states[int(stateIdx[i])%len(states)], Percent: int32(percents[i])}
		}
		w := Weights(builds)
		var sum int32
		for _, p := range w {
			if p < 0 || p > 100 {
				return false
			}
			sum += p
		}
		if sum != 0 && sum != 100 {
			t.Logf("%v -> %v", builds, w)
			return false
		}
		// A deployed build always gives the app a server.
		for _, b := range builds {
			if b.State == Deployed && sum == 0 {
				return false
			}
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

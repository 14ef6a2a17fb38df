package release

import (
	"testing"
	"time"
)

func TestProven_ByTheFirstAcceptanceOrProductionTarget(t *testing.T) {
	for _, tc := range []struct {
		name      string
		targets   []TargetPeak
		threshold int32
		want      bool
		proving   string
	}{
		{"no targets", nil, 50, false, ""},
		{"only staging: judged by it", []TargetPeak{{Name: "staging", Peak: 60}}, 50, true, "staging"},
		{"production below", []TargetPeak{{Name: "staging", Peak: 100}, {Name: "production", Peak: 40}}, 50, false, "production"},
		{"production at threshold", []TargetPeak{{Name: "staging", Peak: 0}, {Name: "production", Peak: 50}}, 50, true, "production"},
		{"name contains production", []TargetPeak{{Name: "eu-production-2", Peak: 10}}, 50, false, "eu-production-2"},
		{"acceptance first wins", []TargetPeak{{Name: "qa", Acceptance: true, Peak: 100}, {Name: "production", Peak: 0}}, 50, true, "qa"},
		{"first of two production targets", []TargetPeak{{Name: "production-us", Peak: 10}, {Name: "production-eu", Peak: 100}}, 50, false, "production-us"},
		{"threshold configurable", []TargetPeak{{Name: "production", Peak: 20}}, 20, true, "production"},
		{"without a threshold, no peak proves a build", []TargetPeak{{Name: "production", Peak: 100}}, 0, false, "production"},
		{"without a threshold, released and watched", []TargetPeak{{Name: "production", Peak: 100, Done: true}}, 0, true, "production"},
		{"without a threshold, released in staging only", []TargetPeak{{Name: "staging", Peak: 100, Done: true}, {Name: "production", Peak: 80}}, 0, false, "production"},
		{"released in the first wave, waves left", []TargetPeak{{Name: "production", Peak: 100, WavesLeft: true}}, 50, false, "production"},
		{"waves left in another target", []TargetPeak{{Name: "staging", Peak: 100, WavesLeft: true}, {Name: "production", Peak: 100}}, 50, true, "production"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Proven(tc.targets, tc.threshold); got != tc.want {
				t.Errorf("Proven = %v, want %v", got, tc.want)
			}
			if p, _ := ProvingTarget(tc.targets); p.Name != tc.proving {
				t.Errorf("proving target %q, want %q", p.Name, tc.proving)
			}
		})
	}
}

func TestVerdict_HoldsWhenFiringOrUnobserved(t *testing.T) {
	for v, want := range map[Verdict]bool{Unjudged: false, Healthy: false, Firing: true, Unobserved: true} {
		if v.Holds() != want {
			t.Errorf("%s holds = %v", v, v.Holds())
		}
	}
}

func TestWavesLeft(t *testing.T) {
	for _, tc := range []struct {
		name     string
		state    State
		wave     int
		percents []int32
		max      int32
		want     bool
	}{
		{"no waves", Releasing, 0, nil, 100, false},
		{"one wave", Releasing, 0, []int32{40}, 100, false},
		{"ramping in the first of two", Releasing, 0, []int32{40, 0}, 100, true},
		{"released in the first, baking the second", Releasing, 1, []int32{100, 0}, 100, true},
		{"ramping in the last", Releasing, 1, []int32{100, 80}, 100, true},
		{"at max in the last", Releasing, 1, []int32{100, 100}, 100, false},
		{"at a lower max in the last", Releasing, 1, []int32{60, 60}, 60, false},
		{"canarying", Canarying, 0, []int32{10, 0}, 100, false},
		{"released", Released, 1, []int32{100, 100}, 100, false},
		{"retiring", Retiring, 1, []int32{50, 50}, 100, false},
	} {
		if got := WavesLeft(tc.state, tc.wave, tc.percents, tc.max); got != tc.want {
			t.Errorf("%s: WavesLeft = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestJudged_UntilReleasedAndWatched(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		state State
		since time.Time
		watch time.Duration
		want  bool
	}{
		{"deploying", Deploying, at, 0, false},
		{"canarying", Canarying, at, 0, true},
		{"canaried", Canaried, at, 0, true},
		{"pending release", PendingRelease, at, 0, true},
		{"releasing at any percent", Releasing, at.Add(-time.Hour), 0, true},
		{"released, no watch", Released, at, 0, false},
		{"released, watched", Released, at.Add(-time.Minute), 2 * time.Minute, true},
		{"released, watch over", Released, at.Add(-2 * time.Minute), 2 * time.Minute, false},
		{"released, no time on record", Released, time.Time{}, time.Minute, false},
		{"failing", Failing, at, time.Hour, false},
		{"retiring", Retiring, at, time.Hour, false},
	} {
		if got := Judged(JudgeInput{State: tc.state, Since: tc.since, Watch: tc.watch, Now: at}); got != tc.want {
			t.Errorf("%s: Judged = %v, want %v", tc.name, got, tc.want)
		}
	}
}

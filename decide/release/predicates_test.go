package release

import (
	"slices"
	"testing"
)

// TestStates_AnswerEveryPredicate checks that every state Next handles has
// an answer to every predicate, and what each answers.
func TestStates_AnswerEveryPredicate(t *testing.T) {
	predicates := map[string]struct {
		of   func(State) bool
		true []State
	}{
		"IsDeploying": {State.IsDeploying, []State{"", Created, Deploying}},
		"IsServing": {State.IsServing, []State{Deploying, Deployed, PendingTest, Testing, Tested,
			Canarying, Canaried, PendingRelease, Releasing, Released}},
		"IsRoutable": {State.IsRoutable, []State{Deployed, PendingTest, Testing, Tested,
			Canarying, Canaried, PendingRelease, Releasing, Released}},
		"IsJudged": {State.IsJudged, []State{Canarying, Canaried, PendingRelease, Releasing, Released}},
		"IsEntering": {State.IsEntering, []State{"", Created, Deploying, Deployed, PendingTest, Testing, Tested,
			Canarying, Canaried, PendingRelease, Releasing}},
		"IsInProgress": {State.IsInProgress, []State{Created, Deploying, PendingTest, Testing,
			Canarying, Canaried, PendingRelease, Releasing, Retiring, Failing, Deleting}},
		"ConsultsSchedule": {State.ConsultsSchedule, []State{Deployed, Tested, Canarying, Canaried, PendingRelease}},
		"WaitsForTTL":      {State.WaitsForTTL, []State{Deployed, Tested}},
		"IsFinished":       {State.IsFinished, []State{Retired, Failed, Deleting, Deleted}},
		"HasStartTime":     {State.HasStartTime, []State{Deploying, Canarying, PendingRelease, Releasing}},
		"IsRollingOut":     {State.IsRollingOut, []State{Deploying}},
		"RunsCanary":       {State.RunsCanary, []State{Canarying}},
		"IsPendingRelease": {State.IsPendingRelease, []State{PendingRelease}},
		"IsRamping":        {State.IsRamping, []State{Releasing}},
		"IsReleased":       {State.IsReleased, []State{Released}},
		"IsRetiring":       {State.IsRetiring, []State{Retiring}},
		"IsRetired":        {State.IsRetired, []State{Retired}},
		"IsRollingBack":    {State.IsRollingBack, []State{Failing}},
		"IsRolledBack":     {State.IsRolledBack, []State{Failed}},
		"IsFailed":         {State.IsFailed, []State{Failing, Failed}},
		"IsTimedOut":       {State.IsTimedOut, []State{TimingOut}},
		"IsDeleted":        {State.IsDeleted, []State{Deleted}},
	}
	for _, s := range append(States(), "") {
		if _, ok := stateTraits[s]; !ok {
			t.Errorf("state %q has no row in stateTraits", s)
		}
		for name, p := range predicates {
			if got, want := p.of(s), slices.Contains(p.true, s); got != want {
				t.Errorf("State(%q).%s() = %v, want %v", s, name, got, want)
			}
		}
	}
	for s := range stateTraits {
		if s != "" && !slices.Contains(States(), s) {
			t.Errorf("stateTraits has a row for %q, which Next does not handle", s)
		}
	}
}

// TestStates_PredicatesAgree checks what the predicates imply of each
// other: a routable build serves, a judged build is routable, and a build
// still deploying is not routable yet.
func TestStates_PredicatesAgree(t *testing.T) {
	for _, s := range append(States(), "") {
		if s.IsRoutable() && !s.IsServing() {
			t.Errorf("%q is routable but not serving", s)
		}
		if s.IsJudged() && !s.IsRoutable() {
			t.Errorf("%q is judged but not routable", s)
		}
		if s.IsDeploying() && s.IsRoutable() {
			t.Errorf("%q is deploying and routable", s)
		}
	}
}

// TestPromotionTaken checks, over every pair of states, that only the end
// of a canary and the start of a scheduled release are a promotion taken.
func TestPromotionTaken(t *testing.T) {
	want := map[[2]State]bool{{Canarying, Canaried}: true, {PendingRelease, Releasing}: true}
	all := append(States(), "")
	for _, from := range all {
		for _, to := range all {
			if got := PromotionTaken(from, to); got != want[[2]State{from, to}] {
				t.Errorf("PromotionTaken(%q, %q) = %v", from, to, got)
			}
		}
	}
}

func TestMigrated(t *testing.T) {
	for from, want := range map[State]State{
		"canaryingdatadog": Canarying,
		"canarieddatadog":  Canaried,
		Canarying:          Canarying,
		Released:           Released,
		"nosuchstate":      "nosuchstate",
	} {
		got, migrated := Migrated(from)
		if got != want || migrated != (from != want) {
			t.Errorf("Migrated(%q) = %q, %v; want %q, %v", from, got, migrated, want, from != want)
		}
		if _, known := stateTraits[got]; migrated && !known {
			t.Errorf("%q migrates to %q, which is not a state", from, got)
		}
	}
}

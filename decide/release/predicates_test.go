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

package main

import "testing"

func TestRolloutPromotedTo(t *testing.T) {
	rollout := func(generation int64, observed, stable, current, version string) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"generation": generation},
			"spec":     map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"version": version}}}},
			"status":   map[string]any{"observedGeneration": observed, "stableRS": stable, "currentPodHash": current},
		}
	}
	for _, tc := range []struct {
		name string
		r    map[string]any
		want bool
	}{
		{"v2 stable and seen", rollout(2, "2", "b", "b", "v2"), true},
		{"the controller has not seen v2 yet", rollout(2, "1", "b", "b", "v2"), false},
		{"v2 still a canary", rollout(2, "2", "a", "b", "v2"), false},
		{"another build", rollout(2, "2", "b", "b", "v3"), false},
		{"no stable build yet", rollout(1, "1", "", "", "v2"), false},
	} {
		if got := rolloutPromotedTo(tc.r, "v2"); got != tc.want {
			t.Errorf("%s: rolloutPromotedTo = %v, want %v", tc.name, got, tc.want)
		}
	}
}

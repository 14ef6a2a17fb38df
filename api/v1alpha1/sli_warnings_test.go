package v1alpha1

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestSLIQueryWarnings_NameEachQueryTheCheckRefuses: for every enabled SLO
// with canary.baseline, each of its queries the check refuses gets a
// warning naming its field and the check's reason; SLOs without a
// baseline, disabled ones and empty queries are not checked, and without
// a check nothing is.
func TestSLIQueryWarnings_NameEachQueryTheCheckRefuses(t *testing.T) {
	var checked []string
	check := func(q string) error {
		checked = append(checked, q)
		if strings.HasPrefix(q, "bad") {
			return errors.New("not a sum")
		}
		return nil
	}
	baseline := SLICanaryConfig{Baseline: &SLIBaseline{}}
	slo := func(enabled bool, canary SLICanaryConfig, total, errorQuery string) ServiceLevelObjective {
		return ServiceLevelObjective{Name: "s", Enabled: enabled, ServiceLevelIndicator: ServiceLevelIndicator{Canary: canary, TotalQuery: total, ErrorQuery: errorQuery}}
	}
	rev := &Revision{Spec: RevisionSpec{Targets: []RevisionTarget{
		{Name: "staging", ServiceLevelObjectives: []ServiceLevelObjective{slo(true, SLICanaryConfig{}, "bad-nobaseline", "bad-nobaseline")}},
		{Name: "production", ServiceLevelObjectives: []ServiceLevelObjective{
			slo(false, baseline, "bad-disabled", "bad-disabled"),
			slo(true, baseline, "good-total", "bad-errors"),
			slo(true, baseline, "bad-total", ""),
		}},
	}}}
	got := rev.SLIQueryWarnings(check)
	want := []string{
		"spec.targets[1].serviceLevelObjectives[1].serviceLevelIndicator.errorQuery: the baseline comparison cannot count it per raw series (not a sum), so it counts the SLO's recorded series instead",
		"spec.targets[1].serviceLevelObjectives[2].serviceLevelIndicator.totalQuery: the baseline comparison cannot count it per raw series (not a sum), so it counts the SLO's recorded series instead",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %q, want it to start %q", got[i], want[i])
		}
	}
	if !slices.Equal(checked, []string{"good-total", "bad-errors", "bad-total"}) {
		t.Errorf("checked %q, want the queries of enabled SLOs with a baseline only", checked)
	}
	if w := rev.SLIQueryWarnings(nil); w != nil {
		t.Errorf("without a check: %q", w)
	}
}

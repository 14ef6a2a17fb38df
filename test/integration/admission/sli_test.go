package admission_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestRevisionWebhook_WarnsAboutSLIQueriesTheComparisonCannotCount: the
// webhook, set up as main.go sets it up, accepts a Revision whose SLO
// compares builds with their baseline from queries the comparison cannot
// count per raw series (a rate, a max), and warns about each, naming its
// field and saying why; the countable shape of the samples, an SLO without
// a baseline and a disabled SLO get no such warning.
func TestRevisionWebhook_WarnsAboutSLIQueriesTheComparisonCannotCount(t *testing.T) {
	ctx := context.Background()
	const countable = `sum by (destination_version, cluster) (label_replace(istio_requests_total{destination_app="demo"}, "cluster", "$1", "destination_cluster", "(.*)"))`
	slo := func(name string, enabled bool, baseline bool, total, errors string) map[string]any {
		sli := map[string]any{"tagKey": "destination_version", "totalQuery": total, "errorQuery": errors}
		if baseline {
			sli["canary"] = map[string]any{"baseline": map[string]any{"minRequests": 100}}
		}
		return map[string]any{"name": name, "enabled": enabled, "serviceLevelIndicator": sli}
	}
	slos, err := json.Marshal([]any{
		slo("countable", true, true, countable, countable),
		slo("rates", true, true, `sum by (destination_version) (rate(istio_requests_total[1m]))`, countable),
		slo("maxima", true, true, countable, `max by (destination_version) (istio_requests_total{response_code=~"5.."})`),
		slo("nobaseline", true, false, `sum(rate(x[1m]))`, `sum(rate(y[1m]))`),
		slo("disabled", false, true, `sum(rate(x[1m]))`, `sum(rate(y[1m]))`),
	})
	if err != nil {
		t.Fatal(err)
	}
	warnings.take()
	if err := hookedClient.Create(ctx, object(t, "Revision", revisionJSON(`"serviceLevelObjectives": `+string(slos)))); err != nil {
		t.Fatalf("creating the revision: %v", err)
	}
	var got []string
	for _, w := range warnings.take() {
		if strings.Contains(w, "serviceLevelIndicator") {
			got = append(got, w)
		}
	}
	want := []string{
		"spec.targets[0].serviceLevelObjectives[1].serviceLevelIndicator.totalQuery: the baseline comparison cannot count it per raw series (rate(",
		"spec.targets[0].serviceLevelObjectives[2].serviceLevelIndicator.errorQuery: the baseline comparison cannot count it per raw series (max by (destination_version) (",
	}
	if len(got) != len(want) {
		t.Fatalf("%d warnings about SLI queries, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) || !strings.Contains(got[i], "so it counts the SLO's recorded series instead") {
			t.Errorf("warning %q, want it to start %q and say what is counted instead", got[i], w)
		}
	}
	if !strings.Contains(got[0], "rate is not label_replace or label_join") || !strings.Contains(got[1], "the increase of a max is not the max of the increases") {
		t.Errorf("the warnings do not say why:\n%s", strings.Join(got, "\n"))
	}
}

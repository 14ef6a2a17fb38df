package admission_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// TestRevision_ReleaseSilencesAccepted: silences that name their alerts,
// one by name and one by an alternation of names in the app's own
// namespace, pass the schema and the webhook next to an SLO, and isEqual
// defaults to true.
func TestRevision_ReleaseSilencesAccepted(t *testing.T) {
	ctx := context.Background()
	u := object(t, "Revision", revisionJSON(`"serviceLevelObjectives": [{"name": "availability", "enabled": true}],
		"releaseSilences": [
			{"matchers": [{"name": "alertname", "value": "HighLatency"}, {"name": "severity", "value": "page"}], "comment": "latency spikes while pods start"},
			{"matchers": [{"name": "alertname", "value": "QueueDepth|QueueAge", "isRegex": true}, {"name": "slo", "value": "true", "isEqual": false}, {"name": "namespace", "value": "demo-production"}]}
		]`))
	if err := create(ctx, hookedClient, u); err != nil {
		t.Fatalf("creating revision: %v", err)
	}
	rev := &picchuv1alpha1.Revision{}
	if err := hookedClient.Get(ctx, client.ObjectKeyFromObject(u), rev); err != nil {
		t.Fatalf("reading revision: %v", err)
	}
	silences := rev.Spec.Targets[0].ReleaseSilences
	if len(silences) != 2 || len(silences[0].Matchers) != 2 || silences[0].Comment != "latency spikes while pods start" {
		t.Fatalf("releaseSilences stored as %+v", silences)
	}
	if m := silences[0].Matchers[0]; m.IsEqual == nil || !*m.IsEqual {
		t.Errorf("matchers[0].isEqual = %v, want the default true", m.IsEqual)
	}
	if m := silences[1].Matchers[1]; m.IsEqual == nil || *m.IsEqual {
		t.Errorf("matchers[1].isEqual = %v, want false as sent", m.IsEqual)
	}
}

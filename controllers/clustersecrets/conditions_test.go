package clustersecrets_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/clustersecrets"
)

func TestSetConditions(t *testing.T) {
	ok := func(name string) clustersecrets.ClusterResult { return clustersecrets.ClusterResult{Cluster: name} }
	down := func(name, why string) clustersecrets.ClusterResult {
		return clustersecrets.ClusterResult{Cluster: name, Problem: why}
	}
	tests := []struct {
		name    string
		outcome clustersecrets.Outcome
		ready   metav1.ConditionStatus
		reason  string
		// reconciling and stalled: the condition is True (else absent).
		reconciling, stalled bool
		kstatus              kstatus.Status
		// message holds each of these.
		message []string
	}{
		{
			name:    "copied everywhere",
			outcome: clustersecrets.Outcome{Secrets: []string{"db", "tls"}, Clusters: []clustersecrets.ClusterResult{ok("east"), ok("west")}},
			ready:   metav1.ConditionTrue, reason: picchuv1alpha1.ReasonSynced, kstatus: kstatus.CurrentStatus,
			message: []string{"2 Secrets copied to east, west"},
		},
		{
			name: "credentials withheld",
			outcome: clustersecrets.Outcome{Secrets: []string{"db"}, Clusters: []clustersecrets.ClusterResult{ok("east")},
				Withheld: []clustersecrets.Withheld{{Name: "east", Why: "the credentials of the Cluster of that name"}}},
			ready: metav1.ConditionTrue, reason: picchuv1alpha1.ReasonSynced, kstatus: kstatus.CurrentStatus,
			message: []string{"1 Secret copied to east", "never copied", "east (the credentials"},
		},
		{
			name:    "no cluster selected",
			outcome: clustersecrets.Outcome{Secrets: []string{"db"}},
			ready:   metav1.ConditionTrue, reason: picchuv1alpha1.ReasonSynced, kstatus: kstatus.CurrentStatus,
			message: []string{"no enabled Cluster"},
		},
		{
			name: "one cluster unreachable, the other in line",
			outcome: clustersecrets.Outcome{Secrets: []string{"db"}, Clusters: []clustersecrets.ClusterResult{
				ok("east"), down("west", "circuit breaker Open; last error: GET west: connection refused"),
			}},
			ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonClustersUnavailable, reconciling: true,
			kstatus: kstatus.InProgressStatus,
			message: []string{"not synced on west: circuit breaker Open"},
		},
		{
			name: "two clusters failing, each named",
			outcome: clustersecrets.Outcome{Clusters: []clustersecrets.ClusterResult{
				down("east", "not ready"), down("west", "creating Secret shared/db: Forbidden (HTTP 403)"),
			}},
			ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonClustersUnavailable, reconciling: true,
			kstatus: kstatus.InProgressStatus,
			message: []string{"east: not ready", "west: creating Secret shared/db: Forbidden"},
		},
		{
			name: "a name held by someone else",
			outcome: clustersecrets.Outcome{Clusters: []clustersecrets.ClusterResult{
				{Cluster: "east", Conflicts: []string{"Secret shared/db exists and was not created by this ClusterSecrets"}}, ok("west"),
			}},
			ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonNotOwned, stalled: true, kstatus: kstatus.FailedStatus,
			message: []string{"east: Secret shared/db exists"},
		},
		{
			name: "a name held and a cluster down",
			outcome: clustersecrets.Outcome{Clusters: []clustersecrets.ClusterResult{
				{Cluster: "east", Conflicts: []string{"Secret shared/db exists and was not created by this ClusterSecrets"}}, down("west", "not ready"),
			}},
			ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonNotOwned, stalled: true,
			kstatus: kstatus.FailedStatus,
			message: []string{"east: Secret shared/db exists", "not synced on west: not ready"},
		},
		{
			name: "a selector that does not parse",
			outcome: clustersecrets.Outcome{Problems: []clustersecrets.Problem{
				{Field: "spec.source.labelSelector", Message: "unable to parse requirement"},
			}},
			ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonInvalidSpec, stalled: true, kstatus: kstatus.FailedStatus,
			message: []string{"spec.source.labelSelector: unable to parse requirement", "until the spec is fixed"},
		},
		{
			name:    "a source the operator does not read",
			outcome: clustersecrets.Outcome{NotWatched: "kube-system"},
			ready:   metav1.ConditionFalse, reason: picchuv1alpha1.ReasonSourceNotWatched, stalled: true, kstatus: kstatus.FailedStatus,
			message: []string{"namespace kube-system", "--namespaces"},
		},
		{
			name:    "a source in another namespace the operator does not allow",
			outcome: clustersecrets.Outcome{NotAllowed: "payments", Home: "picchu"},
			ready:   metav1.ConditionFalse, reason: picchuv1alpha1.ReasonSourceNotAllowed, stalled: true, kstatus: kstatus.FailedStatus,
			message: []string{"spec.source.namespace: payments is not this ClusterSecrets' namespace (picchu)",
				"--allow-cross-namespace-sources", "nothing is copied or removed"},
		},
		{
			name:    "a protected target namespace",
			outcome: clustersecrets.Outcome{Protected: "kube-system", Pattern: "kube-*"},
			ready:   metav1.ConditionFalse, reason: picchuv1alpha1.ReasonProtectedNamespace, stalled: true, kstatus: kstatus.FailedStatus,
			message: []string{`spec.target.namespace: kube-system is protected ("kube-*")`, "nothing is copied or removed"},
		},
		{
			name:    "being deleted, a cluster holding on",
			outcome: clustersecrets.Outcome{Deleting: true, Clusters: []clustersecrets.ClusterResult{down("west", "not ready")}},
			ready:   metav1.ConditionFalse, reason: picchuv1alpha1.ReasonDeleting, reconciling: true,
			kstatus: kstatus.InProgressStatus,
			message: []string{"not removed yet from west: not ready", "disabled or deleted is given up on"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// From a run that found something else, so stale conditions must go.
			var conds []metav1.Condition
			clustersecrets.SetConditions(&conds, 1, clustersecrets.Outcome{
				Problems: []clustersecrets.Problem{{Field: "spec.target.fieldSelector", Message: "x"}},
			})
			clustersecrets.SetConditions(&conds, 1, clustersecrets.Outcome{Clusters: []clustersecrets.ClusterResult{down("x", "y")}})
			clustersecrets.SetConditions(&conds, 2, tt.outcome)

			ready := meta.FindStatusCondition(conds, picchuv1alpha1.ConditionReady)
			if ready == nil || ready.Status != tt.ready || ready.Reason != tt.reason || ready.ObservedGeneration != 2 {
				t.Fatalf("Ready %+v, want %s %s", ready, tt.ready, tt.reason)
			}
			for _, m := range tt.message {
				if !strings.Contains(ready.Message, m) {
					t.Errorf("Ready message %q lacks %q", ready.Message, m)
				}
			}
			if got := meta.IsStatusConditionTrue(conds, picchuv1alpha1.ConditionReconciling); got != tt.reconciling {
				t.Errorf("Reconciling %v, want %v", got, tt.reconciling)
			}
			if got := meta.IsStatusConditionTrue(conds, picchuv1alpha1.ConditionStalled); got != tt.stalled {
				t.Errorf("Stalled %v, want %v", got, tt.stalled)
			}
			for _, c := range conds {
				if c.Status != metav1.ConditionTrue && c.Type != picchuv1alpha1.ConditionReady {
					t.Errorf("%s is %s: an abnormal-true condition that does not hold is removed", c.Type, c.Status)
				}
			}
			if got := kstatusOf(t, conds); got != tt.kstatus {
				t.Errorf("kstatus %s, want %s", got, tt.kstatus)
			}
			if clean := tt.kstatus == kstatus.CurrentStatus; tt.outcome.Clean() != clean && !tt.outcome.Deleting {
				t.Errorf("Clean() = %v", tt.outcome.Clean())
			}
		})
	}
}

func TestSetConditions_TheSameOutcomeChangesNothing(t *testing.T) {
	out := clustersecrets.Outcome{Secrets: []string{"db"}, Clusters: []clustersecrets.ClusterResult{{Cluster: "east"}, {Cluster: "west", Problem: "not ready"}}}
	var conds []metav1.Condition
	clustersecrets.SetConditions(&conds, 1, out)
	before := append([]metav1.Condition(nil), conds...)
	clustersecrets.SetConditions(&conds, 1, out)
	if len(before) != len(conds) {
		t.Fatalf("%v then %v", before, conds)
	}
	for i := range conds {
		if conds[i] != before[i] {
			t.Errorf("%+v became %+v", before[i], conds[i])
		}
	}
}

func TestSetConditions_BoundsTheMessage(t *testing.T) {
	var clusters []clustersecrets.ClusterResult
	for range 1000 {
		clusters = append(clusters, clustersecrets.ClusterResult{Cluster: "cluster", Problem: strings.Repeat("é", 20)})
	}
	var conds []metav1.Condition
	clustersecrets.SetConditions(&conds, 1, clustersecrets.Outcome{Clusters: clusters})
	for _, c := range conds {
		if len(c.Message) > 4096 || !strings.HasSuffix(c.Message, "...") || !utf8.ValidString(c.Message) {
			t.Errorf("%s message of %d bytes", c.Type, len(c.Message))
		}
	}
}

// kstatusOf is what kstatus computes of a ClusterSecrets with conds.
func kstatusOf(t *testing.T, conds []metav1.Condition) kstatus.Status {
	t.Helper()
	cs := &picchuv1alpha1.ClusterSecrets{
		TypeMeta:   metav1.TypeMeta{APIVersion: picchuv1alpha1.GroupVersion.String(), Kind: "ClusterSecrets"},
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "picchu", Generation: 2},
		Status:     picchuv1alpha1.ClusterSecretsStatus{ObservedGeneration: 2, Conditions: conds},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := kstatus.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second},
		{9, 256 * time.Second}, {10, 5 * time.Minute}, {64, 5 * time.Minute}, {1 << 30, 5 * time.Minute},
	}
	for _, tt := range tests {
		if got := clustersecrets.RetryAfter(tt.failures); got != tt.want {
			t.Errorf("RetryAfter(%d) = %s, want %s", tt.failures, got, tt.want)
		}
	}
}

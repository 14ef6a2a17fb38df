package mirror

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func TestSetConditions(t *testing.T) {
	type cond struct {
		status  metav1.ConditionStatus
		reason  string
		message string
	}
	for _, tc := range []struct {
		name                     string
		outcome                  Outcome
		ready                    cond
		reconciling, stalled     string // reason, "" when absent
		readyMessageContainsSome []string
	}{
		{
			name:    "copied",
			outcome: Outcome{Cluster: "dr", Copied: 2},
			ready:   cond{metav1.ConditionTrue, picchuv1alpha1.ReasonMirrored, "2 builds copied to cluster dr"},
		},
		{
			name:    "copied, some left out, with a note",
			outcome: Outcome{Cluster: "dr", Copied: 1, Pending: 2, Disabled: 1, Notes: []string{"ExternalSecrets not copied: cluster dr does not serve externalsecrets.external-secrets.io"}},
			ready: cond{metav1.ConditionTrue, picchuv1alpha1.ReasonMirrored,
				"1 build copied to cluster dr (not copied: 2 not deployed, 1 with disableMirroring); ExternalSecrets not copied: cluster dr does not serve externalsecrets.external-secrets.io"},
		},
		{
			name:        "unreachable",
			outcome:     Outcome{Cluster: "dr", Failures: []Failure{{Reason: picchuv1alpha1.ReasonUnreachable, Message: "cluster dr: connection refused"}}},
			ready:       cond{metav1.ConditionFalse, picchuv1alpha1.ReasonUnreachable, "cluster dr: connection refused"},
			reconciling: picchuv1alpha1.ReasonUnreachable,
		},
		{
			name:    "cluster not found",
			outcome: Outcome{Cluster: "dr", Failures: []Failure{{Reason: picchuv1alpha1.ReasonClusterNotFound, Message: "no Cluster dr in namespace picchu"}}},
			ready:   cond{metav1.ConditionFalse, picchuv1alpha1.ReasonClusterNotFound, "no Cluster dr in namespace picchu"},
			stalled: picchuv1alpha1.ReasonClusterNotFound,
		},
		{
			name: "a source in a namespace not allowed",
			outcome: Outcome{Cluster: "dr", Failures: []Failure{{Reason: picchuv1alpha1.ReasonSourceNotAllowed,
				Message: "spec.additionalConfigSelectors[0].namespace: payments: not this Mirror's namespace (picchu)"}}},
			ready:   cond{metav1.ConditionFalse, picchuv1alpha1.ReasonSourceNotAllowed, "spec.additionalConfigSelectors[0].namespace: payments: not this Mirror's namespace (picchu)"},
			stalled: picchuv1alpha1.ReasonSourceNotAllowed,
		},
		{
			name: "one build rejected, another copied",
			outcome: Outcome{Cluster: "dr", Copied: 1, Failures: []Failure{
				{Build: "echo-v2", App: "echo", Reason: picchuv1alpha1.ReasonRejected, Message: "applying Revision picchu/echo-v2: invalid"},
			}},
			ready:   cond{metav1.ConditionFalse, picchuv1alpha1.ReasonRejected, "revision echo-v2: applying Revision picchu/echo-v2: invalid; 1 build copied to cluster dr"},
			stalled: picchuv1alpha1.ReasonRejected,
		},
		{
			name: "an object the mirror did not write",
			outcome: Outcome{Cluster: "dr", Copied: 1, Failures: []Failure{
				{Build: "echo-v1", App: "echo", Reason: picchuv1alpha1.ReasonNotOwned, Message: "ConfigMap picchu/env exists"},
			}},
			ready:   cond{metav1.ConditionFalse, picchuv1alpha1.ReasonNotOwned, "revision echo-v1: ConfigMap picchu/env exists; 1 build copied to cluster dr"},
			stalled: picchuv1alpha1.ReasonNotOwned,
		},
		{
			name: "the whole mirror's failure first, then builds in order",
			outcome: Outcome{Cluster: "dr", Failures: []Failure{
				{Build: "b", Reason: picchuv1alpha1.ReasonConfigUnreadable, Message: "listing"},
				{Reason: picchuv1alpha1.ReasonUnreachable, Message: "timeout"},
				{Build: "a", Reason: picchuv1alpha1.ReasonRejected, Message: "invalid"},
			}},
			ready:       cond{metav1.ConditionFalse, picchuv1alpha1.ReasonUnreachable, "timeout; revision a: invalid; revision b: listing"},
			reconciling: picchuv1alpha1.ReasonUnreachable,
			stalled:     picchuv1alpha1.ReasonRejected,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &picchuv1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
			// What an earlier run set is replaced.
			SetConditions(m, Outcome{Cluster: "dr", Failures: []Failure{{Reason: picchuv1alpha1.ReasonRejected, Message: "old"}, {Reason: picchuv1alpha1.ReasonUnreachable, Message: "old"}}})
			SetConditions(m, tc.outcome)
			if m.Status.ObservedGeneration != 4 {
				t.Errorf("observedGeneration %d", m.Status.ObservedGeneration)
			}
			ready := meta.FindStatusCondition(m.Status.Conditions, picchuv1alpha1.ConditionReady)
			if ready == nil || ready.Status != tc.ready.status || ready.Reason != tc.ready.reason || ready.Message != tc.ready.message {
				t.Errorf("Ready %+v, want %+v", ready, tc.ready)
			}
			for typ, want := range map[string]string{picchuv1alpha1.ConditionReconciling: tc.reconciling, picchuv1alpha1.ConditionStalled: tc.stalled} {
				c := meta.FindStatusCondition(m.Status.Conditions, typ)
				switch {
				case want == "" && c != nil:
					t.Errorf("%s %+v, want none", typ, c)
				case want != "" && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != want):
					t.Errorf("%s %+v, want True %s", typ, c, want)
				}
			}
		})
	}
}

func TestSetConditions_LongMessageFits(t *testing.T) {
	var fs []Failure
	for i := range 2000 {
		fs = append(fs, Failure{Build: strings.Repeat("x", 20) + string(rune('a'+i%26)), Reason: picchuv1alpha1.ReasonRejected, Message: strings.Repeat("m", 40)})
	}
	m := &picchuv1alpha1.Mirror{}
	SetConditions(m, Outcome{Cluster: "dr", Failures: fs})
	if n := len(meta.FindStatusCondition(m.Status.Conditions, picchuv1alpha1.ConditionReady).Message); n > 32*1024 {
		t.Errorf("message of %d bytes", n)
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "picchu.medium.engineering", Resource: "revisions"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Revision"}, "x", nil), picchuv1alpha1.ReasonRejected},
		{"forbidden", apierrors.NewForbidden(gr, "x", errors.New("no")), picchuv1alpha1.ReasonRejected},
		{"unauthorized", apierrors.NewUnauthorized("no"), picchuv1alpha1.ReasonRejected},
		{"bad request", apierrors.NewBadRequest("no"), picchuv1alpha1.ReasonRejected},
		{"server error", apierrors.NewInternalError(errors.New("etcd")), picchuv1alpha1.ReasonUnreachable},
		{"timeout", apierrors.NewTimeoutError("slow", 1), picchuv1alpha1.ReasonUnreachable},
		{"conflict", apierrors.NewConflict(gr, "x", errors.New("changed")), picchuv1alpha1.ReasonUnreachable},
		{"no answer", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), picchuv1alpha1.ReasonUnreachable},
		{"not the mirror's", fmt.Errorf("copying: %w", &NotOwnedError{Object: "ConfigMap picchu/env"}), picchuv1alpha1.ReasonNotOwned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Errorf("Classify = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second},
		{9, 256 * time.Second}, {10, 5 * time.Minute}, {100, 5 * time.Minute},
	} {
		if got := Retry(tc.failures); got != tc.want {
			t.Errorf("Retry(%d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}

package kit

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AdmissionPolicy makes c's API server judge the requests rule matches by
// validation, as a cluster's own admission policy would: a
// ValidatingAdmissionPolicy named name, failing closed, and its binding
// with the Deny action. lift removes both, and the test's cleanup does if
// the test did not. A policy takes a moment to be in force: the caller
// probes it (a dry-run request) before relying on it.
func AdmissionPolicy(t testing.TB, c client.Client, name string, rule admissionregistrationv1.RuleWithOperations, validation admissionregistrationv1.Validation) (lift func()) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule}}},
			Validations:      []admissionregistrationv1.Validation{validation},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := c.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating admission policy %s: %v", name, err)
		}
	}
	lift = func() {
		for _, obj := range []client.Object{binding, policy} {
			if err := c.Delete(context.Background(), obj); client.IgnoreNotFound(err) != nil {
				t.Errorf("removing admission policy %s: %v", name, err)
			}
		}
	}
	t.Cleanup(lift)
	return lift
}

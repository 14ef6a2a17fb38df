package applier_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// TestCluster_ErrorsAboutASecretNeverQuoteIt has a cluster refuse, as an
// admission policy would, to create a Secret and then to delete one, each
// time with a message quoting its value: the errors Apply and Delete
// return, and the message an errors.As to an APIStatus reads (as the
// ReleaseManager's rejected build does), name the Secret and the answer's
// reason, never the value; and still classify as the answer.
func TestCluster_ErrorsAboutASecretNeverQuoteIt(t *testing.T) {
	ctx := context.Background()
	const value = "applier-leak-0xC0FFEE"
	encoded := base64.StdEncoding.EncodeToString([]byte(value))
	cs, _ := clusters(t)
	c := cs[0]
	ns := namespace(t, cs[:1])
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "quote-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression:        fmt.Sprintf("request.operation != 'CREATE' || object.metadata.namespace != %q || object.metadata.name != 'refused'", ns),
					MessageExpression: "'refused: the key is ' + object.data['KEY']",
					Reason:            ptr.To(metav1.StatusReasonInvalid),
				},
				{
					Expression:        fmt.Sprintf("request.operation != 'DELETE' || oldObject.metadata.namespace != %q", ns),
					MessageExpression: "'kept: the key is ' + oldObject.data['KEY']",
					Reason:            ptr.To(metav1.StatusReasonForbidden),
				},
			},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	// A Secret the cluster takes, to be refused its deletion.
	kept := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns, Labels: map[string]string{picchuv1alpha1.LabelApp: "demo"}},
		Data: map[string][]byte{"KEY": []byte(value)}}
	if err := c.Apply(ctx, kept); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := c.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Client.Delete(context.Background(), obj) })
	}
	refused := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "refused", Namespace: ns, Labels: map[string]string{picchuv1alpha1.LabelApp: "demo"}},
		Data: map[string][]byte{"KEY": []byte(value)}}
	kit.Eventually(t, 30*time.Second, "the policy in force", func() error {
		err := c.Client.Create(ctx, refused.DeepCopy(), client.DryRunAll)
		if apierrors.IsInvalid(err) && strings.Contains(err.Error(), encoded) {
			return nil
		}
		return fmt.Errorf("a dry-run create gave %v", err)
	})

	for _, tc := range []struct {
		what string
		err  error
		want string
		is   func(error) bool
	}{
		{"apply", c.Apply(ctx, refused), "applying Secret " + ns + "/refused: Invalid (HTTP 422", apierrors.IsInvalid},
		{"delete", c.Delete(ctx, kept), "deleting Secret " + ns + "/kept: Forbidden (HTTP 403", apierrors.IsForbidden},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.what)
			continue
		}
		var status apierrors.APIStatus
		if !errors.As(tc.err, &status) {
			t.Fatalf("%s: %v carries no answer", tc.what, tc.err)
		}
		for _, msg := range []string{tc.err.Error(), status.Status().Message} {
			if strings.Contains(msg, value) || strings.Contains(msg, encoded) {
				t.Errorf("%s: %q quotes the value", tc.what, msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("%s: %q lacks %q", tc.what, msg, tc.want)
			}
		}
		if !tc.is(tc.err) {
			t.Errorf("%s: %v is not classified as the answer", tc.what, tc.err)
		}
	}
}

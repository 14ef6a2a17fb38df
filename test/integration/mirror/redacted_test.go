package mirror_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// mirrorCondition waits until the Mirror's condition of type has status
// and reason, for its generation, and its message holds each of want.
func mirrorCondition(t testing.TB, name, typ string, status metav1.ConditionStatus, reason string, want ...string) *picchuv1alpha1.Mirror {
	t.Helper()
	m := &picchuv1alpha1.Mirror{}
	kit.Eventually(t, 30*time.Second, fmt.Sprintf("mirror %s %s=%s (%s)", name, typ, status, reason), func() error {
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: name}, m); err != nil {
			return err
		}
		c := meta.FindStatusCondition(m.Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason || m.Status.ObservedGeneration != m.Generation {
			return fmt.Errorf("generation %d, observed %d, conditions %+v", m.Generation, m.Status.ObservedGeneration, m.Status.Conditions)
		}
		for _, w := range want {
			if !strings.Contains(c.Message, w) {
				return fmt.Errorf("%s %q, without %q", typ, c.Message, w)
			}
		}
		return nil
	})
	return m
}

// TestMirror_ARefusedSecretCopyIsNotQuoted has the mirror refuse a
// build's Secret as an admission policy would, with a message quoting its
// value: the Mirror says Rejected, naming the build and the Secret, and
// the value is nowhere in its status.
func TestMirror_ARefusedSecretCopyIsNotQuoted(t *testing.T) {
	ctx := context.Background()
	const value = "mirror-leak-0xC0FFEE"
	encoded := base64.StdEncoding.EncodeToString([]byte(value))
	ensureDRMirror(t)
	lift := kit.AdmissionPolicy(t, secondClient, "quote-leaky-keys", admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
	}, admissionregistrationv1.Validation{
		Expression:        "object.metadata.name != 'leaky-keys'",
		MessageExpression: "'refused: the key is ' + object.data['KEY']",
		Reason:            ptr.To(metav1.StatusReasonInvalid),
	})
	kit.Eventually(t, 30*time.Second, "the policy in force on the mirror", func() error {
		probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "leaky-keys", Namespace: "default"}, Data: map[string][]byte{"KEY": []byte("probe")}}
		err := secondClient.Create(ctx, probe, client.DryRunAll)
		if apierrors.IsInvalid(err) {
			return nil
		}
		return fmt.Errorf("a dry-run create gave %v", err)
	})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "leaky-keys", Namespace: env.Namespace,
		Labels: map[string]string{"config": "leaky"}}, Data: map[string][]byte{"KEY": []byte(value)}}
	rev := build{app: "leaky", tag: "v1", commit: 1, config: "leaky"}.revision()
	create(t, secret, rev)
	// The refusal gone, and the build with it, the Mirror is Ready again.
	t.Cleanup(func() {
		lift()
		for _, obj := range []client.Object{rev, secret} {
			if err := env.Delivery.Client.Delete(ctx, obj); err != nil {
				t.Error(err)
			}
		}
		mirrorCondition(t, drMirror, picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonMirrored)
	})

	m := mirrorCondition(t, drMirror, picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonRejected,
		"revision leaky-v1: applying Secret "+env.Namespace+"/leaky-keys on cluster", "Invalid (HTTP 422")
	status, err := json.Marshal(m.Status)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(status), value) || strings.Contains(string(status), encoded) {
		t.Errorf("the Mirror's status quotes the Secret's value:\n%s", status)
	}
}

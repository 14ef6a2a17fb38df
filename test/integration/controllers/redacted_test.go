package controllers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// refuseSecretQuotingIt makes target's API server refuse, as invalid, the
// Secret name in namespace with a message that quotes its data key key (as
// the API server stores it, base64: CEL has no decoder), as an admission
// policy may. It returns once the policy is in force.
func refuseSecretQuotingIt(t *testing.T, target *harness.Target, namespace, name, key string) {
	t.Helper()
	ctx := context.Background()
	policyName := "quote-" + namespace + "-" + name
	kit.AdmissionPolicy(t, target.Client, policyName, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
	}, admissionregistrationv1.Validation{
		Expression:        fmt.Sprintf("!(object.metadata.namespace == %q && object.metadata.name == %q)", namespace, name),
		MessageExpression: fmt.Sprintf("'refused: the value is ' + object.data[%q]", key),
		Reason:            ptr.To(metav1.StatusReasonInvalid),
	})
	// The app's namespace, made before Picchu's first apply (so that the
	// policy can be probed in it), labelled as Picchu labels it: Picchu
	// adopts it, where it would leave a namespace of someone else's alone.
	appNamespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
		picchuv1alpha1.LabelApp: strings.TrimSuffix(namespace, "-production"), picchuv1alpha1.LabelTarget: "production",
	}}}
	if err := target.Client.Create(ctx, appNamespace); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 30*time.Second, "the policy is in force on "+target.Name, func() error {
		probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: map[string][]byte{key: []byte("probe")}}
		err := target.Client.Create(ctx, probe, client.DryRunAll)
		if apierrors.IsInvalid(err) && strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte("probe"))) {
			return nil
		}
		return fmt.Errorf("a dry-run create gave %v", err)
	})
}

// TestReleaseManager_ARefusedSecretCopyIsNotQuoted has a target refuse a
// build's copy of its configSelector's Secret, as an admission policy
// whose message quotes the value: the build fails for the rejection, and
// the value is nowhere Picchu tells of it (the Revision's failed-reason,
// which Slack is told, its status, the ReleaseManager's status, the events).
func TestReleaseManager_ARefusedSecretCopyIsNotQuoted(t *testing.T) {
	ctx := context.Background()
	const app = "quoted"
	const value = "quoted-0xC0FFEE-hunter2"
	encoded := base64.StdEncoding.EncodeToString([]byte(value))
	ns := app + "-production"
	refusing := env.Targets[0]
	secretName := app + "-v1-token"
	refuseSecretQuotingIt(t, refusing, ns, secretName, "TOKEN")
	if err := env.Delivery.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: env.Namespace, Labels: map[string]string{"config": app + "-v1"}},
		Data:       map[string][]byte{"TOKEN": []byte(value)},
	}); err != nil {
		t.Fatal(err)
	}
	v1 := appRevision(app, "v1", env.Fleet)
	if err := env.Delivery.Client.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}

	rev := &picchuv1alpha1.Revision{}
	kit.Eventually(t, 30*time.Second, "v1 failed for the rejection of its Secret", func() error {
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v1), rev); err != nil {
			return err
		}
		if !rev.Spec.Failed {
			return errors.New("not failed")
		}
		return nil
	})
	reason := rev.Annotations[picchuv1alpha1.AnnotationFailedReason]
	for _, want := range []string{"rejected in production by cluster " + refusing.Name, "Secret " + ns + "/" + secretName, "Invalid (HTTP 422"} {
		if !strings.Contains(reason, want) {
			t.Errorf("failed for %q, want %q in it", reason, want)
		}
	}
	rm := buildState(t, 30*time.Second, app, "v1", "failed")

	told := map[string]any{"the Revision's annotations": rev.Annotations, "the Revision's status": rev.Status, "the ReleaseManager's status": rm.Status}
	// Events are written in the background: wait for the rejection's.
	var notes []string
	kit.Eventually(t, 10*time.Second, "the Rejected event", func() error {
		list := &eventsv1.EventList{}
		if err := env.Delivery.Client.List(ctx, list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		notes = nil
		for _, e := range list.Items {
			if e.Regarding.Name == rev.Name || e.Regarding.Name == rm.Name {
				notes = append(notes, e.Reason+": "+e.Note)
			}
		}
		if !strings.Contains(strings.Join(notes, "\n"), "Rejected: v1 rejected by "+refusing.Name+": applying Secret") {
			return fmt.Errorf("no Rejected event names the cluster and the Secret: %q", notes)
		}
		return nil
	})
	told["the events"] = notes
	for what, v := range told {
		text, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(text), value) || strings.Contains(string(text), encoded) {
			t.Errorf("%s quote the Secret's value:\n%s", what, text)
		}
	}
}

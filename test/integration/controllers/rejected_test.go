package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// rejectReplicaSet makes target's API server refuse, as invalid, the
// ReplicaSet name in namespace: a ValidatingAdmissionPolicy, as a cluster's
// own rules would. It returns once the policy is in force.
func rejectReplicaSet(t *testing.T, target *harness.Target, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	policyName := "reject-" + namespace + "-" + name
	kit.AdmissionPolicy(t, target.Client, policyName, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"replicasets"}},
	}, admissionregistrationv1.Validation{
		Expression: fmt.Sprintf("!(object.metadata.namespace == %q && object.metadata.name == %q)", namespace, name),
		Message:    "this cluster runs no build " + name + " of " + namespace,
	})
	kit.Eventually(t, 30*time.Second, "the policy is in force on "+target.Name, func() error {
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: appsv1.ReplicaSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"probe": "policy"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"probe": "policy"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}},
				},
			},
		}
		err := target.Client.Create(ctx, rs, client.DryRunAll)
		if apierrors.IsInvalid(err) {
			return nil
		}
		return fmt.Errorf("a dry-run create gave %v", err)
	})
}

// TestReleaseManager_ARejectedBuildFailsAlone releases v1, then makes one
// target refuse v2's ReplicaSet, as a cluster's admission policy would: v2
// fails with the API server's reason, instead of timing out, and the app
// goes on meanwhile: v1 keeps its traffic on both clusters, both clusters'
// routing is synced, and v2's ReplicaSet runs on the other cluster until
// the rollback takes it away.
func TestReleaseManager_ARejectedBuildFailsAlone(t *testing.T) {
	ctx := context.Background()
	const app = "rejects"
	ns := app + "-production"
	config(t, app, "v1")
	config(t, app, "v2")
	v1 := withCommitTime(appRevision(app, "v1", env.Fleet), "2026-11-01T10:00:00Z")
	if err := env.Delivery.Client.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	buildState(t, 10*time.Second, app, "v1", "released")

	refusing, other := env.Targets[0], env.Targets[1]
	rejectReplicaSet(t, refusing, ns, "v2")
	v2 := withCommitTime(appRevision(app, "v2", env.Fleet), "2026-11-02T10:00:00Z")
	if err := env.Delivery.Client.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	replicaSet(t, other, app, "v2")
	kit.Eventually(t, 30*time.Second, "v2 failed for its rejection", func() error {
		rev := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v2), rev); err != nil {
			return err
		}
		reason := rev.Annotations[picchuv1alpha1.AnnotationFailedReason]
		if !rev.Spec.Failed {
			return fmt.Errorf("not failed")
		}
		if !strings.Contains(reason, "rejected in production by cluster "+refusing.Name) ||
			!strings.Contains(reason, "this cluster runs no build v2") {
			return fmt.Errorf("failed for %q, want the rejection and the API server's message", reason)
		}
		return nil
	})
	rm := buildState(t, 30*time.Second, app, "v2", "failed")
	for _, st := range rm.Status.Revisions {
		if st.Tag == "v1" && (st.State.Current != "released" || st.CurrentPercent != 100) {
			t.Errorf("v1 is %s at %d%%, want released at 100%%", st.State.Current, st.CurrentPercent)
		}
	}
	for _, c := range rm.Status.Clusters {
		if c.Name == other.Name && !c.Synced {
			t.Errorf("%s, which takes v2, is not synced: %s", c.Name, c.Message)
		}
	}
	// Failed, v2 is not offered to the refusing cluster again: every
	// cluster is synced, and the app is Ready.
	kit.Eventually(t, 30*time.Second, "every cluster synced once v2 failed", func() error {
		rm := buildState(t, time.Second, app, "v2", "failed")
		for _, c := range rm.Status.Clusters {
			if !c.Synced {
				return fmt.Errorf("%s not synced: %s", c.Name, c.Message)
			}
		}
		if c := condition(rm, picchuv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready %+v", c)
		}
		return nil
	})
}

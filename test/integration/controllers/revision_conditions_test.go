package controllers_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// kubectlWait starts "kubectl wait --for=condition=<condition>" on a
// Revision against the delivery cluster, with the kubectl of the
// Kubernetes binaries, and returns a function that waits for it to end and
// returns its error with its output.
func kubectlWait(t *testing.T, name, condition string) func() error {
	t.Helper()
	assets, err := kit.Assets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.Delivery.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["delivery"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["delivery"] = &clientcmdapi.Context{Cluster: "delivery", AuthInfo: "admin"}
	kc.CurrentContext = "delivery"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(assets, "kubectl"), "--kubeconfig", kubeconfig, "--namespace", env.Namespace,
		"wait", "--for=condition="+condition, "--timeout=60s", "revision/"+name)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return func() error {
		if err := <-done; err != nil {
			return fmt.Errorf("kubectl wait --for=condition=%s revision/%s: %w: %s", condition, name, err, out.String())
		}
		return nil
	}
}

// recordRelease writes, in the ReleaseManager of app in target (which the
// ReleaseManager controller is told to leave alone), the release record of
// tag: its state and percent.
func recordRelease(t *testing.T, app, target, tag, state string, percent int32) {
	t.Helper()
	ctx := context.Background()
	c := env.Delivery.Client
	key := client.ObjectKey{Namespace: env.Namespace, Name: app + "-" + target}
	kit.Eventually(t, 20*time.Second, "release manager "+key.Name, func() error {
		return c.Get(ctx, key, &picchuv1alpha1.ReleaseManager{})
	})
	if err := env.Apps().Record(ctx, app, target, func(st *picchuv1alpha1.ReleaseManagerStatus) {
		entry := picchuv1alpha1.ReleaseManagerRevisionStatus{
			Tag: tag, State: picchuv1alpha1.ReleaseManagerRevisionStateStatus{Current: state, Target: state},
			CurrentPercent: percent, PeakPercent: percent, ReleaseEligible: true,
		}
		found := false
		for i := range st.Revisions {
			if st.Revisions[i].Tag == tag {
				st.Revisions[i], found = entry, true
			}
		}
		if !found {
			st.Revisions = append(st.Revisions, entry)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// revisionCondition waits until the Revision's condition of type has status,
// reason and, unless empty, message, and returns it.
func revisionCondition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	t.Helper()
	var out metav1.Condition
	kit.Eventually(t, 20*time.Second, fmt.Sprintf("revision %s %s=%s (%s)", name, typ, status, reason), func() error {
		rev := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: name}, rev); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rev.Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason || (message != "" && c.Message != message) {
			return fmt.Errorf("conditions %+v", rev.Status.Conditions)
		}
		if c.ObservedGeneration != rev.Generation {
			return fmt.Errorf("%s observed generation %d, generation %d", typ, c.ObservedGeneration, rev.Generation)
		}
		out = *c
		return nil
	})
	return out
}

// TestRevisionReconciler_Conditions runs the Revision controller on two
// builds of an app: one its target releases, whose Reconciling condition
// follows the ramp and which "kubectl wait --for=condition=Ready" sees
// released, and one its target times out, which Picchu fails and
// "kubectl wait --for=condition=Stalled" sees failed, with the reason.
func TestRevisionReconciler_Conditions(t *testing.T) {
	ctx := context.Background()
	c := env.Delivery.Client
	production := picchuv1alpha1.RevisionTarget{Name: "production", Fleet: "nowhere",
		Release: picchuv1alpha1.ReleaseInfo{Eligible: true}}
	build := func(tag string) *picchuv1alpha1.Revision {
		return &picchuv1alpha1.Revision{
			ObjectMeta: metav1.ObjectMeta{Name: "gauge-" + tag, Namespace: env.Namespace},
			Spec: picchuv1alpha1.RevisionSpec{
				App:     picchuv1alpha1.RevisionApp{Name: "gauge", Tag: tag, Image: "gauge:" + tag},
				Targets: []picchuv1alpha1.RevisionTarget{production},
			},
		}
	}

	v1 := build("v1")
	if err := c.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	// Before its target records it, a build is on its way.
	revisionCondition(t, v1.Name, picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, picchuv1alpha1.ReasonProgressing, "production: pending")
	ready := kubectlWait(t, v1.Name, picchuv1alpha1.ConditionReady)

	recordRelease(t, "gauge", "production", "v1", "releasing", 40)
	revisionCondition(t, v1.Name, picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, picchuv1alpha1.ReasonProgressing, "production: releasing 40%")
	recordRelease(t, "gauge", "production", "v1", "released", 100)
	if err := ready(); err != nil {
		t.Fatal(err)
	}
	revisionCondition(t, v1.Name, picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonReleased, "production: released")
	rev := &picchuv1alpha1.Revision{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(v1), rev); err != nil {
		t.Fatal(err)
	}
	if meta.FindStatusCondition(rev.Status.Conditions, picchuv1alpha1.ConditionReconciling) != nil ||
		meta.FindStatusCondition(rev.Status.Conditions, picchuv1alpha1.ConditionStalled) != nil {
		t.Errorf("a released build keeps Reconciling or Stalled: %+v", rev.Status.Conditions)
	}

	v2 := build("v2")
	if err := c.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	stalled := kubectlWait(t, v2.Name, picchuv1alpha1.ConditionStalled)
	recordRelease(t, "gauge", "production", "v2", "timingout", 0)
	if err := stalled(); err != nil {
		t.Fatal(err)
	}
	// The message is the failed-reason annotation.
	failed := revisionCondition(t, v2.Name, picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, picchuv1alpha1.ReasonFailed, "timed out in production")
	notReady := revisionCondition(t, v2.Name, picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonFailed, "")
	if !strings.HasPrefix(notReady.Message, "timed out in production") {
		t.Errorf("Ready message %q", notReady.Message)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(v2), rev); err != nil {
		t.Fatal(err)
	}
	if !rev.Spec.Failed || rev.Annotations[picchuv1alpha1.AnnotationFailedReason] != failed.Message {
		t.Errorf("failed %v, annotations %v", rev.Spec.Failed, rev.Annotations)
	}
}

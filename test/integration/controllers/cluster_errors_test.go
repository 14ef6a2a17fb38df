package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// TestReleaseManager_ClusterErrorsAreConditionsNotBackoff makes a hot
// standby cluster reject every write while a build ramps: each run records
// the standby's failure in the status and its conditions and comes back at
// its due time, rather than returning an error whose exponential backoff
// would let the ramp's steps slip by minutes. The ramp completes on the live
// cluster, and no run of the ReleaseManager controller fails.
func TestReleaseManager_ClusterErrorsAreConditionsNotBackoff(t *testing.T) {
	ctx := context.Background()
	live, standby := env.Targets[0], env.Targets[1]
	cl := standby.Cluster.DeepCopy()
	var before *picchuv1alpha1.ClusterSpec
	if err := kit.Update(ctx, env.Delivery.Client, cl, func(cl *picchuv1alpha1.Cluster) {
		before = cl.Spec.DeepCopy()
		cl.Spec.HotStandby = true
	}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := kit.Update(ctx, env.Delivery.Client, cl, func(cl *picchuv1alpha1.Cluster) {
			cl.Spec = *before
		}); err != nil {
			t.Errorf("restoring %s: %v", standby.Name, err)
		}
	}()
	undo := targetWrites.rejectWrites(standby.Proxy.Addr)
	defer undo()

	const app = "stubborn"
	errorsBefore := reconcilesWith(t, "releasemanager", "error")
	config(t, app, "v1")
	config(t, app, "v2")
	v1, v2 := appRevision(app, "v1", env.Fleet), appRevision(app, "v2", env.Fleet)
	v1.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: "2026-11-01T10:00:00Z"}
	v2.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: "2026-11-02T10:00:00Z"}
	if err := env.Delivery.Client.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	makeReady(t, live, app, "v1")
	buildState(t, 20*time.Second, app, "v1", "released")
	if err := env.Delivery.Client.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	makeReady(t, live, app, "v2")
	rm := buildState(t, 30*time.Second, app, "v2", "released")

	var standbyStatus *picchuv1alpha1.ReleaseManagerClusterStatus
	for i := range rm.Status.Clusters {
		if rm.Status.Clusters[i].Name == standby.Name {
			standbyStatus = &rm.Status.Clusters[i]
		}
	}
	if standbyStatus == nil || standbyStatus.Synced || !strings.Contains(standbyStatus.Message, "injected: this cluster rejects writes") {
		t.Errorf("the standby's status %+v, want unsynced with the API server's reason", standbyStatus)
	}
	if c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionReconciling); c == nil ||
		c.Status != metav1.ConditionTrue || c.Reason != picchuv1alpha1.ReasonClustersUnavailable {
		t.Errorf("reconciling condition %+v, want True with reason %s", c, picchuv1alpha1.ReasonClustersUnavailable)
	}
	if n := reconcilesWith(t, "releasemanager", "error") - errorsBefore; n != 0 {
		t.Errorf("%v runs of the release manager controller failed; a cluster's error must not fail the run", n)
	}
}

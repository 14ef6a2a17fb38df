package release_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// TestRelease_EditingARunningBuildChangesItsPodTemplate proves the
// documented choice (docs/api.md, "Editing a build that runs"): the
// Revision is the desired state of its build, so a change to what goes
// into its pods reaches the ReplicaSet of that build on every cluster, in
// place: the same ReplicaSet, its replicas and its traffic kept; no new
// build, no restart of the pods already running.
func TestRelease_EditingARunningBuildChangesItsPodTemplate(t *testing.T) {
	const app = "edited"
	ctx := context.Background()
	rev := create(t, build{app: app, tag: "v1", commit: 1, delay: time.Second})
	state(t, 30*time.Second, app, "v1", "released")
	routes(t, app, map[string]int32{"v1": 100})

	before := map[string]types.UID{}
	for _, target := range env.Targets {
		rs := &appsv1.ReplicaSet{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: "v1"}, rs); err != nil {
			t.Fatalf("%s: %v", target.Name, err)
		}
		if hasEnv(rs, "EDITED", "yes") {
			t.Fatalf("%s: the template has EDITED before the edit", target.Name)
		}
		before[target.Name] = rs.UID
	}

	if err := kit.Update(ctx, env.Delivery.Client, rev, func(rev *picchuv1alpha1.Revision) {
		rev.Spec.Targets[0].Env = append(rev.Spec.Targets[0].Env, corev1.EnvVar{Name: "EDITED", Value: "yes"})
	}); err != nil {
		t.Fatal(err)
	}

	for _, target := range env.Targets {
		kit.Eventually(t, 30*time.Second, target.Name+": v1's template has the edit", func() error {
			rs := &appsv1.ReplicaSet{}
			if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: "v1"}, rs); err != nil {
				return err
			}
			if rs.UID != before[target.Name] {
				return fmt.Errorf("the ReplicaSet was replaced (uid %s, was %s)", rs.UID, before[target.Name])
			}
			if !hasEnv(rs, "EDITED", "yes") {
				return fmt.Errorf("no EDITED=yes in the template yet")
			}
			return nil
		})
	}
	replicas(t, app, "v1", 1)
	routes(t, app, map[string]int32{"v1": 100})
	state(t, time.Second, app, "v1", "released")
}

// hasEnv says whether the app container of rs's pod template has name=value.
func hasEnv(rs *appsv1.ReplicaSet, name, value string) bool {
	if len(rs.Spec.Template.Spec.Containers) == 0 {
		return false
	}
	return slices.Contains(rs.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: value})
}

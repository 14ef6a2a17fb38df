package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

// ballastNamespace holds the pods that fill a cluster's nodes.
const ballastNamespace = "ballast"

// fill binds to each of c's schedulable nodes a pod that asks for all the
// CPU its bound pods leave: no other pod that asks for CPU fits on them.
// Cleanup deletes the pods.
func fill(t *testing.T, c *fleet.Cluster) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ballastNamespace}}
	if err := c.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ballastNamespace), client.GracePeriodSeconds(0)); err != nil {
			t.Errorf("deleting the ballast of %s: %v", c.Name, err)
		}
	})
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		free := n.Status.Allocatable.Cpu().MilliValue()
		for _, p := range pods.Items {
			if p.Spec.NodeName != n.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, ctr := range p.Spec.Containers {
				free -= ctr.Resources.Requests.Cpu().MilliValue()
			}
		}
		if free <= 0 {
			continue
		}
		ballast := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ballastNamespace, Name: "ballast-" + n.Name},
			Spec: corev1.PodSpec{
				NodeName: n.Name,
				Containers: []corev1.Container{{Name: "ballast", Image: "ballast", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(free, resource.DecimalSI)},
				}}},
			},
		}
		if err := c.Client.Create(ctx, ballast); err != nil {
			t.Fatal(err)
		}
	}
}

// preflightCondition is the Preflight condition of app's ReleaseManager.
func preflightCondition(ctx context.Context, app string) (*metav1.Condition, error) {
	rm := &picchuv1alpha1.ReleaseManager{}
	if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm); err != nil {
		return nil, err
	}
	return meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionPreflight), nil
}

// TestPreflightHoldsAFullCluster: app "roomy" runs v1 on east and west.
// West's nodes are then filled, so v2's pod there finds no room: v2 does
// not start its canary, both clusters keep routing v1 alone, and the
// ReleaseManager's Preflight condition gives the capacity figures. Once a
// node is added to west, v2's pod runs there, and v2 canaries and is
// released everywhere.
func TestPreflightHoldsAFullCluster(t *testing.T) {
	ctx := context.Background()
	const app = "roomy"
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := story.Reset(ctx, lab, app); err != nil {
			t.Error(err)
		}
	})
	east, west := lab.Target("east"), lab.Target("west")
	apply(t, app, "v1", nil)
	until(t, 3*time.Minute, app, "v1 released", releasedEverywhere("v1"))

	fill(t, west)
	apply(t, app, "v2", nil)
	var held *metav1.Condition
	kit.Eventually(t, time.Minute, "v2 held on west for room", func() error {
		c, err := preflightCondition(ctx, app)
		if err != nil {
			return err
		}
		if c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("Preflight condition %+v", c)
		}
		held = c
		return nil
	})
	// The figures: what v2's pods ask, and what west's nodes have left.
	for _, part := range []string{"v2 held on cluster " + west.Name + ": capacity: ", "of v2 (each cpu 250m, memory 256Mi)", "find", "no room", "free cpu 0"} {
		if !strings.Contains(held.Message, part) {
			t.Errorf("Preflight condition %q does not say %q", held.Message, part)
		}
	}
	t.Logf("Preflight: %s: %s", held.Reason, held.Message)
	if held.Reason != "NoRoom" {
		t.Errorf("Preflight reason %q, want NoRoom", held.Reason)
	}
	// For a while, no canary starts: both clusters route v1 alone.
	holdUntil := time.Now().Add(15 * time.Second)
	if err := kit.Poll(ctx, pollInterval, 30*time.Second, app+": v2 holds", func(ctx context.Context) error {
		s := story.Observe(ctx, lab, app)
		for _, c := range []*fleet.Cluster{east, west} {
			cl := s.Cluster(c.Name)
			if cl.Err != nil {
				return cl.Err
			}
			if cl.Routes() != "v1=100" {
				t.Fatalf("%s routes %q while west is full\n%s", c.Name, cl.Routes(), recordOf(app))
			}
		}
		if st := s.Build("v2").State; st != "deploying" {
			t.Fatalf("v2 is %q while west is full, want deploying\n%s", st, recordOf(app))
		}
		if time.Now().Before(holdUntil) {
			return fmt.Errorf("holding")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// A node added to west has room.
	const extra = "roomy-extra"
	added := time.Now()
	if err := west.AddNode(ctx, extra, nil, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := west.DeleteNode(ctx, extra); err != nil {
			t.Error(err)
		}
	})
	until(t, time.Minute, app, "v2 canaries once west has a node with room", func(s story.Snapshot) error {
		if st := s.Build("v2").State; st != "canarying" && st != "canaried" && st != "pendingrelease" && st != "releasing" && st != "released" {
			return fmt.Errorf("v2 is %q", st)
		}
		return nil
	})
	t.Logf("v2 left its hold %s after the node was added", time.Since(added).Round(time.Millisecond))
	kit.Eventually(t, 30*time.Second, "the Preflight condition gone", func() error {
		c, err := preflightCondition(ctx, app)
		if err != nil {
			return err
		}
		if c != nil {
			return fmt.Errorf("Preflight condition %+v", c)
		}
		return nil
	})
	until(t, 3*time.Minute, app, "v2 released", releasedEverywhere("v2"))
}

package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/kit"
)

// floorNamespace holds the ReplicaSets of the floor, apart from the
// peer's Rollouts.
const floorNamespace = "floor"

// measureFloor is the cluster alone: how long a fresh cluster takes to
// run two pods of every app when the benchmark applies their ReplicaSets
// itself, 16 at a time, with no release tool at all. Any tool's first
// build creates those pods and waits for them, so no first build can be
// faster on this machine. The namespace is deleted, and gone, before it
// returns, so that the release measured next starts on a cluster as quiet
// as before.
func measureFloor(ctx context.Context, c config, cluster *fleet.Cluster) (time.Duration, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNamespace}}
	if err := cluster.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return 0, fmt.Errorf("creating namespace %s: %w", floorNamespace, err)
	}
	replicaSets, stop, err := watch(ctx, cluster, floorNamespace, &appsv1.ReplicaSet{}, "the floor's ReplicaSets")
	if err != nil {
		return 0, err
	}
	defer stop()
	start := time.Now()
	if err := applyApps(c.apps, func(app string) error {
		rs := floorReplicaSet(app)
		if err := cluster.Client.Patch(ctx, rs, client.Apply, client.FieldOwner("bench"), client.ForceOwnership); err != nil {
			return fmt.Errorf("ReplicaSet %s: %w", app, err)
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("applying the floor's ReplicaSets: %w", err)
	}
	if err := kit.Poll(ctx, watchPoll, c.timeout, "every ReplicaSet of the floor available", func(ctx context.Context) error {
		list := &appsv1.ReplicaSetList{}
		if err := replicaSets.List(ctx, list, client.InNamespace(floorNamespace)); err != nil {
			return err
		}
		available := 0
		for _, rs := range list.Items {
			if rs.Status.AvailableReplicas == podsPerBuild {
				available++
			}
		}
		if available < c.apps {
			return fmt.Errorf("%d of %d ReplicaSets have their 2 pods available", available, c.apps)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	took := time.Since(start)
	logf("floor: 2 pods of every app available in %s, from their ReplicaSets, no tool; deleting them", took.Round(time.Millisecond))
	if err := cluster.Client.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
		return 0, fmt.Errorf("deleting namespace %s: %w", floorNamespace, err)
	}
	if err := kit.Poll(ctx, watchPoll, c.timeout, "namespace "+floorNamespace+" gone", func(ctx context.Context) error {
		err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			return fmt.Errorf("namespace %s is still terminating", floorNamespace)
		}
		return err
	}); err != nil {
		return 0, err
	}
	return took, nil
}

// floorReplicaSet is a ReplicaSet running podsPerBuild pods of app like a
// first build's, as the benchmark's Rollouts and Revisions ask for.
func floorReplicaSet(app string) *unstructured.Unstructured {
	labels := map[string]any{"app": app, "version": "v1"}
	rs := object(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), app, map[string]any{
		"replicas": int64(podsPerBuild),
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "app", "image": "registry.example/" + app + ":v1",
				"ports":     []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
				"resources": map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "256Mi"}},
			}}},
		},
	})
	rs.SetNamespace(floorNamespace)
	return rs
}

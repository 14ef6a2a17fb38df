package mesh

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// build names the pods of one build on a cluster: the namespace of its
// app's route, its app and its tag.
type build struct{ namespace, app, tag string }

// readyBuilds are the builds of a cluster that have at least one ready pod.
type readyBuilds map[build]bool

// readReady lists, in one request, the pods of every build on a cluster
// (those labelled with an app and the pod tag that DestinationRule subsets
// and build Services select), and returns the builds with at least one
// ready pod: one a proxy sends requests to (podReady).
func readReady(ctx context.Context, c client.Client) (readyBuilds, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.HasLabels{picchuv1alpha1.LabelApp, picchuv1alpha1.LabelPodTag}); err != nil {
		return nil, fmt.Errorf("listing the pods of builds: %w", err)
	}
	ready := readyBuilds{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if podReady(p) {
			ready[build{p.Namespace, p.Labels[picchuv1alpha1.LabelApp], p.Labels[picchuv1alpha1.LabelPodTag]}] = true
		}
	}
	return ready, nil
}

// podReady says a pod is among its Service's ready endpoints: its Ready
// condition is true and it is not terminating (the endpoints controllers
// take a pod out once it has a deletion timestamp).
func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// clusterRead is what one interval reads of a cluster: its routes, and
// the builds with ready pods or why they could not be read.
type clusterRead struct {
	routes   routes
	ready    readyBuilds
	readyErr error
}

// readCluster reads a cluster's routes and the pods of its builds, at
// once, so that the pods cost the read no time. It fails when the routes
// cannot be read; pods that cannot be read leave the builds' readiness
// unknown (readyErr), and the traffic as the routes say.
func readCluster(ctx context.Context, c client.Client) (clusterRead, error) {
	var out clusterRead
	var wg sync.WaitGroup
	wg.Go(func() { out.ready, out.readyErr = readReady(ctx, c) })
	r, err := readRoutes(ctx, c)
	wg.Wait()
	if err != nil {
		return clusterRead{}, err
	}
	out.routes = r
	return out, nil
}

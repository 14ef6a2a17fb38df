package harness

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServeReplicaSets stands in for a cluster's ReplicaSet controller and
// kubelets, which envtest does not run: it reports every replica of every
// ReplicaSet on the server available, as soon as the ReplicaSet is created
// or resized. It runs until ctx ends; the error says why it stopped early.
// It refuses a server that runs real controllers (Server.Controllers).
func (s *Server) ServeReplicaSets(ctx context.Context) error {
	if s.Controllers {
		return errors.New("serving ReplicaSets: the server runs real controllers")
	}
	c, err := client.NewWithWatch(s.Config, client.Options{Scheme: s.Client.Scheme()})
	if err != nil {
		return fmt.Errorf("watch client: %w", err)
	}
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, &appsv1.ReplicaSetList{})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watching ReplicaSets: %w", err)
		}
		for ev := range w.ResultChan() {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			if err := markAvailable(ctx, c, rs); err != nil && ctx.Err() == nil {
				w.Stop()
				return err
			}
		}
	}
	return nil
}

// markAvailable reports every replica of rs available, when it is not yet.
func markAvailable(ctx context.Context, c client.Client, rs *appsv1.ReplicaSet) error {
	n := int32(1)
	if rs.Spec.Replicas != nil {
		n = *rs.Spec.Replicas
	}
	st := rs.Status
	if st.AvailableReplicas == n && st.Replicas == n && st.ObservedGeneration == rs.Generation {
		return nil
	}
	rs.Status = appsv1.ReplicaSetStatus{
		Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n, ObservedGeneration: rs.Generation,
	}
	err := c.Status().Update(ctx, rs)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// A newer version is on its way through the watch, or it is gone.
		return nil
	}
	if err != nil {
		return fmt.Errorf("reporting ReplicaSet %s/%s available: %w", rs.Namespace, rs.Name, err)
	}
	return nil
}

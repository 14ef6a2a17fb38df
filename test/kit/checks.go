package kit

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// LeaseHeld is nil once the Lease key read with c has a holder: a check
// for Eventually.
func LeaseHeld(ctx context.Context, c client.Reader, key client.ObjectKey) error {
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, key, lease); err != nil {
		return err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return fmt.Errorf("lease %s has no holder", key)
	}
	return nil
}

// ClusterReady is nil once the Cluster key read with c is Ready: a check
// for Eventually.
func ClusterReady(ctx context.Context, c client.Reader, key client.ObjectKey) error {
	cl := &picchuv1alpha1.Cluster{}
	if err := c.Get(ctx, key, cl); err != nil {
		return err
	}
	if !meta.IsStatusConditionTrue(cl.Status.Conditions, picchuv1alpha1.ConditionReady) {
		return fmt.Errorf("cluster %s: conditions %+v", key, cl.Status.Conditions)
	}
	return nil
}

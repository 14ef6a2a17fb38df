package releasemanager

import (
	"context"
	"time"

	"github.com/medium/picchu/plan"
	"github.com/medium/picchu/plan/applier"
)

// acted is what acting on the fleet came to.
type acted struct {
	// results are each usable cluster's, its error a *plan.Errors when
	// its steps failed.
	results applier.Results
	// externalSecretsMissing are the clusters where a build had
	// ExternalSecrets to copy and the cluster does not serve them.
	externalSecretsMissing []string
	// legacyRemoved are the original's leftovers the run deleted, each as
	// "cluster: Kind namespace/name" (plan.Outcome.LegacyRemoved).
	legacyRemoved []string
	// at is when every cluster's plan was done: a step's weights were on
	// every cluster that took them (picchu_release_step_lateness_seconds).
	at time.Time
}

// act carries out each usable cluster's Plan on every one of them at once.
func (r *Reconciler) act(ctx context.Context, fleet []*fleetCluster, plans []*plan.Cluster) acted {
	byName := map[string]*plan.Cluster{}
	var usable []*applier.Cluster
	for i, fc := range fleet {
		if plans[i].Skip == "" && fc.conn != nil {
			usable = append(usable, fc.conn)
			byName[fc.obj.Name] = plans[i]
		}
	}
	var missing, legacy clusterSet
	results := applier.ApplyFleet(ctx, usable, applier.Func(func(ctx context.Context, c *applier.Cluster) error {
		out, err := plan.Execute(ctx, c, byName[c.Name()])
		if out.ExternalSecretsUnserved {
			missing.add(c.Name())
		}
		for _, obj := range out.LegacyRemoved {
			legacy.add(c.Name() + ": " + obj)
		}
		return err
	}), r.ClusterTimeout)
	return acted{results: results, externalSecretsMissing: missing.sorted(), legacyRemoved: legacy.sorted(), at: r.Now()}
}

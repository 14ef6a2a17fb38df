package releasemanager

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

// meshMode is the mesh mode of the app's namespace (manifests.ModeOf): a
// build runs pods when this run syncs it or the fleet shows it wants some.
func (s *snapshot) meshMode() manifests.MeshMode {
	builds := make([]manifests.MeshBuild, 0, len(s.incarnations))
	for _, inc := range s.incarnations {
		builds = append(builds, manifests.MeshBuild{
			Ambient: inc.target != nil && inc.target.AmbientMesh,
			Running: inc.step.Action == release.Sync || s.observation.Live(inc.tag).Desired > 0,
		})
	}
	return manifests.ModeOf(builds)
}

// syncWaypoint applies the namespace's waypoint (its Gateway, options,
// disruption budget and autoscaler, sized by the newest build's target)
// while the mode needs one, and deletes them otherwise. A cluster that does
// not serve the Gateway API gets none, and an app that needs one there
// fails to sync with an error saying so.
func syncWaypoint(ctx context.Context, c *applier.Cluster, app, target string, newest *picchuv1alpha1.RevisionTarget, mode manifests.MeshMode) error {
	gateway := manifests.WaypointGateway(app, target)
	options, err := manifests.WaypointOptions(app, target, newest.WaypointResources)
	if err != nil {
		return err
	}
	objs := []client.Object{
		options, gateway,
		manifests.WaypointDisruptionBudget(app, target, newest.WaypointHPA),
		manifests.WaypointAutoscaler(app, target, newest.WaypointHPA),
	}
	if !manifests.WantsWaypoint(mode) {
		for _, obj := range objs {
			if err := c.Delete(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	}
	for _, obj := range objs {
		if err := c.Apply(ctx, obj); err != nil {
			if isNoKind(err) {
				return fmt.Errorf("the namespace's mode is %s and needs a waypoint, but the cluster does not serve %s: %w",
					mode, obj.GetObjectKind().GroupVersionKind().Kind, err)
			}
			return err
		}
	}
	return nil
}

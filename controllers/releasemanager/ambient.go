package releasemanager

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan"
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

// waypointSteps apply the namespace's waypoint (its Gateway, options,
// disruption budget and autoscaler, sized by the newest build's target)
// while the mode needs one, and delete them otherwise. A cluster that does
// not serve the Gateway API gets none, and an app that needs one there
// fails to sync with an error saying so.
func waypointSteps(app, target string, newest *picchuv1alpha1.RevisionTarget, mode manifests.MeshMode) []plan.Step {
	gateway := manifests.WaypointGateway(app, target)
	// Written out only when applied: every run of an app without a
	// waypoint removes it.
	options := manifests.WaypointOptionsName(app, target)
	if manifests.WantsWaypoint(mode) {
		var err error
		if options, err = manifests.WaypointOptions(app, target, newest.WaypointResources); err != nil {
			return []plan.Step{{Op: plan.Fail, Err: err}}
		}
	}
	objs := []client.Object{
		options, gateway,
		manifests.WaypointDisruptionBudget(app, target, newest.WaypointHPA),
		manifests.WaypointAutoscaler(app, target, newest.WaypointHPA),
	}
	steps := make([]plan.Step, len(objs))
	for i, obj := range objs {
		steps[i] = plan.Step{Op: plan.Remove, Object: obj}
		if manifests.WantsWaypoint(mode) {
			steps[i] = plan.Step{Op: plan.Apply, Object: obj,
				NeedsKind: fmt.Sprintf("the namespace's mode is %s and needs a waypoint", mode)}
		}
	}
	return steps
}

// Package plan holds the Plan of one target cluster for one run of a
// release: the objects to apply, in order, the objects and selections to
// delete or prune, and each build's ReplicaSet sizing as data, decided
// before anything is written. Execute carries a Plan out on a cluster
// through an applier.Cluster; it decides nothing beyond interpreting the
// Plan's conditional steps against what it reads there.
package plan

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cluster is the Plan of one cluster, carried out in the order of its
// fields: the app's access, each build in turn, then the routes, the
// waypoint and the monitoring. A failure of the app's steps stops the
// plan there; a build's failure stops that build alone.
type Cluster struct {
	// Name is the cluster's name.
	Name string
	// Skip says why the cluster is not acted on (it cannot be used), or "".
	Skip string
	// App are the app's namespace and access objects.
	App []Step
	// Builds are the builds' steps, newest first.
	Builds []Build
	// Routes are the app's Service, PDB and Istio objects.
	Routes []Step
	// Waypoint are the objects of the namespace's waypoint.
	Waypoint []Step
	// Monitoring are the app's monitoring objects.
	Monitoring []Step
}

// Action is what a run does with a build on a cluster.
type Action string

// The actions on a build.
const (
	// Sync applies the build's objects.
	Sync Action = "sync"
	// Retire applies the build's objects, at no replicas, as it leaves.
	Retire Action = "retire"
	// Delete deletes the build's objects.
	Delete Action = "delete"
)

// Build is the Plan of one build on a cluster.
type Build struct {
	Tag    string
	Action Action
	// Hold says why the build is not synced on the cluster (its image's
	// platforms): its steps are not taken and the build fails with it.
	Hold error
	// Steps are taken in order; the first that fails stops the build.
	Steps []Step
}

// Op is what a Step does.
type Op string

// The operations of a plan.
const (
	// Apply applies Object. With NeedsKind set, a cluster that does not
	// serve its kind fails with that reason; with Optional, such a cluster
	// skips it.
	Apply Op = "apply"
	// Remove deletes Object, by name.
	Remove Op = "delete"
	// RemoveAll deletes every object of Kinds in Namespace that Selector
	// selects.
	RemoveAll Op = "delete all"
	// Prune deletes the objects of Kinds[0] in Namespace that Selector
	// selects and whose names Keep does not hold.
	Prune Op = "prune"
	// Fail fails with Err: an object of the step could not be built.
	Fail Op = "fail"
	// ApplyCreating applies Object, first creating Namespace, which it is
	// in, when the cluster does not have it.
	ApplyCreating Op = "apply, creating its namespace"
	// ExternalSecrets applies Objects, the build's ExternalSecret copies,
	// then prunes as Prune does. On a cluster that does not serve them,
	// none are applied: the build's later ReplicaSet step takes its
	// Unserved variant, and the Plan's outcome names the cluster when
	// Makes is not empty.
	ExternalSecrets Op = "external secrets"
	// ScaleReplicaSet reads the build's live ReplicaSet and writes Object
	// (or Unserved, see ExternalSecrets) and its replicas as Replicas says.
	ScaleReplicaSet Op = "replica set"
)

// Step is one operation of a Plan; which fields count depends on Op.
type Step struct {
	Op Op
	// Object is the object to apply or delete.
	Object client.Object
	// Unserved is the ReplicaSet on a cluster that does not serve the
	// build's ExternalSecrets.
	Unserved client.Object
	// Objects are the ExternalSecret copies.
	Objects []client.Object
	// Namespace, Selector, Kinds and Keep select what to delete or prune.
	Namespace string
	Selector  map[string]string
	Kinds     []schema.GroupVersionKind
	Keep      []string
	// Makes are the Secrets the ExternalSecret copies make.
	Makes []string
	// Replicas sizes the ReplicaSet.
	Replicas *Replicas
	// Err is the error of a Fail step.
	Err error
	// NeedsKind is why a cluster must serve Object's kind.
	NeedsKind string
	// Optional says a cluster that does not serve Object's kind skips it.
	Optional bool
	// Legacy marks a Prune whose deletions are leftovers of the original
	// operator's, which the Plan's outcome reports (Outcome.LegacyRemoved).
	Legacy bool
	// IfAutoscaled says the step is taken only when the build's live
	// ReplicaSet, as the ScaleReplicaSet step read it, names an
	// autoscaler: a build that never had one has none to delete.
	IfAutoscaled bool
}

// Replicas says how a build's ReplicaSet is sized on a cluster, depending
// on whether it exists there:
//
//   - it exists and Set: its replicas are set to To (before the main
//     apply, so they never lack an owner), then it is applied;
//   - it is absent and SkipAbsent (a retiring build): nothing is written;
//   - it is absent: it is created at CreateAt in one request, then applied;
//   - it exists and its replicas are the autoscaler's: they are taken over
//     from an older Picchu's main apply unchanged, it is applied, and, when
//     StartAt > 0 and it was left at 0, its replicas are set to StartAt
//     (an HPA takes 0 replicas as scaling turned off).
type Replicas struct {
	Set        bool
	To         int32
	SkipAbsent bool
	CreateAt   int32
	StartAt    int32
}

package v1alpha1

// Labels and annotations Picchu reads or writes. Their values are the
// original's, so objects labelled by it are recognised.
const (
	// LabelApp names the app of a Revision, ReleaseManager or remote object.
	LabelApp = "picchu.medium.engineering/app"
	// LabelTag names the tag (build) of a Revision or remote object.
	LabelTag = "picchu.medium.engineering/tag"
	// LabelTarget names the target of a ReleaseManager or remote object.
	LabelTarget = "picchu.medium.engineering/target"
	// LabelFleet names the fleet of a Cluster or ReleaseManager.
	LabelFleet = "picchu.medium.engineering/fleet"
	// LabelIgnore on a live object makes Picchu leave it alone, whatever
	// its value (an empty one too, as the original did): see Ignored.
	LabelIgnore = "picchu.medium.engineering/ignore"
	// LabelInstance, on an object Picchu writes on a target cluster, names
	// the Picchu that wrote it (--instance-id: by default the UID of its
	// delivery cluster's kube-system namespace), and LabelDeliveryNamespace
	// the delivery namespace of the Cluster it wrote it through. A Picchu
	// never writes over nor deletes an object either label gives to another.
	LabelInstance          = "picchu.medium.engineering/instance"
	LabelDeliveryNamespace = "picchu.medium.engineering/delivery-namespace"
	// LabelPodTag is set on pods so that DestinationRule subsets select one tag.
	LabelPodTag = "tag.picchu.medium.engineering"
	// LabelFleetPrefix is the prefix of the per-fleet label on a Revision
	// ("fleet.picchu.medium.engineering/<fleet>").
	LabelFleetPrefix = "fleet.picchu.medium.engineering/"
	// LabelTargetDeletablePrefix is the prefix of the garbage-collection label on a
	// Revision ("target-deletable.picchu.medium.engineering/<target>=true").
	LabelTargetDeletablePrefix = "target-deletable.picchu.medium.engineering/"

	// AnnotationGitCommitterTimestamp orders Revisions by commit time.
	AnnotationGitCommitterTimestamp = "git-scm.com/committer-timestamp"
	// AnnotationFailedAt is set together with spec.failed.
	AnnotationFailedAt = "picchu.medium.engineering/failed-at-timestamp"
	// AnnotationFailedReason says why Picchu set spec.failed, such as "timed out in production".
	AnnotationFailedReason = "picchu.medium.engineering/failed-reason"
	// AnnotationPause on a Revision pauses its build (any value; kubectl
	// picchu sets the time): it keeps the traffic it has in every target,
	// no step up is taken and its canary's timer stops. Removing it resumes.
	// A failure, an abort or a rollback still proceeds.
	AnnotationPause = "picchu.medium.engineering/pause"
	// AnnotationPromote on a Revision asks to move its build on now, each
	// still subject to the capacity gate: "next@<time>" ends a running
	// canary, starts a release waiting on its schedule, or takes the next
	// step of a ramp without waiting out the step delay; "full@<time>" does
	// the same and then ramps straight to release.max. Each target acts on
	// a request once (status.revisions[].promoted records it); the time
	// makes a new request differ from the last.
	AnnotationPromote = "picchu.medium.engineering/promote"
	// AnnotationRollback "<time>" on the Revision of an earlier build rolls
	// back to it: it is brought back and released at once (ramping straight
	// to release.max), and every build of the app created after it and
	// before the request loses its eligibility and retires. The newest such
	// request of an app wins. The request is ordered by AnnotationRollbackAt
	// when the webhook stamped it, else by this time; the validating webhook
	// refuses a time more than MaxControlSkew ahead of its clock.
	AnnotationRollback = "picchu.medium.engineering/rollback"
	// AnnotationRollbackAt is when the rollback request was received: the
	// mutating webhook sets it to its clock's time (RFC 3339) whenever the
	// rollback annotation is set or changed, removes it with the rollback,
	// and otherwise keeps what it was, so nobody can rewrite it without
	// making a new request. Picchu orders rollback requests by it, not by
	// the time the client wrote, which a slow or fast clock gets wrong.
	AnnotationRollbackAt = "picchu.medium.engineering/rollback-at"
	// AnnotationControlBy names who made the last manual change to a
	// Revision's control (pause, promote, rollback, spec.failed). The
	// mutating webhook sets it from the request's user; without the
	// webhook it is what the client wrote (kubectl picchu writes the user
	// the API server says it is).
	AnnotationControlBy = "picchu.medium.engineering/control-by"
	// AnnotationKarpenterDoNotDisrupt is the pod annotation karpenterDoNotDisrupt sets.
	AnnotationKarpenterDoNotDisrupt = "karpenter.sh/do-not-disrupt"

	// FinalizerReleaseManager guards a ReleaseManager until its app is removed from every cluster.
	FinalizerReleaseManager = "picchu.medium.engineering/releasemanager"
	// FinalizerCluster guards a Cluster until its remote cache is stopped.
	FinalizerCluster = "picchu.medium.engineering/cluster"
)

// RevisionAppField is the field selector, and the cache index, that finds
// the Revisions of an app by what they are rather than by a label a person
// or a tool may have left off.
const RevisionAppField = "spec.app.name"

// Ignored says whether an object carries LabelIgnore, with any value (an
// empty one too): Picchu leaves such an object alone.
func Ignored(labels map[string]string) bool {
	_, ok := labels[LabelIgnore]
	return ok
}

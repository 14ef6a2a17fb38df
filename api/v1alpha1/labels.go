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
	// LabelIgnore on a live object makes Picchu leave it alone.
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

// Kstatus condition types used in the status of every Picchu kind.
const (
	// ConditionReady summarises whether the object reached its desired state.
	ConditionReady = "Ready"
	// ConditionReconciling is true while Picchu is working towards the desired state.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is true when progress needs a change from a person.
	ConditionStalled = "Stalled"
	// ConditionAlertsObserved is true while builds are judged and Picchu
	// can read their SLO and canary alerts; false (promotion held) when a
	// metrics provider cannot answer.
	ConditionAlertsObserved = "AlertsObserved"
	// ConditionCanaryEvidence is false on a ReleaseManager while a build is
	// held at a gate, its canary run its time or, with release waves, its
	// first step in a later wave held for its delay, because no request
	// reached it in some live cluster of the wave (its SLOs' total queries
	// have no series for its tag there), or because it served too few
	// requests for its baseline comparison: the message names the build,
	// the gate, the clusters and the metrics. The build holds until they do.
	ConditionCanaryEvidence = "CanaryEvidence"
	// ConditionFrozen is true on a ReleaseManager while a cluster of its
	// fleet is in a freeze window (Cluster spec.freezes): no build starts
	// its canary or ramp in that cluster's wave, and ramps there hold.
	ConditionFrozen = "Frozen"
	// ConditionPreflight is false on a ReleaseManager while a build about
	// to take traffic on a cluster holds there because a pre-flight check
	// of that cluster fails: it answers, its nodes have room for the
	// build's pods, its preflight alerts are quiet. The message names the
	// build, the cluster, the check and its figures. True once every
	// check passes.
	ConditionPreflight = "Preflight"
	// ConditionImagePlatforms is false on a ReleaseManager while a build
	// holds because its image's platforms cannot be read, or because a
	// cluster of the fleet has no ready node of a platform the image
	// offers (naming both sides); true while every build's image was read
	// and runs on every cluster. It is absent when the operator does not
	// inspect images.
	ConditionImagePlatforms = "ImagePlatforms"
	// ConditionOrphaned is true on a ReleaseManager while no Revision targets
	// its app and target; its lastTransitionTime is since when. Picchu
	// removes such an app from its clusters only once none of its builds has
	// traffic and the removal grace period has passed.
	ConditionOrphaned = "Orphaned"
	// ConditionExternalSecretsServed is set on a ReleaseManager while its
	// builds' configSelectors select ExternalSecrets: False, naming them,
	// while clusters of the fleet do not serve external-secrets.io/v1
	// ExternalSecret (the builds run there without those Secrets, their
	// envFrom references optional), True when every cluster synced does.
	ConditionExternalSecretsServed = "ExternalSecretsServed"
)

// RevisionAppField is the field selector, and the cache index, that finds
// the Revisions of an app by what they are rather than by a label a person
// or a tool may have left off.
const RevisionAppField = "spec.app.name"

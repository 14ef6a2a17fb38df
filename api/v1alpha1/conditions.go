package v1alpha1

// The condition types and reasons of every Picchu kind, in one place.
// Their values are API: users' alerts and kubectl outputs match them, so
// they never change.

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

// Reasons a target holds a build until a person acts: on a ReleaseManager's
// Stalled condition and in a Revision's status.targets[].held.
const (
	// ReasonProtectedNamespace: the app's namespace in the target,
	// "<app>-<target>", is a protected namespace; Picchu touches no
	// cluster for it. Stalled on a ClusterSecrets whose target namespace
	// is protected: nothing is copied there.
	ReasonProtectedNamespace = "ProtectedNamespace"
	// ReasonNamespaceNotAllowed: the app's namespace in the target is not
	// one the apps of its delivery namespace may use
	// (--app-namespace-policy); Picchu deploys nothing new there.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonNotOwned: an object the build needs on a cluster (the app's
	// namespace, say) exists and was not created by this Picchu for this
	// app and target; Picchu neither adopts nor deletes it. Also Stalled
	// on a ClusterSecrets or a Mirror whose copy's place on a cluster is
	// held by an object it did not write.
	ReasonNotOwned = "NotOwned"
	// ReasonHostNotAllowed: a port's host is one a cluster's ingress may
	// not route (its defaultDomains and allowedDomains); Picchu writes no
	// routes of the app on that cluster until the host is gone or allowed.
	ReasonHostNotAllowed = "HostNotAllowed"
)

// Reasons shared by the conditions of several kinds.
const (
	// ReasonSynced: Ready on a ReleaseManager (every build is in its state
	// on every cluster) or a ClusterSecrets (every selected cluster has
	// the copies, and only them).
	ReasonSynced = "Synced"
	// ReasonProgressing: Reconciling on a ReleaseManager or a Revision,
	// some build (or target) moves on.
	ReasonProgressing = "Progressing"
	// ReasonClustersUnavailable: a cluster could not be brought in line
	// (unreachable, not ready, an error); retried with backoff. On a
	// ReleaseManager or a ClusterSecrets.
	ReasonClustersUnavailable = "ClustersUnavailable"
	// ReasonTimedOut: Stalled on a ReleaseManager or a Revision, a build
	// timed out and is about to be failed.
	ReasonTimedOut = "TimedOut"
	// ReasonUnknownState: Stalled on a ReleaseManager or a Revision, a
	// build is in a state this version of Picchu does not handle.
	ReasonUnknownState = "UnknownState"
	// ReasonUnreachable: a cluster's API server does not answer (or its
	// circuit breaker is open). Ready False on a Cluster; Reconciling on a
	// Mirror, retried with backoff.
	ReasonUnreachable = "Unreachable"
	// ReasonSourceNotAllowed: Stalled on a ClusterSecrets or a Mirror, a
	// source namespace is not the object's own, and the operator does not
	// allow copies from it (--allow-cross-namespace-sources): nothing is
	// copied or deleted.
	ReasonSourceNotAllowed = "SourceNotAllowed"
	// ReasonUndecodable: Stalled on a Revision or ReleaseManager that holds
	// a value the Go types cannot hold.
	ReasonUndecodable = "Undecodable"
)

// Reasons of a ReleaseManager's conditions.
const (
	// ReasonAlertsObserved: AlertsObserved True, the builds' alerts are read.
	ReasonAlertsObserved = "AlertsObserved"
	// ReasonAlertsUnavailable: AlertsObserved False, a metrics provider
	// cannot answer.
	ReasonAlertsUnavailable = "AlertsUnavailable"
	// ReasonNoTraffic: CanaryEvidence False, a canary ran its time and no
	// request reached it.
	ReasonNoTraffic = "NoTraffic"
	// ReasonServing: Orphaned True, and a build keeps serving, so the app
	// stays on every cluster.
	ReasonServing = "Serving"
	// ReasonRemovalPending: Orphaned True, and the app's removal waits for
	// its grace period.
	ReasonRemovalPending = "RemovalPending"
	// ReasonFreezeWindow: Frozen True, a cluster of the fleet is in a
	// freeze window.
	ReasonFreezeWindow = "FreezeWindow"
	// ReasonClusterUnreachable, ReasonNoRoom and ReasonClusterAlertsFiring
	// are the reasons of the Preflight condition, by the check that failed
	// first: the cluster does not answer, its nodes have no room for the
	// build's pods, its preflight alerts fire.
	ReasonClusterUnreachable  = "ClusterUnreachable"
	ReasonNoRoom              = "NoRoom"
	ReasonClusterAlertsFiring = "ClusterAlertsFiring"
	// ReasonPlatformsRunnable, ReasonPlatformsUnknown and
	// ReasonNoMatchingNode are the reasons of the ImagePlatforms
	// condition: every build's image runs on every cluster, an image's
	// platforms cannot be read, a cluster has no ready node of a platform
	// the image offers.
	ReasonPlatformsRunnable = "Runnable"
	ReasonPlatformsUnknown  = "PlatformsUnknown"
	ReasonNoMatchingNode    = "NoMatchingNode"
	// ReasonExternalSecretsServed and ReasonExternalSecretsNotServed are
	// the reasons of the ExternalSecretsServed condition.
	ReasonExternalSecretsServed    = "Served"
	ReasonExternalSecretsNotServed = "NotServed"
)

// Reasons of a Revision's Ready, Reconciling and Stalled conditions,
// besides the shared ones.
const (
	// ReasonReleased: Ready, every target has released the build.
	ReasonReleased = "Released"
	// ReasonSettled: Ready, every target holds the build where it stays
	// (released, retired, or deployed or tested when not eligible for
	// release), and not every one released it.
	ReasonSettled = "Settled"
	// ReasonFailed: Stalled, the build failed (spec.failed, or a target
	// records it failing or failed).
	ReasonFailed = "Failed"
)

// Reasons of a Cluster's Ready and Stalled conditions, besides
// ReasonUnreachable.
const (
	// ReasonConnected: Ready, Picchu has a client and cache for the cluster.
	ReasonConnected = "Connected"
	// ReasonDisabled: Ready False, the Cluster's spec.enabled is false.
	ReasonDisabled = "Disabled"
	// ReasonInvalidCredentials: Ready False and Stalled, the Cluster's
	// credentials cannot be used.
	ReasonInvalidCredentials = "InvalidCredentials"
	// ReasonCircuitOpen: the cluster's circuit breaker is open (or a probe
	// is under way): requests to it fail at once until a probe succeeds.
	ReasonCircuitOpen = "CircuitOpen"
)

// Reasons of a ClusterSecrets' conditions, besides the shared ones.
const (
	// ReasonInvalidSpec: a selector, namespace, label or annotation of the
	// spec cannot be acted on (Stalled).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSourceNotWatched: the operator does not read the Secrets of
	// the source namespace (Stalled).
	ReasonSourceNotWatched = "SourceNotWatched"
	// ReasonDeleting: the ClusterSecrets is being deleted and its copies
	// removed.
	ReasonDeleting = "Deleting"
)

// Reasons of a Mirror's Ready, Reconciling and Stalled conditions,
// besides the shared ones.
const (
	// ReasonMirrored: Ready, every build to copy is copied.
	ReasonMirrored = "Mirrored"
	// ReasonClusterNotFound: Stalled, no Cluster of spec.clusterName in
	// the Mirror's namespace.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonClusterNotConnected: Reconciling, the Cluster is disabled or
	// Picchu has no client for it yet (see its Ready condition).
	ReasonClusterNotConnected = "ClusterNotConnected"
	// ReasonRejected: Stalled, the mirror's API server refused a copy
	// (invalid, forbidden, unauthorized): a person must act.
	ReasonRejected = "Rejected"
	// ReasonConfigUnreadable: Stalled, a build's config could not be read
	// at home (a selector that does not parse, or a namespace outside
	// --namespaces).
	ReasonConfigUnreadable = "ConfigUnreadable"
)

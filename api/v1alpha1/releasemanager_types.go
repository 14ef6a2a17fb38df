package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReleaseManager holds the release state of one app in one target. Picchu
// creates one per (app, target), named "<app>-<target>", from the Revisions;
// its status is the release record: every build's state, traffic, scale and
// the times it entered each state.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rm
// +kubebuilder:printcolumn:name="App",type=string,JSONPath=`.spec.app`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target`
// +kubebuilder:printcolumn:name="Fleet",type=string,JSONPath=`.spec.fleet`,priority=1
// +kubebuilder:printcolumn:name="Releasing",type=string,JSONPath=`.status.releasing.tag`,description="the newest build taking traffic"
// +kubebuilder:printcolumn:name="Percent",type=integer,JSONPath=`.status.releasing.percent`,description="its percent of traffic"
// +kubebuilder:printcolumn:name="Wave",type=string,JSONPath=`.status.releasing.wave`,description="the wave of clusters it ramps in"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReleaseManager struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the app, the target and the fleet.
	// +required
	Spec ReleaseManagerSpec `json:"spec"`
	// status is the release record, written by Picchu.
	// +optional
	Status ReleaseManagerStatus `json:"status,omitempty"`

	// undecoded is what decoding kept of a spec or status the Go types
	// cannot hold (see DecodeError).
	undecoded undecoded `json:"-"`
}

// ReleaseManagerSpec names the app and target a ReleaseManager releases.
type ReleaseManagerSpec struct {
	// fleet of Clusters the target is deployed to.
	// +required
	Fleet string `json:"fleet"`
	// app released.
	// +required
	App string `json:"app"`
	// target released.
	// +required
	Target string `json:"target"`
	// variants are kept for compatibility; Picchu ignores them.
	// +optional
	Variants []Variant `json:"variants,omitempty"`
}

// Variant is kept for compatibility; Picchu ignores it.
type Variant struct {
	// name of the variant.
	Name string `json:"name"`
	// enabled flag of the variant.
	Enabled bool `json:"enabled"`
}

// ReleaseManagerStatus is the release record of an app in a target.
type ReleaseManagerStatus struct {
	// observedGeneration is the generation of the spec Picchu last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are the kstatus conditions Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// lastUpdated is when Picchu last wrote this status.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
	// releasing is the newest build taking traffic and its percent.
	// +optional
	Releasing *ReleasingStatus `json:"releasing,omitempty"`
	// revisions holds the release state of every build of the app in this target.
	// +optional
	Revisions []ReleaseManagerRevisionStatus `json:"revisions,omitempty"`
	// clusters are the enabled Clusters of the fleet and whether Picchu
	// could observe and update the app on each the last time it tried.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []ReleaseManagerClusterStatus `json:"clusters,omitempty"`
}

// ReleaseManagerClusterStatus is how one cluster of the fleet took the last sync.
type ReleaseManagerClusterStatus struct {
	// name of the Cluster.
	Name string `json:"name"`
	// live is false for a hot standby cluster, which gets every object but
	// does not count for readiness or replica division.
	Live bool `json:"live"`
	// synced says the last sync observed and updated the cluster.
	Synced bool `json:"synced"`
	// message says why the cluster was not synced.
	// +optional
	Message string `json:"message,omitempty"`
}

// ReleasingStatus names the newest build taking traffic.
type ReleasingStatus struct {
	// tag of the build.
	Tag string `json:"tag"`
	// percent of traffic it takes (in the clusters of its wave, when the
	// target releases in waves).
	Percent int32 `json:"percent"`
	// wave is the wave whose clusters the build ramps in, "<name> (<n>/<of>)",
	// when the target releases in waves.
	// +optional
	Wave string `json:"wave,omitempty"`
	// forecastFinish is when the build should be released in every wave,
	// as forecast (kubectl picchu plan) when its release started and again
	// whenever what holds it changed (its state, its wave, a pause, a
	// freeze), assuming every check passes from then on.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	ForecastFinish *metav1.Time `json:"forecastFinish,omitempty"`
}

// ReleaseManagerRevisionStatus is the release state of one build in a target.
type ReleaseManagerRevisionStatus struct {
	// tag of the build.
	Tag string `json:"tag"`
	// state of the build and when it was entered.
	// +optional
	State ReleaseManagerRevisionStateStatus `json:"state,omitempty"`
	// currentPercent of traffic the build takes.
	CurrentPercent int32 `json:"currentPercent"`
	// peakPercent is the highest percent of traffic it has taken.
	PeakPercent int32 `json:"peakPercent"`
	// releaseEligible says whether the build may take traffic.
	ReleaseEligible bool `json:"releaseEligible"`
	// triggeredAlerts are the SLO or canary alerts that failed the build.
	// +optional
	TriggeredAlerts []string `json:"triggeredAlerts,omitempty"`
	// triggeredWhere says where the triggeredAlerts first fired: the
	// clusters named by the alerts' cluster label, and, when the target
	// releases in waves, the waves the build took traffic in then, such as
	// "cluster west; wave west (2/2)".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	TriggeredWhere string `json:"triggeredWhere,omitempty"`
	// verdict is, with its figures, the last baseline comparison that
	// failed the build or holds it, such as "v7 fails availability: 2.3 %
	// errors (412 of 17 880) against v6's 0.9 % (161 of 17 790) in wave us
	// (3 clusters), one-sided p < 0.001", or that let it pass on too few
	// requests because its canary sets allowNoTraffic. It ends by saying so
	// when the counts came from the SLO's recorded series rather than its
	// raw series, and why.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Verdict string `json:"verdict,omitempty"`
	// rejected is why a live cluster's API server refused the build's
	// objects (as invalid), or why no live cluster can run its image,
	// which fails the build: "<cluster>: <reason>". A failed build keeps
	// it.
	// +optional
	Rejected string `json:"rejected,omitempty"`
	// lastUpdated is when the build's traffic percent last changed.
	// +optional
	LastUpdated *Timestamp `json:"lastUpdated,omitempty"`
	// clusters are the percent of traffic each cluster of the fleet last
	// took for the build, and when: currentPercent is the fleet's, which a
	// step up reaches only once every live cluster has it, while a rollback
	// proceeds in every cluster that answers. Kept while the build is
	// routable or some cluster still routes traffic to it; after that only
	// the entries with triggeredAlerts or a verdict stay (where a failed
	// build failed), until a retry clears them.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []ReleaseManagerRevisionClusterStatus `json:"clusters,omitempty"`
	// wave is the index (from 0) of the wave whose clusters the build ramps
	// in, while its target releases in waves (release.waves).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Wave int32 `json:"wave,omitempty"`
	// waveStarted is when the build entered that wave: the wave's ramp
	// starts once the bake of the wave before has passed since.
	// +optional
	WaveStarted *Timestamp `json:"waveStarted,omitempty"`
	// wavePercents are the percent of traffic the build takes in the
	// clusters of each wave, in wave order, while its target releases in
	// waves; currentPercent is then the highest of them.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:Minimum=0
	// +kubebuilder:validation:items:Maximum=100
	WavePercents []int32 `json:"wavePercents,omitempty"`
	// gitTimestamp is the commit time of the build.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	GitTimestamp *metav1.Time `json:"gitTimestamp,omitempty"`
	// revisionTimestamp is when the Revision was created.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	RevisionTimestamp *metav1.Time `json:"revisionTimestamp,omitempty"`
	// deployingStartTimestamp is when the build started deploying.
	// +optional
	DeployingStartTimestamp *Timestamp `json:"deployingStartTimestamp,omitempty"`
	// canaryStartTimestamp is when the build first took canary traffic.
	// +optional
	CanaryStartTimestamp *Timestamp `json:"canaryStartTimestamp,omitempty"`
	// pendingReleaseStartTimestamp is when the build started waiting for its release schedule.
	// +optional
	PendingReleaseStartTimestamp *Timestamp `json:"pendingReleaseStartTimestamp,omitempty"`
	// releaseStartTimestamp is when the build's release ramp started.
	// +optional
	ReleaseStartTimestamp *Timestamp `json:"releaseStartTimestamp,omitempty"`
	// ttl, in seconds, copied from the Revision while it deploys.
	// +optional
	TTL int64 `json:"ttl,omitempty"`
	// deleted says the Revision is gone.
	// +optional
	Deleted bool `json:"deleted,omitempty"`
	// scale counts the build's replicas over the live clusters: none once
	// it is retired, failed or deleted (pods still terminating are not
	// counted). A change of these counts alone is recorded with the next
	// other change of the status, or within 30 seconds.
	// +optional
	Scale ReleaseManagerRevisionScaleStatus `json:"scale,omitempty"`
	// paused is when the build was paused (its Revision's pause
	// annotation), while it is: its traffic holds and its canary's timer
	// stops.
	// +optional
	Paused *Timestamp `json:"paused,omitempty"`
	// promoted is the promote request (the Revision's promote annotation)
	// this target last acted on.
	// +optional
	Promoted string `json:"promoted,omitempty"`
	// rolledBack is the rollback request (the Revision's rollback
	// annotation) this target last acted on, bringing the build back.
	// +optional
	RolledBack string `json:"rolledBack,omitempty"`
	// ignoredRollback is the rollback request to the build this target
	// ignored, and why: its time was more than a minute ahead of Picchu's
	// clock, or it would have rolled no build back (no newer build was
	// created before its time). It stays ignored; a new request is judged
	// anew.
	// +optional
	IgnoredRollback *ReleaseManagerIgnoredRequest `json:"ignoredRollback,omitempty"`
	// retries record the failures a retry cleared, newest last (at most 10).
	// +optional
	// +kubebuilder:validation:MaxItems=10
	Retries []ReleaseManagerRetryStatus `json:"retries,omitempty"`
	// metrics remembers which latencies were already observed for the build.
	// +optional
	Metrics ReleaseManagerRevisionMetricsStatus `json:"metrics,omitempty"`
}

// ReleaseManagerIgnoredRequest is a manual request a target ignored.
type ReleaseManagerIgnoredRequest struct {
	// request is the request ignored, as its annotation holds it.
	Request string `json:"request"`
	// reason says why it was ignored.
	Reason string `json:"reason"`
	// time is when it was ignored.
	Time Timestamp `json:"time"`
}

// ReleaseManagerRetryStatus is a failure of a build that a retry cleared.
type ReleaseManagerRetryStatus struct {
	// time of the retry.
	Time Timestamp `json:"time"`
	// state the build was in when it was retried.
	State string `json:"state"`
	// peakPercent it had reached.
	PeakPercent int32 `json:"peakPercent"`
	// triggeredAlerts recorded against it.
	// +optional
	TriggeredAlerts []string `json:"triggeredAlerts,omitempty"`
	// rejected is what a cluster refused of it.
	// +optional
	Rejected string `json:"rejected,omitempty"`
}

// ReleaseManagerRevisionClusterStatus is the traffic one cluster routes to a build.
type ReleaseManagerRevisionClusterStatus struct {
	// name of the Cluster.
	Name string `json:"name"`
	// percent of the cluster's traffic the build takes, as last applied there.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percent int32 `json:"percent"`
	// lastUpdated is when the cluster took that percent.
	// +optional
	LastUpdated *Timestamp `json:"lastUpdated,omitempty"`
	// triggeredAlerts are the SLO or canary alerts seen firing for the
	// build on this cluster (alerts that carry its cluster label) before
	// it proved itself.
	// +optional
	// +listType=set
	TriggeredAlerts []string `json:"triggeredAlerts,omitempty"`
	// verdict is what the build's judgment says of this cluster while it
	// is against the build: "no evidence" while no request of the build
	// was counted there, or the figures of a baseline comparison that
	// names it an outlier or, with no outlier, that the build failed in
	// the clusters compared.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Verdict string `json:"verdict,omitempty"`
}

// ReleaseManagerRevisionStateStatus is a build's state.
type ReleaseManagerRevisionStateStatus struct {
	// current state.
	Current string `json:"current"`
	// target state the build is heading for.
	Target string `json:"target"`
	// lastUpdated is when the current state was entered.
	// +optional
	LastUpdated *Timestamp `json:"lastUpdated,omitempty"`
}

// ReleaseManagerRevisionScaleStatus counts a build's replicas. The JSON keys
// are capitalised, as in the original.
type ReleaseManagerRevisionScaleStatus struct {
	// Current available replicas.
	// +optional
	Current int32 `json:"Current,omitempty"`
	// Desired replicas.
	// +optional
	Desired int32 `json:"Desired,omitempty"`
	// Peak available replicas seen.
	// +optional
	Peak int32 `json:"Peak,omitempty"`
}

// ReleaseManagerRevisionMetricsStatus records, in seconds, the latencies
// already observed for a build, so each is observed once.
type ReleaseManagerRevisionMetricsStatus struct {
	// gitCreateSecondsInt is the seconds from the commit to the Revision's creation, once observed.
	// +optional
	GitCreateSecondsInt *int `json:"gitCreateSecondsInt,omitempty"`
	// gitDeploySecondsInt is the seconds from the commit to deployed, once observed.
	// +optional
	GitDeploySecondsInt *int `json:"gitDeploySecondsInt,omitempty"`
	// gitCanarySecondsInt is the seconds from the commit to the end of the canary, once observed.
	// +optional
	GitCanarySecondsInt *int `json:"gitCanarySecondsInt,omitempty"`
	// gitPendingReleaseSecondsInt is the seconds from the commit to pending release, once observed.
	// +optional
	GitPendingReleaseSecondsInt *int `json:"gitPendingReleaseSecondsInt,omitempty"`
	// gitReleaseSecondsInt is the seconds from the commit to released, once observed.
	// +optional
	GitReleaseSecondsInt *int `json:"gitReleaseSecondsInt,omitempty"`
	// revisionDeploySecondsInt is the seconds from the Revision's creation to deployed, once observed.
	// +optional
	RevisionDeploySecondsInt *int `json:"revisionDeploySecondsInt,omitempty"`
	// revisionCanarySecondsInt is the seconds from the Revision's creation to the end of the canary, once observed.
	// +optional
	RevisionCanarySecondsInt *int `json:"revisionCanarySecondsInt,omitempty"`
	// revisionPendingReleaseSecondsInt is the seconds from the Revision's creation to pending release, once observed.
	// +optional
	RevisionPendingReleaseSecondsInt *int `json:"revisionPendingReleaseSecondsInt,omitempty"`
	// revisionReleaseSecondsInt is the seconds from the Revision's creation to released, once observed.
	// +optional
	RevisionReleaseSecondsInt *int `json:"revisionReleaseSecondsInt,omitempty"`
	// revisionRollbackSecondsInt is the seconds from the build's failure to its traffic being back on the previous release, once observed.
	// +optional
	RevisionRollbackSecondsInt *int `json:"revisionRollbackSecondsInt,omitempty"`
	// deploySecondsInt is the seconds spent deploying, once observed.
	// +optional
	DeploySecondsInt *int `json:"deploySecondsInt,omitempty"`
	// canarySecondsInt is the seconds spent canarying, once observed.
	// +optional
	CanarySecondsInt *int `json:"canarySecondsInt,omitempty"`
	// releaseSecondsInt is the seconds spent ramping to 100%, once observed.
	// +optional
	ReleaseSecondsInt *int `json:"releaseSecondsInt,omitempty"`
}

// +kubebuilder:object:root=true

// ReleaseManagerList is a list of ReleaseManagers.
type ReleaseManagerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReleaseManager `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ReleaseManager{}, &ReleaseManagerList{})
}

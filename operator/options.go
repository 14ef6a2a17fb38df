package operator

import (
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/types"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/shard"
)

// Options are the operator-wide settings, set from main's command-line
// flags (named as the original's). Zero values take the defaults the
// controllers document.
type Options struct {
	// SyncPeriod is the slow safety resync of every object
	// (DefaultSyncPeriod when 0).
	SyncPeriod time.Duration
	// Namespaces of the delivery cluster hold Picchu's Clusters and
	// Revisions: Secrets and ConfigMaps are read only there (every
	// namespace when empty). See DeliveryCache.
	Namespaces []string
	// OwnNamespace is the operator's own namespace ($POD_NAMESPACE, or the
	// pod's): protected for apps, as the delivery namespaces are, where the
	// delivery cluster is also a target.
	OwnNamespace string
	// CrossNamespaceSources are the namespaces whose Secrets (and, for a
	// Mirror's additionalConfigSelectors, ConfigMaps) a ClusterSecrets or
	// Mirror of another namespace may copy
	// (--allow-cross-namespace-sources). Empty: each copies only from its
	// own namespace; one whose source is elsewhere is Stalled
	// (SourceNotAllowed) and copies nothing.
	CrossNamespaceSources []string
	// ConcurrentRevisions and ConcurrentReleaseManagers bound the parallel
	// reconciles of those kinds.
	ConcurrentRevisions       int
	ConcurrentReleaseManagers int
	// ClusterHealthPeriod is how often each target cluster's health is
	// checked (DefaultClusterHealthPeriod when 0), and ClusterHealthTimeout bounds each
	// check (5 s when 0).
	ClusterHealthPeriod  time.Duration
	ClusterHealthTimeout time.Duration
	// ClusterQPS and ClusterBurst are the client-side rate limit of each
	// target cluster's client (throttle.DefaultQPS and DefaultBurst when 0).
	ClusterQPS   float32
	ClusterBurst int
	// ClusterTimeout bounds the work of one reconcile on one target cluster
	// (the ReleaseManager controller's default when 0).
	ClusterTimeout time.Duration
	// AllowExecCredentials accepts exec plugins in Cluster Secrets.
	AllowExecCredentials bool
	// PrometheusQueryAddress is the Prometheus (or Thanos) API alert queries
	// go to (empty turns Prometheus checks off), PrometheusQueryTTL how long
	// an answer is cached and PrometheusQueryTimeout the deadline of every
	// query.
	PrometheusQueryAddress string
	PrometheusQueryTTL     time.Duration
	PrometheusQueryTimeout time.Duration
	// PrometheusClusterLabel is the label that names the cluster an alert
	// or an SLO series comes from (--prometheus-cluster-label;
	// prometheus.DefaultClusterLabel when empty).
	PrometheusClusterLabel string
	// PrometheusNamespaceEnforced says the Prometheus enforces the label
	// namespace on the rules and series of app namespaces
	// (prometheus-operator's enforcedNamespaceLabel: namespace)
	// (--prometheus-namespace-enforced): the baseline comparison then
	// counts an SLI's raw series of the app's namespace alone.
	PrometheusNamespaceEnforced bool
	// DatadogSecret ("namespace/name") holds the Datadog API and
	// application keys (data keys "api-key" and "app-key"); empty turns
	// Datadog checks off. DatadogSite is the Datadog site, and
	// DatadogQueryTTL how long an answer is cached.
	DatadogSecret   string
	DatadogSite     string
	DatadogQueryTTL time.Duration
	// Prometheus and Datadog, when set, are the alert sources, in place of
	// the ones the settings above make.
	Prometheus, Datadog releasemanager.AlertSource
	// InspectImagePlatforms reads the platforms of the images of builds
	// about to take traffic for the first time from their registries
	// (--inspect-image-platforms): such builds hold on clusters with no
	// ready node of a platform their image offers, and their pods require
	// nodes of those platforms.
	InspectImagePlatforms bool
	// ImageRegistryAllowedHosts are the hosts, besides an image's own
	// registry (its host and port), that the image inspector may send a
	// request to: a token realm or a blob store elsewhere
	// (--image-registry-allowed-hosts; images.ParseHosts).
	ImageRegistryAllowedHosts []string
	// ImageTransport, when set, carries the image inspector's requests in
	// place of go-containerregistry's default transport, through the same
	// guard (tests trust their registry's certificate with it).
	ImageTransport http.RoundTripper
	// PreflightCapacity checks, before a build takes traffic on a cluster,
	// that the cluster's nodes have room for the build's pods that wait
	// for one (--preflight-capacity): the build holds there until they do.
	PreflightCapacity bool
	// AlertmanagerAddress is the Alertmanager (API v2) where the
	// releaseSilences of Revisions are held while their builds are released
	// (--alertmanager-address); empty turns release silences off.
	AlertmanagerAddress string
	// MaxSilence bounds how far ahead a release silence ends
	// (--max-silence; silence.DefaultMaxLength, 2 h, when 0): one that
	// covers a longer or paused release is renewed while it is needed.
	MaxSilence time.Duration
	// SlackTokenSecret ("namespace/name") holds the Slack bot token (data
	// key "token"); empty turns Slack notices off. SlackChannel is the
	// channel of apps whose alerts name none, SlackAPIURL Slack's Web API
	// (empty for Slack's own). Notifier, when set, is used in their place.
	SlackTokenSecret, SlackChannel, SlackAPIURL string
	Notifier                                    releasemanager.Notifier
	// DevRoutesServiceHost and DevRoutesServicePort are the service the
	// "00_dev-<app>" routes send to, on Clusters that enable dev routes
	// (both must be set): --dev-routes-service-host and
	// --dev-routes-service-port, whose default is 80.
	DevRoutesServiceHost string
	DevRoutesServicePort int
	// ClusterPrometheusAddress is the in-cluster Prometheus the KEDA
	// Prometheus trigger of ambient-mesh apps asks for request rates
	// (--cluster-prometheus-address).
	ClusterPrometheusAddress string
	// SlackStuckAfter is how long a release holds, because a cluster or
	// the metrics provider cannot be reached, before Slack is told it is
	// stuck; 0 never tells.
	SlackStuckAfter time.Duration
	// ProvenPercent, when above 0, is the peak in a Revision's proving
	// target (its first acceptance or production target) from which SLO
	// alerts no longer fail it, as in the original; 0 (the default) judges
	// a build until it is released and its release.watch is over.
	ProvenPercent int
	// ScaleDownDelay is how long a build that lost its last route keeps its
	// pods when its release.scaleDownDelay is unset
	// (releasemanager.DefaultScaleDownDelay when 0,
	// releasemanager.NoScaleDownDelay for none).
	ScaleDownDelay time.Duration
	// HumaneReleasesDisabled lets only the "always" schedule release.
	HumaneReleasesDisabled bool
	// ServiceLevelsNamespace is where Sloth service levels are written on
	// target clusters; empty turns them off.
	ServiceLevelsNamespace string
	// Timeouts bound the time a build may spend in created, deploying and
	// under external test.
	Timeouts release.Timeouts
	// RemovalGrace is how long an app no Revision targets stays on its
	// clusters before it is removed (see releasemanager.Reconciler).
	RemovalGrace time.Duration
	// KeepDone is how many done builds of a target are kept at most.
	KeepDone int

	// InstanceID identifies this Picchu among others that share target
	// clusters or an Alertmanager (--instance-id): it marks what it writes
	// there, and it writes over or deletes only what carries its mark.
	// Setup sets it, when empty, to the UID of the delivery cluster's
	// kube-system namespace, which stays the same across restarts.
	InstanceID string
	// ProtectedNamespaces are namespaces, beside
	// picchuv1alpha1.DefaultProtectedNamespaces, that no app may be
	// deployed in (--protected-namespaces): names, or prefixes ending in "*".
	ProtectedNamespaces []string
	// AppNamespacePolicy says which namespaces the apps of each delivery
	// namespace may use (--app-namespace-policy); nil leaves them free.
	AppNamespacePolicy picchuv1alpha1.AppNamespacePolicy

	// Shards, when set, split the apps between replicas: this one drives
	// the apps of the shards it holds (see package shard). Nil drives
	// every app.
	Shards *shard.Coordinator

	// OnReplicaSet, when set, also hears every ReplicaSet event of a target
	// cluster (tests wait on it).
	OnReplicaSet func(releaseManager types.NamespacedName)
	// WrapTransport, when set, wraps the clients of the target clusters
	// (tests count or refuse their requests).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// WithoutRevisionController holds the Revision controller back: no
	// Revision is labelled, mirrored, failed or given a ReleaseManager (a
	// test of what the ReleaseManager does alone).
	WithoutRevisionController bool
}

package controllers

import (
	"time"

	"github.com/medium/picchu/controllers/release"
)

// Options are the operator-wide settings the reconcilers share, set from
// main's command-line flags (named as the original's).
type Options struct {
	// SyncPeriod is the slow safety resync of every object.
	SyncPeriod time.Duration
	// ConcurrentRevisions and ConcurrentReleaseManagers bound the parallel
	// reconciles of those kinds.
	ConcurrentRevisions       int
	ConcurrentReleaseManagers int
	// PrometheusEnabled turns alert queries on; PrometheusQueryAddress is the
	// Prometheus (or Thanos) API they go to, and PrometheusQueryTTL how long an
	// answer is cached.
	PrometheusEnabled      bool
	PrometheusQueryAddress string
	PrometheusQueryTTL     time.Duration
	// PrometheusQueryTimeout is the deadline of every alert query.
	PrometheusQueryTimeout time.Duration
	// DatadogSecret ("namespace/name") holds the Datadog API and
	// application keys (data keys "api-key" and "app-key"); empty turns
	// Datadog checks off. DatadogSite is the Datadog site, and
	// DatadogQueryTTL how long an answer is cached.
	DatadogSecret   string
	DatadogSite     string
	DatadogQueryTTL time.Duration
	// ProvenPercent is the peak in a Revision's proving target (its first
	// acceptance or production target) from which SLO alerts no longer
	// fail it.
	ProvenPercent int
	// HumaneReleasesEnabled lets the humane and inhumane schedules release;
	// false allows only the "always" schedule.
	HumaneReleasesEnabled bool
	// ServiceLevelsNamespace is where Sloth service levels are written on
	// target clusters; empty turns them off.
	ServiceLevelsNamespace string
	// Timeouts bound the time a build may spend in created, deploying and
	// under external test.
	Timeouts release.Timeouts
	// RemovalGrace is how long an app no Revision targets stays on its
	// clusters before it is removed (see ReleaseManagerReconciler).
	RemovalGrace time.Duration
	// KeepDone is how many done builds of a target are kept at most.
	KeepDone int
}

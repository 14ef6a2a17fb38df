package release

import "time"

// Removal is what happens to an app in a target that no Revision targets
// any longer (an orphaned app).
type Removal struct {
	// Remove is true when the app leaves every cluster of the target now.
	Remove bool
	// HeldByTraffic is true when a build still has traffic: Picchu never
	// takes down a serving app on its own.
	HeldByTraffic bool
	// Due is when the grace period ends, while it has not: the decision is
	// made again then. Zero otherwise.
	Due time.Time
}

// RemoveOrphan decides whether an app orphaned since since is removed at
// now. It is removed only once none of its builds has traffic (traffic is
// false) and at least grace has passed since its last Revision went, so that
// a Revision deleted and created again (kubectl replace --force, Argo CD's
// Replace=true, Flux's apply then prune) never takes the app down. A serving
// app stays until a person deletes its ReleaseManager.
func RemoveOrphan(since, now time.Time, grace time.Duration, traffic bool) Removal {
	if traffic {
		return Removal{HeldByTraffic: true}
	}
	end := since.Add(grace)
	if now.Before(end) {
		return Removal{Due: end}
	}
	return Removal{Remove: true}
}

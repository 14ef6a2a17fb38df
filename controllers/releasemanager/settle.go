package releasemanager

import (
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan"
	"github.com/medium/picchu/plan/applier"
)

// settled is what the fleet took of a run: the settle phase's outcome,
// between acting and reporting. Each build's step settles on where its
// objects and the routing were applied (release.Settle).
type settled struct {
	clusters clusterOutcome
	// builds are the builds' settled steps, by tag; builds dropped from
	// the record have none.
	builds map[string]settledBuild
	// externalSecretsMissing are the clusters where a build had
	// ExternalSecrets to copy and the cluster does not serve them.
	externalSecretsMissing []string
	// legacyRemoved are the original's leftovers the run deleted.
	legacyRemoved []string
	// applied is when the fleet took the run: every cluster's plan done.
	applied time.Time
}

// settledBuild is the step one build settled on.
type settledBuild struct {
	// state is the state recorded, weight the traffic it takes after
	// this run (the highest of settled, the traffic in each wave, against
	// recorded before), and earned the most of it, in any wave, its own
	// state granted it: what its peak counts.
	state             release.State
	weight, earned    int32
	recorded, settled []int32
	// rejected says why a live cluster rejected its objects, or why no
	// live cluster can run it; "" when none did.
	rejected string
}

// appliedOr is when the fleet took the run, or otherwise when none was
// recorded. A change to a build's traffic counts from then, not from the
// run's start: a step is held its delay from when every cluster had it,
// however long the clusters took to write it.
func (st settled) appliedOr(otherwise time.Time) time.Time {
	if st.applied.IsZero() {
		return otherwise
	}
	return st.applied
}

// settle settles every build's step on what the clusters took of the run.
func settle(s *snapshot, a acted) settled {
	out := settled{clusters: s.clusterOutcome(a.results), builds: map[string]settledBuild{},
		externalSecretsMissing: a.externalSecretsMissing, legacyRemoved: a.legacyRemoved, applied: a.at}
	for _, inc := range s.incarnations {
		if !inc.step.Drop {
			out.builds[inc.tag] = s.settleBuild(inc, out.clusters)
		}
	}
	return out
}

// settleBuild settles a build's step (release.Settle) given where it was
// applied. Each wave's weight counts once every live cluster of the wave
// has it (or some has it, in a rollback); the build's is the highest.
func (s *snapshot) settleBuild(inc *incarnation, clusters clusterOutcome) settledBuild {
	rejected, applied := s.buildSynced(inc, clusters.buildsFailed)
	state, _ := release.Settle(inc.step, release.Applied{
		FleetLive: clusters.syncedLive(),
		Live:      clusters.syncedLive() && applied.live,
		All:       clusters.syncedAll && applied.all,
		SomeLive:  clusters.someLive(),
		Rollback:  s.rollback,
	}, inc.weight, inc.status.CurrentPercent)
	recorded := s.wavePercents(inc)
	out := settledBuild{state: state, recorded: recorded, settled: make([]int32, len(recorded)), rejected: rejected}
	if release.Unsettled(inc.step, state) {
		// A finished deploy passed on to its release whose sync a live
		// cluster lacks: it stays deploying, with the traffic it had.
		copy(out.settled, recorded)
		out.weight = release.Highest(out.settled)
		return out
	}
	for w, wo := range clusters.waves {
		_, out.settled[w] = release.Settle(inc.step, release.Applied{FleetLive: wo.syncedLive, SomeLive: wo.someLive, Rollback: s.rollback},
			inc.weightIn(w), recorded[w])
		out.earned = max(out.earned, min(out.settled[w], inc.earnedIn(w)))
	}
	out.weight = release.Highest(out.settled)
	return out
}

// clusterOutcome is what the results say of the fleet's clusters.
type clusterOutcome struct {
	statuses    []picchuv1alpha1.ReleaseManagerClusterStatus
	unavailable []string
	// syncedAll says every cluster took the run's changes to the app;
	// buildsFailed holds the errors of the clusters where only some builds
	// failed, by cluster and tag: the app's routing and the other builds
	// are synced there.
	syncedAll    bool
	buildsFailed map[string]map[string]error
	// routed are the clusters that took the run's routing.
	routed map[string]bool
	// notOwned name the objects that exist on clusters and are not
	// Picchu's, with their cluster.
	notOwned []string
	// hostsRefused name the ports' hosts a cluster's ingress may not
	// route, with their cluster.
	hostsRefused []string
	// waves say, of each wave's clusters, whether every live one took the
	// run's changes to the app, and whether some live one took its routing.
	waves []waveOutcome
}

// waveOutcome is what the results say of one wave's clusters.
type waveOutcome struct{ syncedLive, someLive bool }

// syncedLive says every live cluster of the fleet took the run's changes
// to the app (false when no cluster is live).
func (o clusterOutcome) syncedLive() bool {
	return !slices.ContainsFunc(o.waves, func(w waveOutcome) bool { return !w.syncedLive })
}

// someLive says a live cluster of the fleet took the run's routing.
func (o clusterOutcome) someLive() bool {
	return slices.ContainsFunc(o.waves, func(w waveOutcome) bool { return w.someLive })
}

// clusterOutcome classifies the results of a run once, per cluster.
func (s *snapshot) clusterOutcome(results applier.Results) clusterOutcome {
	failed := map[string]string{}
	out := clusterOutcome{syncedAll: true, buildsFailed: map[string]map[string]error{}, routed: map[string]bool{},
		waves: make([]waveOutcome, s.waveCount())}
	noneLive := s.observation.LiveClusters() == 0
	for w := range out.waves {
		out.waves[w].syncedLive = !noneLive
	}
	for _, res := range results {
		if res.Err != nil {
			failed[res.Cluster] = res.Err.Error()
			if no := (*applier.NotOwnedError)(nil); errors.As(res.Err, &no) {
				out.notOwned = append(out.notOwned, fmt.Sprintf("on cluster %s, %v", res.Cluster, no))
			}
			if refused := (*picchuv1alpha1.HostNotAllowedError)(nil); errors.As(res.Err, &refused) {
				out.hostsRefused = append(out.hostsRefused, res.Err.Error())
			}
			if builds, only := plan.BuildErrors(res.Err); only {
				out.buildsFailed[res.Cluster] = builds
			}
		}
	}
	for _, fc := range s.fleet {
		cs := picchuv1alpha1.ReleaseManagerClusterStatus{Name: fc.obj.Name, Live: fc.live, Synced: true}
		if fc.conn == nil {
			cs.Synced, cs.Message = false, fc.problem
		} else if msg, ok := failed[fc.obj.Name]; ok {
			cs.Synced, cs.Message = false, msg
		}
		wave := &out.waves[fc.wave]
		if cs.Synced || out.buildsFailed[fc.obj.Name] != nil {
			out.routed[fc.obj.Name] = true
			wave.someLive = wave.someLive || fc.live
		}
		if !cs.Synced {
			out.unavailable = append(out.unavailable, fc.obj.Name)
			if out.buildsFailed[fc.obj.Name] == nil {
				out.syncedAll = false
				wave.syncedLive = wave.syncedLive && !fc.live
			}
		}
		out.statuses = append(out.statuses, cs)
	}
	return out
}

// synced says whether a build's objects were applied on the live clusters
// and on all of them.
type synced struct{ live, all bool }

// buildSynced says whether inc's own objects were applied, given the
// clusters where some builds failed, and why a live cluster rejected them
// as invalid, if one did. A failing build's invalid objects do not keep it
// from failed: the cluster will never take them, and its traffic is gone.
func (s *snapshot) buildSynced(inc *incarnation, buildsFailed map[string]map[string]error) (rejected string, out synced) {
	out = synced{live: true, all: true}
	for _, fc := range s.fleet {
		err := buildsFailed[fc.obj.Name][inc.tag]
		if err == nil {
			continue
		}
		invalid := apierrors.IsInvalid(err)
		if invalid && fc.live && rejected == "" {
			rejected = fc.obj.Name + ": " + apiMessage(err)
		}
		if invalid && inc.step.Then.IsRolledBack() {
			continue
		}
		out.all = false
		out.live = out.live && !fc.live
	}
	if rejected == "" {
		rejected = s.runsNowhere(inc)
	}
	return rejected, out
}

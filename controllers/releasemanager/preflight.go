package releasemanager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/preflight"
	"github.com/medium/picchu/decide/release"
)

// SeriesSource answers a PromQL query with the series it returns: their
// alert names, or their labels (prometheus.Client).
type SeriesSource interface {
	Series(ctx context.Context, query string) ([]string, error)
}

// entering says build inc is about to take traffic on cluster fc: it is on
// its way to traffic (release.State.IsEntering), has none yet in the
// cluster's wave, and runs there. Only such builds are checked, so a
// steady fleet reads nothing for the checks.
func (s *snapshot) entering(inc *incarnation, fc *fleetCluster) bool {
	if inc.revision == nil || inc.target == nil || inc.revision.Spec.Failed || !fc.live {
		return false
	}
	if !release.State(inc.status.State.Current).IsEntering() || skipsEventDriven(inc.revision, fc.obj) {
		return false
	}
	percents := s.wavePercents(inc)
	return percents[min(fc.wave, len(percents)-1)] <= 0
}

// checkPreflight makes the pre-flight checks of every live cluster that a
// build is about to take traffic on: it answers; its preflight alerts are
// quiet (asked once a run, whatever the number of builds); and, when
// capacity is checked, its nodes have room for the build's pods that no
// node holds yet. Each failure is recorded on the build, by cluster.
func (r *Reconciler) checkPreflight(ctx context.Context, s *snapshot) {
	checked := s.preflightClusters()
	if len(checked) == 0 {
		return
	}
	r.checkClusterAlerts(ctx, checked)
	if r.PreflightCapacity && r.nodes != nil {
		r.readCapacity(ctx, checked)
	}
	s.judgePreflight(checked)
}

// preflightClusters are the live clusters a build is about to take
// traffic on.
func (s *snapshot) preflightClusters() []*fleetCluster {
	var out []*fleetCluster
	for _, fc := range s.fleet {
		for _, inc := range s.incarnations {
			if s.entering(inc, fc) {
				out = append(out, fc)
				break
			}
		}
	}
	return out
}

// judgePreflight records on each build about to take traffic on a cluster
// of checked the check that fails there, from what was read of it, and
// since when checks fail (the Preflight condition).
func (s *snapshot) judgePreflight(checked []*fleetCluster) {
	if cond := meta.FindStatusCondition(s.rm.Status.Conditions, picchuv1alpha1.ConditionPreflight); cond != nil && cond.Status == metav1.ConditionFalse {
		s.preflightSince = cond.LastTransitionTime.Time
	}
	for _, fc := range checked {
		for _, inc := range s.incarnations {
			if !s.entering(inc, fc) {
				continue
			}
			if f := fc.preflightFailure(inc, s.rm); f != nil {
				if inc.preflight == nil {
					inc.preflight = map[string]*preflight.Failure{}
				}
				inc.preflight[fc.obj.Name] = f
			}
		}
	}
}

// preflightFailure is the first check of the cluster that fails for inc,
// or nil: reachable, then alerts, then capacity.
func (fc *fleetCluster) preflightFailure(inc *incarnation, rm *picchuv1alpha1.ReleaseManager) *preflight.Failure {
	if fc.conn == nil {
		return preflight.Unreachable(fc.problem)
	}
	if fc.alerts != nil {
		return fc.alerts
	}
	if fc.capacityErr != nil {
		// Counted as a failure to read: the build holds, as on any data
		// Picchu cannot see.
		return preflight.Unreadable(preflight.Capacity, fc.capacityErr)
	}
	if fc.capacity == nil {
		return nil
	}
	tmpl, ok := fc.templates[inc.tag]
	if !ok {
		return nil // no ReplicaSet yet: no pod waits
	}
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	waiting := fc.desired[inc.tag] - scheduled(fc.capacity.Pods, rm.Spec.App, rm.Spec.Target, inc.tag)
	if waiting <= 0 {
		return nil
	}
	return preflight.CheckCapacity(inc.tag, waiting, pod, preflight.RoomFor(pod, fc.capacity.Nodes, fc.capacity.Pods))
}

// scheduled counts the pods of build tag bound to a node.
func scheduled(pods []corev1.Pod, app, target, tag string) int32 {
	var n int32
	for i := range pods {
		l := pods[i].Labels
		if l[picchuv1alpha1.LabelApp] == app && l[picchuv1alpha1.LabelTarget] == target && l[picchuv1alpha1.LabelTag] == tag {
			n++
		}
	}
	return n
}

// checkClusterAlerts asks Prometheus the preflight queries of each usable
// cluster that declares some; a cluster whose queries cannot be asked
// (no Prometheus) fails its check.
func (r *Reconciler) checkClusterAlerts(ctx context.Context, fleet []*fleetCluster) {
	for _, fc := range fleet {
		queries := preflight.Queries(fc.obj.Spec.Preflight)
		if len(queries) == 0 || fc.conn == nil {
			continue
		}
		answers := make([]preflight.Answer, len(queries))
		for i, q := range queries {
			answers[i].Query = q
			if r.ClusterAlerts == nil {
				answers[i].Err = fmt.Errorf("no Prometheus to ask (--prometheus-query-address)")
				continue
			}
			answers[i].Series, answers[i].Err = r.ClusterAlerts.Series(ctx, q)
		}
		fc.alerts = preflight.CheckAlerts(answers)
	}
}

// readCapacity reads the nodes and bound pods of the usable clusters, at
// once, from their caches.
func (r *Reconciler) readCapacity(ctx context.Context, fleet []*fleetCluster) {
	for fc, err := range r.readEachCluster(ctx, fleet, func(ctx context.Context, key types.NamespacedName, remote cluster.Cluster, fc *fleetCluster) error {
		capacity, err := r.nodes.Capacity(ctx, key, remote)
		if err == nil {
			fc.capacity = &capacity
		}
		return err
	}) {
		fc.capacityErr = err
	}
}

// preflightHolds says a pre-flight check fails for inc on a live cluster
// of wave w.
func (s *snapshot) preflightHolds(inc *incarnation, w int) bool {
	for _, fc := range s.fleet {
		if fc.wave == w && inc.preflight[fc.obj.Name] != nil {
			return true
		}
	}
	return false
}

// deployHeld says a live cluster has no room for inc's pods. Room that
// cannot be counted does not hold a deploy: its deadline runs as ever.
func (inc *incarnation) deployHeld() bool {
	for _, f := range inc.preflight {
		if f.Check == preflight.Capacity && !f.Unread {
			return true
		}
	}
	return false
}

// preflightRetry is when failed checks are made again: on a backoff from
// when they started to fail.
func (s *snapshot) preflightRetry() time.Time {
	since := s.preflightSince
	if since.IsZero() {
		since = s.now
	}
	return s.now.Add(preflight.RetryAfter(since, s.now))
}

// preflightFailures are the failed checks of this run, one line per build
// and cluster, and the check of the first.
func (s *snapshot) preflightFailures() (lines []string, first string) {
	for _, inc := range s.incarnations {
		clusters := make([]string, 0, len(inc.preflight))
		for name := range inc.preflight {
			clusters = append(clusters, name)
		}
		slices.Sort(clusters)
		for _, name := range clusters {
			f := inc.preflight[name]
			if first == "" {
				first = f.Check
			}
			lines = append(lines, fmt.Sprintf("%s held on cluster %s: %v", inc.tag, name, f))
		}
	}
	return lines, first
}

// setPreflightCondition says which builds hold on which clusters, and
// why; the condition goes when no check fails.
func setPreflightCondition(rm *picchuv1alpha1.ReleaseManager, s *snapshot) {
	lines, first := s.preflightFailures()
	if len(lines) == 0 {
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionPreflight)
		return
	}
	reason := map[string]string{
		preflight.Reachable: picchuv1alpha1.ReasonClusterUnreachable, preflight.Capacity: picchuv1alpha1.ReasonNoRoom, preflight.Alerts: picchuv1alpha1.ReasonClusterAlertsFiring,
	}[first]
	meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
		Type: picchuv1alpha1.ConditionPreflight, Status: metav1.ConditionFalse, Reason: reason,
		Message:            strings.Join(lines, "; "),
		ObservedGeneration: rm.Generation,
		// Kept while the checks keep failing: the backoff runs from it.
		LastTransitionTime: metav1.NewTime(s.now),
	})
}

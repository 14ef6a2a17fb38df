package releasemanager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/decide/platform"
	"github.com/medium/picchu/decide/preflight"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/fleet/breaker"
	"github.com/medium/picchu/fleet/nodes"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

// snapshot is everything one release step is decided from.
type snapshot struct {
	rm  *picchuv1alpha1.ReleaseManager
	now time.Time
	// incarnations are the app's builds in this target, newest first.
	incarnations []*incarnation
	fleet        []*fleetCluster
	observation  release.Observation
	faults       []picchuv1alpha1.HTTPPortFault
	// serviceLevels is the namespace of Sloth service levels on targets;
	// empty when they are off.
	serviceLevels string
	// services are the operator's settings the fleet's objects refer to.
	services Services
	// scaleDownDelay is how long a build that lost its last route keeps
	// its pods when its target does not say (Reconciler.ScaleDownDelay).
	scaleDownDelay time.Duration
	// externalSecretsServed says the delivery cluster serves ExternalSecrets
	// (asked once, when the controller is set up).
	externalSecretsServed bool
	// alertProblems are the alert checks of this run that could not be made.
	alertProblems []string
	// noEvidence says which canaries no request reached (checkEvidence).
	noEvidence []string
	// orphanedSince is when the last Revision of the app in this target
	// went; zero while there is one. removal is what happens to the app.
	orphanedSince time.Time
	removal       release.Removal
	// rollback says this run takes traffic from a failing build
	// (release.RollingBack), set by decide.
	rollback bool
	// inspecting says images are inspected (Reconciler.Images).
	inspecting bool
	// waves are the target's release waves, from its newest build, when
	// it releases in two or more; every fleet cluster has its wave.
	waves []picchuv1alpha1.ReleaseWave
	// preflightSince is when pre-flight checks started to fail, from the
	// Preflight condition; zero when they did not.
	preflightSince time.Time
	// written is the ReleaseManager's status as the API server holds it,
	// when a status pending (not written yet) is what rm holds; nil when
	// none is.
	written *picchuv1alpha1.ReleaseManagerStatus
	pending *pending
}

// pendingSince is when a run first decided the status pending; zero when
// none is.
func (s *snapshot) pendingSince() time.Time {
	if s.pending == nil {
		return time.Time{}
	}
	return s.pending.since
}

// incarnation is one build of the app in the target.
type incarnation struct {
	tag string
	// revision and target are nil once the Revision is gone.
	revision *picchuv1alpha1.Revision
	target   *picchuv1alpha1.RevisionTarget
	// status is what the ReleaseManager recorded for the build so far.
	status picchuv1alpha1.ReleaseManagerRevisionStatus
	// order sorts builds: the commit time, else the Revision's creation.
	order time.Time
	// control is what a person asked of the build (its Revision's annotations).
	control control
	// configMaps and secrets are the build's config on the delivery cluster.
	configMaps []corev1.ConfigMap
	secrets    []corev1.Secret
	// externalSecrets are the ExternalSecrets it selects there, by name.
	externalSecrets []unstructured.Unstructured
	// platformsChecked says its image's platforms gate it this run
	// (platformGated): platforms are what the image offers, when it was
	// read, and platformsErr says why it could not be. Any other build's
	// platforms are those its ReplicaSets were written with.
	platformsChecked bool
	platforms        []platform.Platform
	platformsErr     error
	// preflight are the pre-flight checks that failed for it this run, by
	// cluster (checkPreflight).
	preflight map[string]*preflight.Failure
	// migratedFrom is the legacy state of the original's its status
	// recorded, read as today's (release.Migrated); "" when none.
	migratedFrom string
	// unjudgeable says no alert check could ever apply to it (no alert
	// source for its target, ignoreSLOs, failed, no Revision): a state
	// judged builds are in may be entered without a check (judge).
	unjudgeable bool

	// The decision of this run.
	decision
}

// fleetCluster is an enabled Cluster of the fleet.
type fleetCluster struct {
	obj    *picchuv1alpha1.Cluster
	live   bool
	factor float64
	// wave is the index of the release wave the cluster is in (0 without waves).
	wave int
	// freeze is what the cluster's freeze windows say now.
	freeze schedule.Freeze
	// conn reads and writes the cluster; nil when it cannot be used,
	// and problem says why.
	conn    *applier.Cluster
	problem string
	// nodes are the platforms of its ready nodes, when nodesKnown;
	// nodesErr says why they could not be read.
	nodes      []platform.Platform
	nodesKnown bool
	nodesErr   string
	// templates and desired are the pod template and replicas of each
	// build's ReplicaSet there, by tag, as observed.
	templates map[string]corev1.PodTemplateSpec
	desired   map[string]int32
	// alerts is its preflight alerts' failed check; capacity its nodes and
	// bound pods, when read for a pre-flight check, and capacityErr why
	// they could not be.
	alerts      *preflight.Failure
	capacity    *nodes.Capacity
	capacityErr error
}

// snapshot observes what one release step is decided from: the app's
// builds in the target, the fleet and what the clusters' caches show, the
// images' platforms and nodes when inspected, and the app's faults.
func (r *Reconciler) snapshot(ctx context.Context, rm *picchuv1alpha1.ReleaseManager) (*snapshot, error) {
	s := &snapshot{rm: rm, now: r.Now(), serviceLevels: r.ServiceLevelsNamespace, services: r.Services,
		externalSecretsServed: r.externalSecrets != nil, scaleDownDelay: r.ScaleDownDelay}
	var err error
	if s.incarnations, err = r.incarnations(ctx, rm); err != nil {
		return nil, err
	}
	if s.fleet, err = r.fleet(ctx, rm); err != nil {
		return nil, err
	}
	for _, fc := range s.fleet {
		fc.freeze = schedule.Frozen(fc.obj.Spec.Freezes, s.now)
	}
	s.assignWaves()
	s.observation = r.observe(ctx, rm, s.fleet)
	if r.Images != nil {
		s.inspecting = true
		r.inspectImages(ctx, s)
		r.readNodes(ctx, s)
	}
	if s.faults, err = r.faults(ctx, rm); err != nil {
		return nil, err
	}
	return s, nil
}

// incarnations are the app's builds in the target, newest first: those of
// its Revisions that target it, with their config, and those its status
// records.
func (r *Reconciler) incarnations(ctx context.Context, rm *picchuv1alpha1.ReleaseManager) ([]*incarnation, error) {
	revs := &picchuv1alpha1.RevisionList{}
	if err := r.Client.List(ctx, revs, client.InNamespace(rm.Namespace), controllers.OfApp(rm.Spec.App)); err != nil {
		return nil, fmt.Errorf("listing revisions of app %s: %w", rm.Spec.App, err)
	}
	out := incarnationsOf(rm, revs.Items)
	for _, inc := range out {
		if inc.revision == nil {
			continue
		}
		if err := r.readConfig(ctx, inc); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// incarnationsOf are the app's builds in the target, newest first, from
// its Revisions (revs, of any app) and its status: each Revision's build
// as it targets the target, without its config, and each build the status
// records.
func incarnationsOf(rm *picchuv1alpha1.ReleaseManager, revs []picchuv1alpha1.Revision) []*incarnation {
	byTag := map[string]*incarnation{}
	for i := range revs {
		rev := &revs[i]
		if !rev.DeletionTimestamp.IsZero() || rev.Spec.App.Name != rm.Spec.App {
			continue
		}
		target := targetOf(rev, rm.Spec.Target)
		if target == nil {
			continue
		}
		target.DefaultRouting()
		byTag[rev.Spec.App.Tag] = &incarnation{tag: rev.Spec.App.Tag, revision: rev, target: target, order: revisionOrder(rev), control: controlOf(rev)}
	}
	for _, st := range rm.Status.Revisions {
		inc, ok := byTag[st.Tag]
		if !ok {
			inc = &incarnation{tag: st.Tag, order: statusOrder(st)}
			byTag[st.Tag] = inc
		}
		inc.status = *st.DeepCopy()
		// A state the original stored and later removed is read as the
		// state it means today; the run records it and tells of it.
		if to, migrated := release.Migrated(release.State(st.State.Current)); migrated {
			inc.migratedFrom, inc.status.State.Current = st.State.Current, string(to)
		}
	}
	out := slices.Collect(maps.Values(byTag))
	slices.SortFunc(out, func(a, b *incarnation) int {
		if c := b.order.Compare(a.order); c != 0 {
			return c
		}
		return strings.Compare(b.tag, a.tag)
	})
	return out
}

// faults are the HTTP faults the app's FaultInjectors of the target (or of
// every target) inject, in the order of their names.
func (r *Reconciler) faults(ctx context.Context, rm *picchuv1alpha1.ReleaseManager) ([]picchuv1alpha1.HTTPPortFault, error) {
	faults := &picchuv1alpha1.FaultInjectorList{}
	if err := r.Client.List(ctx, faults, client.InNamespace(rm.Namespace),
		client.MatchingLabels{picchuv1alpha1.LabelApp: rm.Spec.App}); err != nil {
		return nil, fmt.Errorf("listing fault injectors of app %s: %w", rm.Spec.App, err)
	}
	slices.SortFunc(faults.Items, func(a, b picchuv1alpha1.FaultInjector) int { return strings.Compare(a.Name, b.Name) })
	var out []picchuv1alpha1.HTTPPortFault
	for _, fi := range faults.Items {
		if t := fi.Labels[picchuv1alpha1.LabelTarget]; t == "" || t == rm.Spec.Target {
			out = append(out, fi.Spec.HTTPPortFaults...)
		}
	}
	return out, nil
}

// hasTraffic says whether any build of the app has traffic in the target.
func (s *snapshot) hasTraffic() bool {
	for _, inc := range s.incarnations {
		if inc.status.CurrentPercent > 0 {
			return true
		}
	}
	return false
}

// hasRevisions says whether any Revision of the app targets the target.
func (s *snapshot) hasRevisions() bool {
	for _, inc := range s.incarnations {
		if inc.revision != nil {
			return true
		}
	}
	return false
}

// targetOf returns a copy of the Revision's spec for target, or nil.
func targetOf(rev *picchuv1alpha1.Revision, target string) *picchuv1alpha1.RevisionTarget {
	for i := range rev.Spec.Targets {
		if rev.Spec.Targets[i].Name == target {
			return rev.Spec.Targets[i].DeepCopy()
		}
	}
	return nil
}

// revisionOrder is the commit time of a Revision's build when its
// annotation says it (RFC 3339 or Unix seconds), else its creation time.
func revisionOrder(rev *picchuv1alpha1.Revision) time.Time {
	if t, ok := parseTimestamp(rev.Annotations[picchuv1alpha1.AnnotationGitCommitterTimestamp]); ok {
		return t
	}
	return rev.CreationTimestamp.Time
}

func statusOrder(st picchuv1alpha1.ReleaseManagerRevisionStatus) time.Time {
	switch {
	case st.GitTimestamp != nil:
		return st.GitTimestamp.Time
	case st.RevisionTimestamp != nil:
		return st.RevisionTimestamp.Time
	}
	return time.Time{}
}

func parseTimestamp(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), true
	}
	return time.Time{}, false
}

// readConfig reads the ConfigMaps, Secrets and ExternalSecrets the build's
// configSelector selects.
func (r *Reconciler) readConfig(ctx context.Context, inc *incarnation) error {
	sel, err := inc.target.ConfigLabels()
	if err != nil || sel == nil {
		// Admission rejects a bad selector; one that slipped through selects nothing.
		return nil
	}
	ns := inc.revision.Namespace
	cms := &corev1.ConfigMapList{}
	if err := r.Client.List(ctx, cms, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return fmt.Errorf("listing config maps of %s/%s: %w", ns, inc.revision.Name, err)
	}
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return fmt.Errorf("listing secrets of %s/%s: %w", ns, inc.revision.Name, err)
	}
	kept, err := r.withoutCredentials(ctx, inc, secrets.Items)
	if err != nil {
		return err
	}
	if inc.externalSecrets, err = r.readExternalSecrets(ctx, ns, sel); err != nil {
		return fmt.Errorf("reading the config of %s/%s: %w", ns, inc.revision.Name, err)
	}
	inc.configMaps, inc.secrets = cms.Items, kept
	slices.SortFunc(inc.configMaps, func(a, b corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(inc.secrets, func(a, b corev1.Secret) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

func labelsOf(obj client.Object) labels.Set { return labels.Set(obj.GetLabels()) }

// fleet lists the enabled Clusters of the ReleaseManager's fleet, with the
// client of each that the registry can give and is ready.
func (r *Reconciler) fleet(ctx context.Context, rm *picchuv1alpha1.ReleaseManager) ([]*fleetCluster, error) {
	list := &picchuv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, list, client.InNamespace(rm.Namespace),
		client.MatchingLabels{picchuv1alpha1.LabelFleet: rm.Spec.Fleet}); err != nil {
		return nil, fmt.Errorf("listing clusters of fleet %s: %w", rm.Spec.Fleet, err)
	}
	var out []*fleetCluster
	for i := range list.Items {
		cl := &list.Items[i]
		fc, err := fleetMember(cl)
		if fc == nil {
			continue
		}
		ready := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionReady)
		remoteCluster, registered := r.Registry.Get(client.ObjectKeyFromObject(cl))
		switch {
		case err != nil:
			fc.problem = err.Error()
		case ready == nil || ready.Status != metav1.ConditionTrue:
			fc.problem = "not ready"
			if ready != nil {
				fc.problem = fmt.Sprintf("not ready: %s: %s", ready.Reason, ready.Message)
			}
		case !registered:
			fc.problem = "not connected yet"
		default:
			if h, ok := r.Registry.Health(client.ObjectKeyFromObject(cl)); ok && h.State != breaker.Closed {
				// Nothing waits on it: it is as unreachable as it gets.
				fc.problem = fmt.Sprintf("circuit breaker %s; last error: %s", h.State, h.LastError)
				break
			}
			fc.conn = r.handle(cl, remoteCluster)
		}
		out = append(out, fc)
	}
	slices.SortFunc(out, func(a, b *fleetCluster) int { return strings.Compare(a.obj.Name, b.obj.Name) })
	return out, nil
}

// fleetMember is cl as a cluster of its fleet, without its client, and why
// its scaling factor cannot be read; nil when it is disabled or going.
func fleetMember(cl *picchuv1alpha1.Cluster) (*fleetCluster, error) {
	if !cl.Spec.Enabled || !cl.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	fc := &fleetCluster{obj: cl, live: !cl.Spec.HotStandby}
	factor := ""
	if cl.Spec.ScalingFactorString != nil {
		factor = *cl.Spec.ScalingFactorString
	}
	var err error
	fc.factor, err = release.ScalingFactor(factor)
	return fc, err
}

// observe reads the app's ReplicaSets from every usable cluster's cache at once.
func (r *Reconciler) observe(ctx context.Context, rm *picchuv1alpha1.ReleaseManager, fleet []*fleetCluster) release.Observation {
	obs := make(release.Observation, len(fleet))
	index := map[string]int{}
	var usable []*applier.Cluster
	for i, fc := range fleet {
		obs[i] = release.ClusterObservation{Name: fc.obj.Name, Live: fc.live}
		index[fc.obj.Name] = i
		if fc.conn != nil {
			usable = append(usable, fc.conn)
		}
	}
	var mu sync.Mutex
	results := applier.ApplyFleet(ctx, usable, applier.Func(func(ctx context.Context, c *applier.Cluster) error {
		list := &appsv1.ReplicaSetList{}
		if err := c.Client.List(ctx, list, client.InNamespace(picchuv1alpha1.AppNamespace(rm.Spec.App, rm.Spec.Target)),
			client.MatchingLabels(manifests.AppSelector(rm.Spec.App, rm.Spec.Target))); err != nil {
			return fmt.Errorf("observing ReplicaSets: %w", err)
		}
		tags := map[string]release.Replicas{}
		templates, desiredOf := map[string]corev1.PodTemplateSpec{}, map[string]int32{}
		for _, rs := range list.Items {
			tag := rs.Labels[picchuv1alpha1.LabelTag]
			if tag == "" || !rs.DeletionTimestamp.IsZero() {
				continue
			}
			desired := int32(1)
			if rs.Spec.Replicas != nil {
				desired = *rs.Spec.Replicas
			}
			tags[tag] = release.Replicas{Desired: desired, Available: rs.Status.AvailableReplicas}
			templates[tag], desiredOf[tag] = rs.Spec.Template, desired
		}
		mu.Lock()
		defer mu.Unlock()
		o := &obs[index[c.Name()]]
		o.Observed, o.Tags = true, tags
		fc := fleet[index[c.Name()]]
		fc.templates, fc.desired = templates, desiredOf
		return nil
	}), r.ClusterTimeout)
	for _, res := range results {
		if res.Err != nil {
			fc := fleet[index[res.Cluster]]
			fc.problem = res.Err.Error()
			fc.conn = nil
		}
	}
	return obs
}

// appNamespace is the app's namespace object on every cluster.
func appNamespace(rm *picchuv1alpha1.ReleaseManager) *corev1.Namespace {
	return manifests.AppNamespace(rm.Spec.App, rm.Spec.Target, manifests.MeshSidecar)
}

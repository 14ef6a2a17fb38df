package releasemanager

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/platform"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan/applier"
)

// ImageInspector reads the platforms an image offers (images.Inspector).
type ImageInspector interface {
	Platforms(ctx context.Context, image string, pullSecrets []corev1.Secret) ([]platform.Platform, error)
}

// inspectImages reads the platforms of the image of every build about to
// take traffic for the first time (platformGated), with its image pull
// secrets: a build whose image cannot be read has platformsErr, and holds.
// No other build waits on a registry, nor is its image inspected: it keeps
// the platforms its ReplicaSets were written with. A steady fleet asks no
// registry anything.
func (r *Reconciler) inspectImages(ctx context.Context, s *snapshot) {
	for _, inc := range s.incarnations {
		if inc.revision == nil {
			continue
		}
		if !platformGated(inc) {
			inc.platforms = s.recordedPlatforms(inc)
			continue
		}
		inc.platformsChecked = true
		secrets, err := r.pullSecrets(ctx, inc.revision)
		if err == nil {
			inc.platforms, err = r.Images.Platforms(ctx, inc.revision.Spec.App.Image, secrets)
		}
		if err != nil {
			inc.platformsErr = clippedError{err}
		}
	}
}

// platformGated says a build's image platforms gate it: it has a Revision
// and has not failed, and is about to take traffic for the first time: on
// its way to traffic (release.State.IsEntering), it never took any, and no
// one rolled the app back to it. A build that serves or served (released
// and re-scaled, brought back, retiring), or fails, never waits on a
// registry.
func platformGated(inc *incarnation) bool {
	return inc.revision != nil && !inc.revision.Spec.Failed &&
		release.State(inc.status.State.Current).IsEntering() &&
		inc.status.PeakPercent == 0 && inc.status.CurrentPercent == 0 && inc.control.rollback == ""
}

// recordedPlatforms are the platforms inc's ReplicaSet was written with,
// read from its pod template's node affinity on the first cluster that
// has one (platform.Recorded), so that writing it again keeps them.
func (s *snapshot) recordedPlatforms(inc *incarnation) []platform.Platform {
	for _, fc := range s.fleet {
		tmpl, ok := fc.templates[inc.tag]
		if !ok {
			continue
		}
		if ps := platform.Recorded(inc.target.Affinity, tmpl.Spec.Affinity); len(ps) > 0 {
			return ps
		}
	}
	return nil
}

// Bounds of the text of platform checks in status: a registry's error
// carries its body, and an image names its own platforms.
const (
	maxBuildPlatformsText = 512
	maxPlatformsMessage   = 4096
)

// clippedError is err with its text bounded (maxBuildPlatformsText).
type clippedError struct{ err error }

func (e clippedError) Error() string { return clip(e.err.Error(), maxBuildPlatformsText) }
func (e clippedError) Unwrap() error { return e.err }

// clip is s cut to at most n bytes, on a rune boundary, ending with an
// ellipsis when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// pullSecrets reads the Revision's image pull secrets from its namespace.
func (r *Reconciler) pullSecrets(ctx context.Context, rev *picchuv1alpha1.Revision) ([]corev1.Secret, error) {
	var out []corev1.Secret
	for _, ref := range rev.Spec.App.ImagePullSecrets {
		secret := &corev1.Secret{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: rev.Namespace, Name: ref.Name}, secret); err != nil {
			return nil, fmt.Errorf("reading image pull secret %s/%s of revision %s: %w", rev.Namespace, ref.Name, rev.Name, err)
		}
		out = append(out, *secret)
	}
	return out, nil
}

// readNodes reads the platforms of the ready nodes of every usable
// cluster, at once, when some gated build's platforms are known. A cluster whose
// nodes cannot be read holds no build for them.
func (r *Reconciler) readNodes(ctx context.Context, s *snapshot) {
	known := false
	for _, inc := range s.incarnations {
		known = known || (inc.platformsChecked && len(inc.platforms) > 0)
	}
	if !known {
		return
	}
	for fc, err := range r.readEachCluster(ctx, s.fleet, func(ctx context.Context, key types.NamespacedName, remote cluster.Cluster, fc *fleetCluster) error {
		ps, err := r.nodes.Platforms(ctx, key, remote)
		fc.nodes, fc.nodesKnown = ps, err == nil
		return err
	}) {
		fc.nodesErr = err.Error()
	}
}

// readEachCluster runs read on every usable cluster of fleet at once, with
// the registry's current cluster, each within ClusterTimeout, and returns
// the error of each cluster that failed. Each read writes only to its own
// cluster.
func (r *Reconciler) readEachCluster(ctx context.Context, fleet []*fleetCluster,
	read func(ctx context.Context, key types.NamespacedName, remote cluster.Cluster, fc *fleetCluster) error) map[*fleetCluster]error {
	byName := map[string]*fleetCluster{}
	var usable []*applier.Cluster
	for _, fc := range fleet {
		if fc.conn != nil {
			usable = append(usable, fc.conn)
			byName[fc.obj.Name] = fc
		}
	}
	results := applier.ApplyFleet(ctx, usable, applier.Func(func(ctx context.Context, c *applier.Cluster) error {
		fc := byName[c.Name()]
		key := types.NamespacedName{Namespace: fc.obj.Namespace, Name: fc.obj.Name}
		remoteCluster, ok := r.Registry.Get(key)
		if !ok {
			return fmt.Errorf("cluster %s is not connected", key)
		}
		return read(ctx, key, remoteCluster, fc)
	}), r.ClusterTimeout)
	failed := map[*fleetCluster]error{}
	for _, res := range results {
		if res.Err != nil {
			failed[byName[res.Cluster]] = res.Err
		}
	}
	return failed
}

// nodesChanged asks for a run of the ReleaseManagers of the fleet of the
// cluster key, whose ready nodes' platforms changed.
func (r *Reconciler) nodesChanged(key types.NamespacedName) {
	if r.RemoteEvents == nil {
		return
	}
	ctx := context.Background()
	cl := &picchuv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, key, cl); err != nil {
		return
	}
	for _, req := range r.releaseManagersOfCluster(ctx, cl) {
		r.RemoteEvents.Notify(req.NamespacedName)
	}
}

// placementHold says why inc must not be synced on fc for its image's
// platforms, or nil. Only a build the platforms gate is held: not one
// that failed (its replicas go), nor one that serves or served.
func placementHold(inc *incarnation, fc *fleetCluster) error {
	if !inc.platformsChecked || inc.revision == nil || inc.revision.Spec.Failed {
		return nil
	}
	if inc.platformsErr != nil {
		return fmt.Errorf("held until its image's platforms can be read: %w", inc.platformsErr)
	}
	if len(inc.platforms) == 0 || !fc.nodesKnown {
		return nil
	}
	if pl := platform.Place(inc.platforms, fc.nodes); !pl.Runnable {
		return fmt.Errorf("held on cluster %s: %s", fc.obj.Name, clip(pl.Message, maxBuildPlatformsText))
	}
	return nil
}

// runsNowhere says, when no live cluster of the fleet can run the image of
// a build the platforms gate and every live cluster's nodes are known,
// why: the build is rejected, as when every cluster refuses its objects.
func (s *snapshot) runsNowhere(inc *incarnation) string {
	if !inc.platformsChecked || inc.revision == nil || len(inc.platforms) == 0 {
		return ""
	}
	var sides []string
	for _, fc := range s.fleet {
		if !fc.live {
			continue
		}
		if !fc.nodesKnown || platform.Place(inc.platforms, fc.nodes).Runnable {
			return ""
		}
		if len(fc.nodes) == 0 {
			sides = append(sides, fc.obj.Name+" has no ready node")
		} else {
			sides = append(sides, fmt.Sprintf("%s runs %s", fc.obj.Name, platformList(fc.nodes)))
		}
	}
	if len(sides) == 0 {
		return ""
	}
	return clip(fmt.Sprintf("no live cluster has a ready node of a platform image %s offers (%s): %s",
		inc.revision.Spec.App.Image, platformList(inc.platforms), strings.Join(sides, "; ")), maxPlatformsMessage)
}

func platformList(ps []platform.Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// setPlatformsCondition sets ImagePlatforms from the builds the platforms
// gate: False naming each build held and why (a registry's error names the
// registry), True when none is. Each build's part and the message are
// bounded. It is left out when images are not inspected.
func setPlatformsCondition(rm *picchuv1alpha1.ReleaseManager, s *snapshot, inspecting bool) {
	if !inspecting {
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionImagePlatforms)
		return
	}
	var unknown, held []string
	for _, inc := range s.incarnations {
		if !inc.platformsChecked || inc.revision == nil || inc.revision.Spec.Failed {
			continue
		}
		if inc.platformsErr != nil {
			unknown = append(unknown, fmt.Sprintf("%s: %v", inc.tag, inc.platformsErr))
			continue
		}
		for _, fc := range s.fleet {
			if err := placementHold(inc, fc); err != nil {
				held = append(held, fmt.Sprintf("%s %v", inc.tag, err))
			}
		}
	}
	set := func(status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
			Type: picchuv1alpha1.ConditionImagePlatforms, Status: status, Reason: reason, Message: clip(msg, maxPlatformsMessage), ObservedGeneration: rm.Generation,
		})
	}
	switch {
	case len(unknown) > 0:
		set(metav1.ConditionFalse, picchuv1alpha1.ReasonPlatformsUnknown, "held: "+strings.Join(append(unknown, held...), "; "))
	case len(held) > 0:
		set(metav1.ConditionFalse, picchuv1alpha1.ReasonNoMatchingNode, strings.Join(held, "; "))
	default:
		set(metav1.ConditionTrue, picchuv1alpha1.ReasonPlatformsRunnable, "every build about to take traffic runs on a ready node of every cluster whose nodes were read")
	}
}

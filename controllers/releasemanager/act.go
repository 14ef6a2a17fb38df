package releasemanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/applier"
	"github.com/medium/picchu/controllers/manifests"
	"github.com/medium/picchu/controllers/release"
)

// act applies the decided plans to every usable cluster of the fleet at once.
func (r *Reconciler) act(ctx context.Context, s *snapshot) applier.Results {
	var usable []*applier.Cluster
	byName := map[string]*fleetCluster{}
	for _, fc := range s.fleet {
		if fc.plans != nil {
			usable = append(usable, fc.plans)
			byName[fc.obj.Name] = fc
		}
	}
	live := s.observation.LiveClusters()
	var monitoring *monitoringObjects
	if newest := s.newestRevision(); newest != nil {
		objs := s.monitoringObjects(newest)
		monitoring = &objs
	}
	return applier.ApplyFleet(ctx, usable, applier.Func(func(ctx context.Context, c *applier.Cluster) error {
		return s.applyTo(ctx, c, byName[c.Name()], live, monitoring)
	}), r.ClusterTimeout)
}

// applyErrors are the errors of one cluster's apply, told apart: each
// build's objects are applied on their own, so that one build the cluster
// rejects holds that build, not the app's routing or its other builds (a
// rollback above all).
type applyErrors struct {
	// app is the error of the app's own objects: its namespace and access,
	// Service, PDB and routing, monitoring.
	app error
	// builds are the errors of the builds' objects, by tag.
	builds map[string]error
}

func (e *applyErrors) Error() string { return errors.Join(e.Unwrap()...).Error() }

// Unwrap returns the app's error, then the builds' by tag.
func (e *applyErrors) Unwrap() []error {
	out := make([]error, 0, 1+len(e.builds))
	if e.app != nil {
		out = append(out, e.app)
	}
	for _, tag := range slices.Sorted(maps.Keys(e.builds)) {
		out = append(out, e.builds[tag])
	}
	return out
}

// orNil is e, or nil when nothing failed.
func (e *applyErrors) orNil() error {
	if e.app == nil && len(e.builds) == 0 {
		return nil
	}
	return e
}

// buildErrors returns the errors of a cluster's apply that belong to
// builds, by tag, and whether they are all of it: false when the app's own
// objects failed, or the apply as a whole (a deadline, say).
func buildErrors(err error) (map[string]error, bool) {
	var ae *applyErrors
	if !errors.As(err, &ae) {
		return nil, false
	}
	return ae.builds, ae.app == nil
}

// applyTo brings one cluster to the decided state: the app's namespace and
// access, each build's config and ReplicaSet, the builds being deleted
// gone, then the Service, PDB and Istio routing over the builds that remain,
// then the app's monitoring. A build whose objects fail stops neither the
// others nor the routing. Its error is an *applyErrors.
func (s *snapshot) applyTo(ctx context.Context, c *applier.Cluster, fc *fleetCluster, liveClusters int, monitoring *monitoringObjects) error {
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	ns := picchuv1alpha1.AppNamespace(app, target)
	errs := &applyErrors{builds: map[string]error{}}
	newest := s.newestRevision()
	mode := s.meshMode()
	if newest != nil {
		for _, obj := range []client.Object{
			manifests.AppNamespace(app, target, mode),
			manifests.ServiceAccount(app, target, newest.target.AWS.IAM.RoleARN),
			manifests.ExternalMetricsRole(app, target),
			manifests.ExternalMetricsRoleBinding(app, target),
		} {
			if err := c.Apply(ctx, obj); err != nil {
				errs.app = err
				return errs
			}
		}
	}
	for _, inc := range s.incarnations {
		switch {
		case inc.step.Action == release.Sync && inc.revision != nil:
			if err := s.syncBuild(ctx, c, fc, inc, liveClusters); err != nil {
				errs.builds[inc.tag] = fmt.Errorf("build %s: %w", inc.tag, err)
			}
		case inc.step.Action == release.Retire && inc.revision != nil:
			if err := s.syncBuild(ctx, c, fc, inc, liveClusters); err != nil {
				errs.builds[inc.tag] = fmt.Errorf("retiring build %s: %w", inc.tag, err)
			}
		case inc.step.Action == release.Delete:
			if err := c.DeleteAllOf(ctx, ns, manifests.TagSelector(app, target, inc.tag), buildKinds...); err != nil {
				errs.builds[inc.tag] = fmt.Errorf("deleting build %s: %w", inc.tag, err)
			}
		}
	}
	if newest == nil {
		return errs.orNil()
	}
	if err := s.syncRouting(ctx, c, fc, newest); err != nil {
		errs.app = err
		return errs
	}
	if err := syncWaypoint(ctx, c, app, target, newest.target, mode); err != nil {
		errs.app = err
		return errs
	}
	errs.app = s.syncMonitoring(ctx, c, monitoring)
	return errs.orNil()
}

// newestRevision is the newest build whose Revision exists, preferring a
// routable one: its settings (service account, PDB, default ports, egress)
// are the app's.
func (s *snapshot) newestRevision() *incarnation {
	var first *incarnation
	for _, inc := range s.incarnations {
		if inc.revision == nil {
			continue
		}
		if inc.step.State.IsRoutable() {
			return inc
		}
		if first == nil {
			first = inc
		}
	}
	return first
}

// syncBuild applies a build's config copies and ReplicaSet, and deletes
// config copies its selector no longer selects.
func (s *snapshot) syncBuild(ctx context.Context, c *applier.Cluster, fc *fleetCluster, inc *incarnation, liveClusters int) error {
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	ns := picchuv1alpha1.AppNamespace(app, target)
	selector := manifests.TagSelector(app, target, inc.tag)
	configMaps, err := syncCopies(ctx, c, ns, selector, corev1.SchemeGroupVersion.WithKind("ConfigMap"), inc.configMaps,
		func(cm *corev1.ConfigMap) client.Object { return manifests.ConfigMapCopy(app, target, inc.tag, cm) })
	if err != nil {
		return err
	}
	secrets, err := syncCopies(ctx, c, ns, selector, corev1.SchemeGroupVersion.WithKind("Secret"), inc.secrets,
		func(secret *corev1.Secret) client.Object { return manifests.SecretCopy(app, target, inc.tag, secret) })
	if err != nil {
		return err
	}
	return s.scaleBuild(ctx, c, fc, inc, liveClusters, configMaps, secrets)
}

// syncCopies applies the copy copyOf makes of each of srcs, prunes the
// build's other copies of kind (those selector selects in ns), and returns
// the copies' names.
func syncCopies[T any](ctx context.Context, c *applier.Cluster, ns string, selector map[string]string,
	kind schema.GroupVersionKind, srcs []T, copyOf func(*T) client.Object) ([]string, error) {
	var names []string
	want := map[string]bool{}
	for i := range srcs {
		obj := copyOf(&srcs[i])
		if err := c.Apply(ctx, obj); err != nil {
			return nil, err
		}
		names = append(names, obj.GetName())
		want[obj.GetName()] = true
	}
	if err := prune(ctx, c, ns, selector, kind, want); err != nil {
		return nil, err
	}
	return names, nil
}

// scaleBuild applies a build's ReplicaSet and autoscaler as its ScalePlan
// says. Picchu writes the replicas (with their own field manager) only when
// it sizes the build; when the autoscaler does, they are left to it, and
// handing them over resets nothing.
func (s *snapshot) scaleBuild(ctx context.Context, c *applier.Cluster, fc *fleetCluster, inc *incarnation, liveClusters int, configMaps, secrets []string) error {
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	ns := picchuv1alpha1.AppNamespace(app, target)
	sp := inc.scale
	perCluster := func(n int32) int32 {
		if n <= 0 {
			return 0
		}
		return release.ReplicasPerCluster(n, 100, liveClusters, fc.factor)
	}
	rs := manifests.ReplicaSet(manifests.Build{
		App: app, Target: target, Tag: inc.tag, Image: inc.revision.Spec.App.Image,
		Spec: inc.target, Autoscaler: sp.Kind, Ramping: sp.Ramping, ConfigMaps: configMaps, Secrets: secrets,
	})
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(replicaSetKind)
	err := c.Client.Get(ctx, client.ObjectKeyFromObject(rs), live)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ReplicaSet %s/%s: %w", ns, inc.tag, err)
	}
	exists := err == nil
	setReplicas := func(n int32) error { return c.ApplyReplicas(ctx, replicaSetKind, ns, inc.tag, n) }
	switch {
	case sp.SetReplicas && exists:
		// Replicas first: an older Picchu's main apply may own them, and
		// they must never be without an owner in between.
		if err := setReplicas(perCluster(sp.Replicas)); err != nil {
			return err
		}
		if err := c.Apply(ctx, rs); err != nil {
			return err
		}
	case !exists && inc.step.Action == release.Retire:
		// Retiring, and not on this cluster: there is nothing to scale
		// down, and a ReplicaSet the cluster refused is not offered again
		// and again (it held the cluster unsynced, retried every
		// clusterRetry, for as long as the build was kept).
	case !exists:
		// Created at its count in one request (under an autoscaler, at its
		// min), then applied as usual.
		n := sp.Replicas
		if !sp.SetReplicas {
			n = sp.Min
		}
		if err := c.CreateScaled(ctx, rs, perCluster(n)); err != nil {
			return err
		}
		if err := c.Apply(ctx, rs); err != nil {
			return err
		}
	default:
		// The autoscaler owns the replicas. If an older Picchu applied them
		// with its main manager, take them over first, unchanged, so the
		// main apply does not remove them.
		if err := c.TakeOverReplicas(ctx, live); err != nil {
			return err
		}
		if err := c.Apply(ctx, rs); err != nil {
			return err
		}
	}
	if sp.Kind == "" && inc.step.Action != release.Retire && live.GetAnnotations()[manifests.AnnotationAutoscaler] == "" {
		// Never had an autoscaler: nothing to apply or delete.
		return nil
	}
	return s.syncAutoscaler(ctx, c, inc, manifests.Scaler{
		App: app, Target: target, Tag: inc.tag, Scale: inc.target.Scale,
		Min: perCluster(sp.Min), Max: perCluster(sp.Max),
	})
}

// syncAutoscaler applies the build's autoscaler objects while its ScalePlan
// wants them, and deletes the others (all of them while it ramps or
// retires).
func (s *snapshot) syncAutoscaler(ctx context.Context, c *applier.Cluster, inc *incarnation, sc manifests.Scaler) error {
	ns := picchuv1alpha1.AppNamespace(sc.App, sc.Target)
	want := map[schema.GroupVersionKind]client.Object{}
	if inc.scale.Autoscaler {
		switch inc.scale.Kind {
		case release.AutoscalerHPA:
			hpa, err := manifests.HorizontalPodAutoscaler(sc)
			if err != nil {
				return err
			}
			want[hpaKind] = nilIfNil(hpa)
		case release.AutoscalerKEDA:
			want[scaledObjectKind] = manifests.ScaledObject(sc)
			want[triggerAuthenticationKind] = manifests.TriggerAuthentication(sc)
		case release.AutoscalerWPA:
			want[manifests.WorkerPodAutoscalerKind] = manifests.WorkerPodAutoscaler(sc)
		}
	}
	var gone []schema.GroupVersionKind
	for _, kind := range autoscalerKinds {
		if kind == manifests.WorkerPodAutoscalerKind && inc.scale.Kind != release.AutoscalerWPA {
			// Few clusters serve the worker autoscaler; asking one that
			// does not costs a discovery request every run.
			continue
		}
		if obj := want[kind]; obj != nil {
			if err := c.Apply(ctx, obj); err != nil {
				return err
			}
			continue
		}
		gone = append(gone, kind)
	}
	return c.DeleteAllOf(ctx, ns, manifests.TagSelector(sc.App, sc.Target, sc.Tag), gone...)
}

// isNoKind says an error means the cluster does not serve a kind.
func isNoKind(err error) bool { return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) }

// syncRouting applies the app's Service, PDB and Istio objects, and
// deletes the Istio objects that are no longer wanted.
func (s *snapshot) syncRouting(ctx context.Context, c *applier.Cluster, fc *fleetCluster, newest *incarnation) error {
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	routing := s.routing(newest, fc.wave)
	var err error
	if svc := manifests.Service(app, target, routing.Ports); svc != nil {
		err = c.Apply(ctx, svc)
	} else {
		// No build has a port: no Service (one without ports is invalid).
		err = c.Delete(ctx, manifests.ServiceObject(app, target))
	}
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, manifests.PodDisruptionBudget(app, target, newest.target.PodDisruptionBudget)); err != nil {
		return err
	}
	dr, err := manifests.DestinationRule(routing)
	if err != nil {
		return err
	}
	vs, err := manifests.VirtualService(routing, fc.obj)
	if err != nil {
		return err
	}
	sidecar := manifests.Sidecar(routing)
	meta := func(kind string) client.Object { return manifests.IstioObject(app, target, kind) }
	// A DestinationRule's subsets must exist before routes send traffic to them.
	for _, step := range []struct {
		kind string
		obj  client.Object
	}{{"DestinationRule", nilIfNil(dr)}, {"VirtualService", nilIfNil(vs)}, {"Sidecar", nilIfNil(sidecar)}} {
		if step.obj != nil {
			err = c.Apply(ctx, step.obj)
		} else {
			err = c.Delete(ctx, meta(step.kind))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// routing is what the app's Istio objects are built from, in the clusters
// of wave.
func (s *snapshot) routing(newest *incarnation, wave int) manifests.Routing {
	r := manifests.Routing{
		App: s.rm.Spec.App, Target: s.rm.Spec.Target, Fleet: s.rm.Spec.Fleet,
		DefaultIngressPorts: newest.target.DefaultIngressPorts,
		Faults:              s.faults,
		DevRoutes:           manifests.DevRoutes{Host: s.services.DevRoutesHost, Port: s.services.DevRoutesPort},
	}
	if newest.target.Istio != nil && newest.target.Istio.Sidecar != nil {
		r.EgressHosts = newest.target.Istio.Sidecar.EgressHosts
	}
	// Ports: the newest routable build's definition of each name wins, then
	// those of builds still deploying.
	seen := map[string]bool{}
	for _, routableFirst := range []bool{true, false} {
		for _, inc := range s.incarnations {
			if inc.revision == nil || inc.step.State.IsRoutable() != routableFirst {
				continue
			}
			for _, p := range inc.target.Ports {
				if !seen[p.Name] {
					seen[p.Name] = true
					r.Ports = append(r.Ports, p)
				}
			}
		}
	}
	for _, inc := range s.incarnations {
		tagged := inc.revision != nil && inc.step.State.IsRoutable()
		weight := inc.weightIn(wave)
		if !tagged && weight == 0 {
			continue
		}
		rel := manifests.Release{Tag: inc.tag, Weight: weight, Tagged: tagged}
		if inc.revision != nil {
			rel.TagRoutingHeader = inc.revision.Spec.TagRoutingHeader
			if inc.target.Istio != nil {
				rel.TrafficPolicy = inc.target.Istio.TrafficPolicy
			}
		}
		r.Releases = append(r.Releases, rel)
	}
	return r
}

// nilIfNil turns a typed nil pointer into an untyped nil interface.
func nilIfNil[T any, P interface {
	*T
	client.Object
}](p P) client.Object {
	if p == nil {
		return nil
	}
	return p
}

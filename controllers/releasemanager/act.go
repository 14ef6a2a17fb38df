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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
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
			err := placementHold(inc, fc)
			if err == nil {
				err = s.syncBuild(ctx, c, fc, inc, liveClusters)
			}
			if err != nil {
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

// syncBuild applies a build's config copies (ConfigMaps, Secrets and
// ExternalSecrets) and ReplicaSet, and deletes config copies its selector
// no longer selects. A cluster that does not serve ExternalSecrets gets
// none, and the rest of the build still syncs there.
func (s *snapshot) syncBuild(ctx context.Context, c *applier.Cluster, fc *fleetCluster, inc *incarnation, liveClusters int) error {
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	ns := picchuv1alpha1.AppNamespace(app, target)
	selector := manifests.TagSelector(app, target, inc.tag)
	var cfg buildConfig
	var served bool
	var err error
	cfg.externalSecrets, served, err = s.syncExternalSecrets(ctx, c, ns, selector, inc)
	if err != nil {
		return err
	}
	cfg.externalSecretsOptional = !served
	// The build's Datadog settings are a ConfigMap of its own, applied and
	// deleted with its autoscaler (syncAutoscaler).
	var keepConfigMaps []string
	if manifests.HasDatadogTrigger(manifests.Scaler{Scale: inc.target.Scale}) {
		keepConfigMaps = append(keepConfigMaps, manifests.DatadogConfigName(inc.tag))
	}
	cfg.configMaps, err = syncCopies(ctx, c, ns, selector, corev1.SchemeGroupVersion.WithKind("ConfigMap"), inc.configMaps,
		func(cm *corev1.ConfigMap) client.Object { return manifests.ConfigMapCopy(app, target, inc.tag, cm) }, keepConfigMaps...)
	if err != nil {
		return err
	}
	// The Secrets the ExternalSecrets make are External Secrets Operator's.
	cfg.secrets, err = syncCopies(ctx, c, ns, selector, corev1.SchemeGroupVersion.WithKind("Secret"), inc.secrets,
		func(secret *corev1.Secret) client.Object { return manifests.SecretCopy(app, target, inc.tag, secret) }, cfg.externalSecrets...)
	if err != nil {
		return err
	}
	if idle := s.idleClusters(inc); len(idle) > 0 {
		// The build's replicas are divided over the live clusters that run it.
		liveClusters = s.observationOf(inc).LiveClusters()
	}
	return s.scaleBuild(ctx, c, fc, inc, liveClusters, cfg)
}

// buildConfig is what a build's pods read their config from on a cluster.
type buildConfig struct {
	// configMaps and secrets are the names of the build's copies.
	configMaps, secrets []string
	// externalSecrets are the Secrets its ExternalSecret copies make;
	// externalSecretsOptional says the cluster does not serve them.
	externalSecrets         []string
	externalSecretsOptional bool
}

// syncCopies applies the copy copyOf makes of each of srcs, prunes the
// build's other copies of kind (those selector selects in ns) but for
// those named in keep, and returns the copies' names.
func syncCopies[T any](ctx context.Context, c *applier.Cluster, ns string, selector map[string]string,
	kind schema.GroupVersionKind, srcs []T, copyOf func(*T) client.Object, keep ...string) ([]string, error) {
	var names []string
	want := map[string]bool{}
	for _, name := range keep {
		want[name] = true
	}
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
// handing them over resets nothing. On a cluster that runs none of the
// build (runsOn) it is idle: 0 replicas, set by Picchu, and no autoscaler.
func (s *snapshot) scaleBuild(ctx context.Context, c *applier.Cluster, fc *fleetCluster, inc *incarnation, liveClusters int, cfg buildConfig) error {
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	ns := picchuv1alpha1.AppNamespace(app, target)
	sp := inc.scale
	if !runsOn(inc, fc) {
		sp = release.Idle()
	}
	perCluster := func(n int32) int32 {
		if n <= 0 {
			return 0
		}
		return release.ReplicasPerCluster(n, 100, liveClusters, fc.factor)
	}
	sc := manifests.Scaler{
		App: app, Target: target, Tag: inc.tag, Scale: inc.target.Scale,
		Min: perCluster(sp.Min), Max: perCluster(sp.Max),
		Ambient: inc.target.AmbientMesh, ClusterPrometheus: s.services.ClusterPrometheus, DatadogAgent: s.services.DatadogAgent,
	}
	kind := autoscalerAnnotation(sp.Kind, sc)
	rs := manifests.ReplicaSet(manifests.Build{
		App: app, Target: target, Tag: inc.tag, Image: inc.revision.Spec.App.Image,
		Spec: inc.target, Autoscaler: kind, Ramping: sp.Ramping, ConfigMaps: cfg.configMaps, Secrets: cfg.secrets,
		ExternalSecrets: cfg.externalSecrets, ExternalSecretsOptional: cfg.externalSecretsOptional,
		Platforms: inc.platforms,
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
		if n := perCluster(sp.Min); kind == release.AutoscalerHPA && n > 0 && replicasOf(live) == 0 {
			// Left at 0 (the build was idle on this cluster): an HPA
			// takes 0 replicas as scaling turned off, so it starts at
			// its min. KEDA and the worker autoscaler scale from 0
			// themselves.
			if err := setReplicas(n); err != nil {
				return err
			}
		}
	}
	if kind == "" && inc.step.Action != release.Retire && live.GetAnnotations()[manifests.AnnotationAutoscaler] == "" {
		// Never had an autoscaler: nothing to apply or delete.
		return nil
	}
	return s.syncAutoscaler(ctx, c, sp, sc)
}

// replicasOf is a live ReplicaSet's spec.replicas (1 when unset, as the
// API server defaults it).
func replicasOf(live *unstructured.Unstructured) int64 {
	n, found, err := unstructured.NestedInt64(live.Object, "spec", "replicas")
	if err != nil || !found {
		return 1
	}
	return n
}

// autoscalerAnnotation is the autoscaler a build's ReplicaSet names on a
// cluster: its plan's kind, but keda for an HPA build that scales with a
// KEDA ScaledObject on the cluster's Prometheus instead
// (manifests.ScalesOnClusterPrometheus).
func autoscalerAnnotation(kind string, sc manifests.Scaler) string {
	if kind == release.AutoscalerHPA && manifests.ScalesOnClusterPrometheus(sc) {
		return release.AutoscalerKEDA
	}
	return kind
}

// autoscalerObjects are a build's autoscaler objects on one cluster, by
// kind, as its plan wants them (none unless plan.Autoscaler), in the
// original's order of cases:
//
//  1. wpa: its WorkerPodAutoScaler;
//  2. keda: its ScaledObject and TriggerAuthentication; with a datadog
//     trigger, also its ConfigMap dd-cfg-<tag> and the app's Secret
//     service-account-token, which the TriggerAuthentication refers to;
//     with a request-rate target, its DatadogMetric;
//  3. hpa in ambient mesh with a request-rate target and the cluster's
//     Prometheus known: a KEDA ScaledObject on Prometheus, no HPA;
//  4. hpa: its HPA (none when it sets no target).
func autoscalerObjects(plan release.ScalePlan, sc manifests.Scaler) (map[schema.GroupVersionKind]client.Object, error) {
	want := map[schema.GroupVersionKind]client.Object{}
	if !plan.Autoscaler {
		return want, nil
	}
	switch plan.Kind {
	case release.AutoscalerWPA:
		want[manifests.WorkerPodAutoscalerKind] = nilIfNil(manifests.WorkerPodAutoscaler(sc))
	case release.AutoscalerKEDA:
		want[scaledObjectKind] = nilIfNil(manifests.ScaledObject(sc))
		want[triggerAuthenticationKind] = manifests.TriggerAuthentication(sc)
		if cm := manifests.DatadogConfig(sc); cm != nil {
			want[configMapKind] = cm
			want[secretKind] = manifests.ServiceAccountToken(sc.App, sc.Target)
		}
		want[manifests.DatadogMetricKind] = nilIfNil(manifests.DatadogMetric(sc))
	case release.AutoscalerHPA:
		if manifests.ScalesOnClusterPrometheus(sc) {
			so, err := manifests.PrometheusScaledObject(sc)
			if err != nil {
				return nil, err
			}
			want[scaledObjectKind] = nilIfNil(so)
			break
		}
		hpa, err := manifests.HorizontalPodAutoscaler(sc)
		if err != nil {
			return nil, err
		}
		want[hpaKind] = nilIfNil(hpa)
	}
	for kind, obj := range want {
		if obj == nil {
			delete(want, kind)
		}
	}
	return want, nil
}

// syncAutoscaler applies the build's autoscaler objects (autoscalerObjects)
// while its ScalePlan wants them, and deletes the others (all of them while
// it ramps or retires, and where it is idle). The Datadog settings are
// applied before the TriggerAuthentication refers to them, and deleted by
// name; the app's service-account-token Secret stays with the namespace,
// for the other builds. Kinds a cluster does not serve are skipped when
// deleting, and so is a DatadogMetric when applying (its trigger then has
// no metric, which KEDA reports on the ScaledObject). The worker
// autoscaler and DatadogMetric kinds are not asked for on behalf of builds
// whose settings have none (another kind of autoscaler; no request-rate
// target): one such a build had before its Revision changed goes with the
// build.
func (s *snapshot) syncAutoscaler(ctx context.Context, c *applier.Cluster, plan release.ScalePlan, sc manifests.Scaler) error {
	ns := picchuv1alpha1.AppNamespace(sc.App, sc.Target)
	want, err := autoscalerObjects(plan, sc)
	if err != nil {
		return err
	}
	for _, kind := range []schema.GroupVersionKind{secretKind, configMapKind} {
		if obj := want[kind]; obj != nil {
			if err := c.Apply(ctx, obj); err != nil {
				return err
			}
		}
	}
	configured := release.AutoscalerKind(sc.Scale)
	var gone []schema.GroupVersionKind
	for _, kind := range autoscalerKinds {
		if (kind == manifests.WorkerPodAutoscalerKind && configured != release.AutoscalerWPA) ||
			(kind == manifests.DatadogMetricKind && (configured != release.AutoscalerKEDA || sc.Scale.TargetRequestsRate == nil)) {
			// Few clusters serve the worker autoscaler or DatadogMetrics,
			// and only builds that ask for one have them; asking a
			// cluster that does not serve the kind costs a discovery
			// request every run.
			continue
		}
		obj := want[kind]
		if obj == nil {
			gone = append(gone, kind)
			continue
		}
		if err := c.Apply(ctx, obj); err != nil {
			if kind == manifests.DatadogMetricKind && isNoKind(err) {
				continue
			}
			return err
		}
	}
	if err := c.DeleteAllOf(ctx, ns, manifests.TagSelector(sc.App, sc.Target, sc.Tag), gone...); err != nil {
		return err
	}
	if want[configMapKind] == nil && configured == release.AutoscalerKEDA {
		return c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: manifests.DatadogConfigName(sc.Tag), Namespace: ns}})
	}
	return nil
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

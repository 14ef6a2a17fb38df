package releasemanager

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan"
	"github.com/medium/picchu/plan/manifests"
)

// plans are the Plan of every cluster of the fleet, in the fleet's order,
// from the snapshot after its decisions: what act writes, and nothing it
// reads. It is pure. A cluster that cannot be used gets a Plan that says
// why, and nothing else.
func plans(s *snapshot) []*plan.Cluster {
	newest := s.newestRevision()
	var monitoring []plan.Step
	if newest != nil {
		monitoring = s.monitoringSteps(s.monitoringObjects(newest))
	}
	mode := s.meshMode()
	out := make([]*plan.Cluster, 0, len(s.fleet))
	for _, fc := range s.fleet {
		p := &plan.Cluster{Name: fc.obj.Name}
		out = append(out, p)
		if fc.conn == nil {
			p.Skip = fc.problem
			continue
		}
		p.Builds = s.buildPlans(fc)
		if newest == nil {
			continue
		}
		app, target := s.rm.Spec.App, s.rm.Spec.Target
		p.App = applySteps(
			manifests.AppNamespace(app, target, mode),
			manifests.ServiceAccount(app, target, newest.target.AWS.IAM.RoleARN),
			// Every app has its service account's token Secret, as in the
			// original: pods may mount it, KEDA's Datadog trigger reads it.
			manifests.ServiceAccountToken(app, target),
			manifests.ExternalMetricsRole(app, target),
			manifests.ExternalMetricsRoleBinding(app, target),
		)
		p.Routes = s.routeSteps(fc, newest)
		p.Waypoint = waypointSteps(app, target, newest.target, mode)
		p.Monitoring = monitoring
	}
	return out
}

// buildPlans are the Plans of the builds on one cluster: those synced or
// retiring get their objects, those deleted lose them.
func (s *snapshot) buildPlans(fc *fleetCluster) []plan.Build {
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	var out []plan.Build
	for _, inc := range s.incarnations {
		switch {
		case inc.step.Action == release.Sync && inc.revision != nil:
			b := plan.Build{Tag: inc.tag, Action: plan.Sync, Hold: placementHold(inc, fc)}
			if b.Hold == nil {
				b.Steps = s.buildSteps(fc, inc)
			}
			out = append(out, b)
		case inc.step.Action == release.Retire && inc.revision != nil:
			out = append(out, plan.Build{Tag: inc.tag, Action: plan.Retire, Steps: s.buildSteps(fc, inc)})
		case inc.step.Action == release.Delete:
			out = append(out, plan.Build{Tag: inc.tag, Action: plan.Delete, Steps: []plan.Step{{
				Op: plan.RemoveAll, Namespace: picchuv1alpha1.AppNamespace(app, target),
				Selector: manifests.TagSelector(app, target, inc.tag), Kinds: buildKinds,
			}}})
		}
	}
	return out
}

// applySteps apply objs in order.
func applySteps(objs ...client.Object) []plan.Step {
	out := make([]plan.Step, len(objs))
	for i, obj := range objs {
		out[i] = plan.Step{Op: plan.Apply, Object: obj}
	}
	return out
}

// applyOrDelete applies want, or deletes gone when want is nil.
func applyOrDelete(want, gone client.Object) plan.Step {
	if want != nil {
		return plan.Step{Op: plan.Apply, Object: want}
	}
	return plan.Step{Op: plan.Remove, Object: gone}
}

// buildSteps are a build's config copies (ConfigMaps, Secrets and
// ExternalSecrets), each kind's other copies its selector selects pruned,
// then its ReplicaSet and autoscaler. A cluster that does not serve
// ExternalSecrets gets none, and the rest of the build still syncs there.
func (s *snapshot) buildSteps(fc *fleetCluster, inc *incarnation) []plan.Step {
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	ns := picchuv1alpha1.AppNamespace(app, target)
	selector := manifests.TagSelector(app, target, inc.tag)
	var steps []plan.Step
	var cfg buildConfig
	// The kind is not asked for on behalf of builds without a
	// configSelector, nor when the delivery cluster does not serve it: a
	// build can have no copies then.
	if s.externalSecretsServed && inc.target.ConfigSelector != nil {
		cfg.externalSecrets = externalSecretTargets(inc.externalSecrets)
		copies := copySteps(inc.externalSecrets, func(es *unstructured.Unstructured) client.Object {
			return manifests.ExternalSecretCopy(app, target, inc.tag, es)
		})
		steps = append(steps, plan.Step{Op: plan.ExternalSecrets, Objects: objectsOf(copies), Namespace: ns, Selector: selector,
			Kinds: []schema.GroupVersionKind{manifests.ExternalSecretKind}, Keep: namesOf(copies), Makes: cfg.externalSecrets})
		cfg.externalSecretsAsked = true
	}
	// The build's Datadog settings are a ConfigMap of its own, applied and
	// deleted with its autoscaler.
	var keepConfigMaps []string
	if manifests.HasDatadogTrigger(manifests.Scaler{Scale: inc.target.Scale}) {
		keepConfigMaps = append(keepConfigMaps, manifests.DatadogConfigName(inc.tag))
	}
	cms := copySteps(inc.configMaps, func(cm *corev1.ConfigMap) client.Object { return manifests.ConfigMapCopy(app, target, inc.tag, cm) })
	cfg.configMaps = namesOf(cms)
	steps = append(steps, cms...)
	steps = append(steps, plan.Step{Op: plan.Prune, Namespace: ns, Selector: selector, Kinds: []schema.GroupVersionKind{configMapKind},
		Keep: append(keepConfigMaps, cfg.configMaps...)})
	// The Secrets the ExternalSecrets make are External Secrets Operator's.
	secrets := copySteps(inc.secrets, func(secret *corev1.Secret) client.Object { return manifests.SecretCopy(app, target, inc.tag, secret) })
	cfg.secrets = namesOf(secrets)
	steps = append(steps, secrets...)
	steps = append(steps, plan.Step{Op: plan.Prune, Namespace: ns, Selector: selector, Kinds: []schema.GroupVersionKind{secretKind},
		Keep: append(append([]string(nil), cfg.externalSecrets...), cfg.secrets...)})
	return append(steps, s.scaleSteps(fc, inc, cfg)...)
}

// buildConfig is what a build's pods read their config from on a cluster.
type buildConfig struct {
	// configMaps and secrets are the names of the build's copies.
	configMaps, secrets []string
	// externalSecrets are the Secrets its ExternalSecret copies make;
	// externalSecretsAsked says the cluster is asked to serve them.
	externalSecrets      []string
	externalSecretsAsked bool
}

// copySteps apply the copy copyOf makes of each of srcs.
func copySteps[T any](srcs []T, copyOf func(*T) client.Object) []plan.Step {
	out := make([]plan.Step, 0, len(srcs))
	for i := range srcs {
		out = append(out, plan.Step{Op: plan.Apply, Object: copyOf(&srcs[i])})
	}
	return out
}

// objectsOf are the objects of steps.
func objectsOf(steps []plan.Step) []client.Object {
	out := make([]client.Object, 0, len(steps))
	for _, s := range steps {
		out = append(out, s.Object)
	}
	return out
}

// namesOf are the names of the objects of steps.
func namesOf(steps []plan.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Object.GetName())
	}
	return out
}

// scaleSteps size a build's ReplicaSet and autoscaler as its ScalePlan
// says. Picchu writes the replicas (with their own field manager) only when
// it sizes the build; when the autoscaler does, they are left to it, and
// handing them over resets nothing. On a cluster that runs none of the
// build (runsOn) it is idle: 0 replicas, set by Picchu, and no autoscaler.
func (s *snapshot) scaleSteps(fc *fleetCluster, inc *incarnation, cfg buildConfig) []plan.Step {
	sp := inc.scale
	if !runsOn(inc, fc) {
		sp = release.Idle()
	}
	liveClusters := s.observation.LiveClusters()
	if idle := s.idleClusters(inc); len(idle) > 0 {
		// The build's replicas are divided over the live clusters that run it.
		liveClusters = s.observationOf(inc).LiveClusters()
	}
	perCluster := func(n int32) int32 {
		if n <= 0 {
			return 0
		}
		return release.ReplicasPerCluster(n, 100, liveClusters, fc.factor)
	}
	sc := manifests.Scaler{
		App: s.rm.Spec.App, Target: s.rm.Spec.Target, Tag: inc.tag, Scale: inc.target.Scale,
		Min: perCluster(sp.Min), Max: perCluster(sp.Max),
		Ambient: inc.target.AmbientMesh, ClusterPrometheus: s.services.ClusterPrometheus, DatadogAgent: s.services.DatadogAgent,
	}
	kind := autoscalerAnnotation(sp.Kind, sc)
	rs := plan.Step{Op: plan.ScaleReplicaSet, Object: s.replicaSet(inc, sp, kind, cfg, false), Replicas: replicasOf(sp, kind, inc, perCluster)}
	if cfg.externalSecretsAsked {
		rs.Unserved = s.replicaSet(inc, sp, kind, cfg, true)
	}
	// A build that never had an autoscaler has nothing to apply or delete.
	never := kind == "" && inc.step.Action != release.Retire
	return append([]plan.Step{rs}, autoscalerSteps(sp, sc, never)...)
}

// replicaSet is a build's ReplicaSet, its ExternalSecrets optional on a
// cluster that does not serve them.
func (s *snapshot) replicaSet(inc *incarnation, sp release.ScalePlan, kind string, cfg buildConfig, optional bool) client.Object {
	return manifests.ReplicaSet(manifests.Build{
		App: s.rm.Spec.App, Target: s.rm.Spec.Target, Tag: inc.tag, Image: inc.revision.Spec.App.Image,
		Spec: inc.target, Autoscaler: kind, Ramping: sp.Ramping, ConfigMaps: cfg.configMaps, Secrets: cfg.secrets,
		ExternalSecrets: cfg.externalSecrets, ExternalSecretsOptional: optional,
		Platforms: inc.platforms,
	})
}

// replicasOf is how a build's ReplicaSet is sized on a cluster: at its
// count when Picchu sets it, else left to the autoscaler, created at its
// min; a retiring build absent from the cluster is not offered again (it
// held the cluster unsynced, retried every clusterRetry, for as long as
// the build was kept). An HPA takes 0 replicas as scaling turned off, so a
// build left at 0 starts at its min; KEDA and the worker autoscaler scale
// from 0 themselves.
func replicasOf(sp release.ScalePlan, kind string, inc *incarnation, perCluster func(int32) int32) *plan.Replicas {
	r := &plan.Replicas{Set: sp.SetReplicas, To: perCluster(sp.Replicas), SkipAbsent: inc.step.Action == release.Retire}
	if sp.SetReplicas {
		r.CreateAt = perCluster(sp.Replicas)
	} else {
		r.To, r.CreateAt = 0, perCluster(sp.Min)
	}
	if kind == release.AutoscalerHPA {
		r.StartAt = perCluster(sp.Min)
	}
	return r
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

// autoscalerSteps apply the build's autoscaler objects (autoscalerObjects)
// while its ScalePlan wants them, and delete the others (all of them while
// it ramps or retires, and where it is idle); with ifAutoscaled, only when
// its live ReplicaSet names an autoscaler. The Datadog settings are
// applied before the TriggerAuthentication refers to them, and deleted by
// name; the app's service-account-token Secret, which the
// TriggerAuthentication reads, is the app's (applied before the builds). Kinds a cluster does not serve are skipped when
// deleting, and so is a DatadogMetric when applying (its trigger then has
// no metric, which KEDA reports on the ScaledObject). The worker
// autoscaler and DatadogMetric kinds are not asked for on behalf of builds
// whose settings have none (another kind of autoscaler; no request-rate
// target): one such a build had before its Revision changed goes with the
// build.
func autoscalerSteps(sp release.ScalePlan, sc manifests.Scaler, ifAutoscaled bool) []plan.Step {
	ns := picchuv1alpha1.AppNamespace(sc.App, sc.Target)
	var steps []plan.Step
	add := func(s plan.Step) {
		s.IfAutoscaled = ifAutoscaled
		steps = append(steps, s)
	}
	want, err := autoscalerObjects(sp, sc)
	if err != nil {
		add(plan.Step{Op: plan.Fail, Err: err})
		return steps
	}
	if obj := want[configMapKind]; obj != nil {
		add(plan.Step{Op: plan.Apply, Object: obj})
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
		if obj := want[kind]; obj != nil {
			add(plan.Step{Op: plan.Apply, Object: obj, Optional: kind == manifests.DatadogMetricKind})
		} else {
			gone = append(gone, kind)
		}
	}
	if len(gone) > 0 {
		add(plan.Step{Op: plan.RemoveAll, Namespace: ns, Selector: manifests.TagSelector(sc.App, sc.Target, sc.Tag), Kinds: gone})
	}
	if want[configMapKind] == nil && configured == release.AutoscalerKEDA {
		add(plan.Step{Op: plan.Remove, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: manifests.DatadogConfigName(sc.Tag), Namespace: ns}}})
	}
	return steps
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

// autoscalerObjects are a build's autoscaler objects on one cluster, by
// kind, as its ScalePlan wants them (none unless sp.Autoscaler), in the
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
func autoscalerObjects(sp release.ScalePlan, sc manifests.Scaler) (map[schema.GroupVersionKind]client.Object, error) {
	want := map[schema.GroupVersionKind]client.Object{}
	if !sp.Autoscaler {
		return want, nil
	}
	switch sp.Kind {
	case release.AutoscalerWPA:
		want[manifests.WorkerPodAutoscalerKind] = nilIfNil(manifests.WorkerPodAutoscaler(sc))
	case release.AutoscalerKEDA:
		want[scaledObjectKind] = nilIfNil(manifests.ScaledObject(sc))
		want[triggerAuthenticationKind] = manifests.TriggerAuthentication(sc)
		if cm := manifests.DatadogConfig(sc); cm != nil {
			want[configMapKind] = cm
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

// routeSteps apply the app's Service and PDB on a cluster, then its routes
// as the newest build's router writes them (routerOf), which delete the
// routes no longer wanted. A DestinationRule's subsets, or the builds'
// Services, exist before routes send traffic to them.
func (s *snapshot) routeSteps(fc *fleetCluster, newest *incarnation) []plan.Step {
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	routing := s.routing(newest, fc)
	// No build has a port: no Service (one without ports is invalid).
	steps := []plan.Step{
		applyOrDelete(nilIfNil(manifests.Service(app, target, routing.Ports)), manifests.ServiceObject(app, target)),
		{Op: plan.Apply, Object: manifests.PodDisruptionBudget(app, target, newest.target.PodDisruptionBudget)},
	}
	return append(steps, routerOf(newest.target).steps(routing, fc.obj)...)
}

// routing is what the app's routes on cluster fc are built from. A build
// with neither traffic nor a tag route there is a release of weight 0,
// which gets a subset and no route, while it is synced (its subset is made
// before its first route, so the mesh knows it by then) or while the
// routes written before this run may still send to it (mayBeRoutedOn): a
// route to a subset the DestinationRule lacks fails its requests, so a
// subset goes in the run after the last route to it.
func (s *snapshot) routing(newest *incarnation, fc *fleetCluster) manifests.Routing {
	wave := fc.wave
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
		if inc.revision != nil && inc.step.Action == release.Sync {
			r.Running = append(r.Running, inc.tag)
		}
		tagged := inc.revision != nil && inc.step.State.IsRoutable()
		weight := inc.weightIn(wave)
		synced := inc.revision != nil && inc.step.Action == release.Sync
		if !tagged && weight == 0 && !synced && !inc.mayBeRoutedOn(fc.obj.Name) {
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

// mayBeRoutedOn says the routes cluster had before this run may send to
// build inc, as recorded: its recorded state gives it a tag route, or the
// cluster's recorded weight for it (the build's, when the record has none
// per cluster) is more than nothing.
func (inc *incarnation) mayBeRoutedOn(cluster string) bool {
	if release.State(inc.status.State.Current).IsRoutable() {
		return true
	}
	for _, c := range inc.status.Clusters {
		if c.Name == cluster {
			return c.Percent > 0
		}
	}
	return inc.status.CurrentPercent > 0
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

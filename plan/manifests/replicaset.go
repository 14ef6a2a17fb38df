package manifests

import (
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/platform"
)

// Annotations Picchu writes on a build's ReplicaSet and pods.
const (
	// AnnotationAutoscaler names the autoscaler of a ReplicaSet: hpa, wpa or keda.
	AnnotationAutoscaler = "picchu.medium.engineering/autoscaler"
	// annotationGracePeriod on a pod template sets its termination grace period, in seconds.
	annotationGracePeriod = "go.medium.engineering/PodTerminationGracePeriodSeconds"
	annotationIRSARole    = "eks.amazonaws.com/role-arn"
	annotationIAMRole     = "iam.amazonaws.com/role"
	// annotationDatadogTolerateUnready keeps Datadog checking pods that are not ready.
	annotationDatadogTolerateUnready = "ad.datadoghq.com/tolerate-unready"
)

// statusPortName is the port whose presence gives a build default probes.
const statusPortName = "status"

// Build is one build (tag) of an app in a target, as its ReplicaSet needs it.
type Build struct {
	App, Target, Tag, Image string
	// Spec is the Revision's target.
	Spec *picchuv1alpha1.RevisionTarget
	// Ramping marks the ReplicaSet with AnnotationRamping: Picchu sets its
	// replicas while the build ramps. The replicas themselves are never in
	// this object: Cluster.ApplyReplicas sets them with their own field
	// manager, so that handing them to an autoscaler resets nothing.
	Ramping bool
	// Autoscaler is the kind of autoscaler (hpa, wpa, keda), or empty.
	Autoscaler string
	// ConfigMaps and Secrets are the build's config copies, exposed with envFrom.
	ConfigMaps, Secrets []string
	// ExternalSecrets are the Secrets the build's ExternalSecret copies
	// make (ExternalSecretTarget), exposed with envFrom after the others.
	// ExternalSecretsOptional marks those references optional: on a
	// cluster that does not serve ExternalSecrets nothing makes them, and
	// the pods start without them rather than never.
	ExternalSecrets         []string
	ExternalSecretsOptional bool
	// Platforms are the platforms the build's image offers, when known:
	// its pods then require nodes of those operating systems and
	// architectures, on top of the target's own affinity.
	Platforms []platform.Platform
}

// ReplicaSet is a build's ReplicaSet, named after its tag.
func ReplicaSet(b Build) *appsv1.ReplicaSet {
	labels := tagLabels(b.App, b.Target, b.Tag)
	podLabels := maps.Clone(labels)
	podLabels[picchuv1alpha1.LabelPodTag] = b.Tag
	podLabels[labelIstioApp] = b.App
	podLabels[labelIstioVer] = b.Tag
	rsLabels := maps.Clone(podLabels)
	delete(rsLabels, picchuv1alpha1.LabelPodTag)
	if b.Spec.AmbientMesh {
		// While builds of both modes run, the namespace asks for sidecars:
		// an ambient build's pods opt out.
		podLabels[LabelSidecarInject] = "false"
	}

	annotations := map[string]string{}
	if b.Ramping {
		annotations[AnnotationRamping] = "true"
	}
	if b.Autoscaler != "" {
		annotations[AnnotationAutoscaler] = b.Autoscaler
	}
	role := b.Spec.AWS.IAM.RoleARN
	if role != "" {
		annotations[annotationIAMRole] = role
	}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: b.Tag, Namespace: picchuv1alpha1.AppNamespace(b.App, b.Target), Labels: rsLabels, Annotations: annotations,
		},
		Spec: appsv1.ReplicaSetSpec{
			MinReadySeconds: b.Spec.Scale.MinReadySeconds,
			// Istio's labels are left out of the selector, as the original does.
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations(b)},
				Spec:       podSpec(b, labels),
			},
		},
	}
}

func podAnnotations(b Build) map[string]string {
	a := maps.Clone(b.Spec.PodAnnotations)
	if a == nil {
		a = map[string]string{}
	}
	a[annotationDatadogTolerateUnready] = "true"
	if role := b.Spec.AWS.IAM.RoleARN; role != "" {
		a[annotationIAMRole] = role
	}
	if d := b.Spec.KarpenterDoNotDisrupt; d != "" {
		a[picchuv1alpha1.AnnotationKarpenterDoNotDisrupt] = d
	}
	return a
}

// podSpec is the spec of b's pods: the app's container, then its
// sidecars, on the build's platforms, matched for spread by selector
// unless the target names its own.
func podSpec(b Build, selector map[string]string) corev1.PodSpec {
	t := b.Spec
	env := envFrom(b)
	containers := append([]corev1.Container{appContainer(b, env)}, sidecars(t, env)...)
	serviceAccount := t.ServiceAccountName
	if serviceAccount == "" {
		serviceAccount = b.App
	}
	ndots := "1"
	spec := corev1.PodSpec{
		Containers:         containers,
		Volumes:            t.Volumes,
		ServiceAccountName: serviceAccount,
		Affinity:           platform.WithRequirements(t.Affinity, platform.Requirements(b.Platforms)),
		Tolerations:        t.Tolerations,
		PriorityClassName:  t.PriorityClassName,
		SchedulerName:      t.SchedulerName,
		DNSConfig:          &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &ndots}}},
	}
	if seconds, err := strconv.ParseInt(t.PodAnnotations[annotationGracePeriod], 10, 64); err == nil && seconds >= 0 {
		spec.TerminationGracePeriodSeconds = &seconds
	}
	if tsc := t.TopologySpreadConstraint; tsc != nil {
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spreadConstraint(tsc, selector)}
	}
	return spec
}

// envFrom is where b's containers read their environment from: its
// ConfigMaps, then its Secrets, then its ExternalSecrets' Secrets.
func envFrom(b Build) []corev1.EnvFromSource {
	out := make([]corev1.EnvFromSource, 0, len(b.ConfigMaps)+len(b.Secrets)+len(b.ExternalSecrets))
	for _, name := range b.ConfigMaps {
		out = append(out, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	}
	for _, name := range b.Secrets {
		out = append(out, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	}
	for _, name := range b.ExternalSecrets {
		ref := &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
		if b.ExternalSecretsOptional {
			ref.Optional = ptr.To(true)
		}
		out = append(out, corev1.EnvFromSource{SecretRef: ref})
	}
	return out
}

// appContainer is the container of b's app. With a status port, the
// probes the target does not set ask it whether the app is running.
func appContainer(b Build, envFrom []corev1.EnvFromSource) corev1.Container {
	t := b.Spec
	app := corev1.Container{
		Name:           b.App,
		Image:          b.Image,
		Ports:          containerPorts(t.Ports),
		Env:            t.Env,
		EnvFrom:        envFrom,
		Resources:      t.Resources,
		VolumeMounts:   t.VolumeMounts,
		LivenessProbe:  t.LivenessProbe,
		ReadinessProbe: t.ReadinessProbe,
		Lifecycle:      t.Lifecycle,
	}
	if port := statusPort(t.Ports); port != nil {
		if app.LivenessProbe == nil {
			app.LivenessProbe = runningProbe(port.Name, 7)
		}
		if app.ReadinessProbe == nil {
			app.ReadinessProbe = runningProbe(port.Name, 3)
		}
	}
	return app
}

// sidecars are the containers of t's sidecars.
func sidecars(t *picchuv1alpha1.RevisionTarget, envFrom []corev1.EnvFromSource) []corev1.Container {
	var containers []corev1.Container
	for _, sidecar := range t.Sidecars {
		s := *sidecar.DeepCopy()
		// Sidecars share the app's config and mounts, and keep their own.
		s.Env = append(s.Env, t.Env...)
		s.EnvFrom = append(s.EnvFrom, envFrom...)
		s.VolumeMounts = append(s.VolumeMounts, t.VolumeMounts...)
		containers = append(containers, s)
	}
	return containers
}

// spreadConstraint is tsc, made never to leave a pod unscheduled, and
// matching selector when it matches nothing.
func spreadConstraint(tsc *corev1.TopologySpreadConstraint, selector map[string]string) corev1.TopologySpreadConstraint {
	c := *tsc.DeepCopy()
	// A build must never be unschedulable for want of spread.
	c.WhenUnsatisfiable = corev1.ScheduleAnyway
	if c.LabelSelector == nil {
		c.LabelSelector = &metav1.LabelSelector{MatchLabels: maps.Clone(selector)}
	}
	return c
}

func containerPorts(ports []picchuv1alpha1.PortInfo) []corev1.ContainerPort {
	out := make([]corev1.ContainerPort, 0, len(ports))
	for _, p := range ports {
		out = append(out, corev1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort, Protocol: p.Protocol})
	}
	return out
}

func statusPort(ports []picchuv1alpha1.PortInfo) *picchuv1alpha1.PortInfo {
	for i := range ports {
		if ports[i].Name == statusPortName {
			return &ports[i]
		}
	}
	return nil
}

func runningProbe(port string, failureThreshold int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/running", Port: intstr.FromString(port), Scheme: corev1.URISchemeHTTP,
		}},
		FailureThreshold: failureThreshold,
	}
}

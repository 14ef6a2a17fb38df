package thirdparty_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

const (
	// releaseTimeout bounds a build's way from its Revision to released.
	releaseTimeout = 2 * time.Minute
	// watchTimeout bounds what a watch brings about, well under the
	// operator's one-minute resync.
	watchTimeout = 30 * time.Second
)

var (
	externalSecretKind = schema.GroupVersionKind{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret"}
	datadogMetricKind  = schema.GroupVersionKind{Group: "datadoghq.com", Version: "v1alpha1", Kind: "DatadogMetric"}
)

// revision is build tag of app in target production, released at once
// (geometric steps every second), changed by with.
func revision(app, tag string, with func(*picchuv1alpha1.Revision, *picchuv1alpha1.RevisionTarget)) *picchuv1alpha1.Revision {
	return env.Apps().Revision(app, tag,
		kit.Target(func(t *picchuv1alpha1.RevisionTarget) { t.Ports[0].Mode = picchuv1alpha1.PortModePrivate }),
		kit.Scale(picchuv1alpha1.ScaleInfo{Min: int32p(2), Max: 6}),
		kit.Geometric(25, 2, time.Second),
		kit.With(func(rev *picchuv1alpha1.Revision) { with(rev, &rev.Spec.Targets[0]) }))
}

// create creates obj on the delivery cluster.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Delivery.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// update changes the Revision rev names on the delivery cluster with change.
func update(t *testing.T, rev *picchuv1alpha1.Revision, change func(*picchuv1alpha1.RevisionTarget)) {
	t.Helper()
	kit.Eventually(t, 10*time.Second, "updating "+rev.Name, func() error {
		live := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKeyFromObject(rev), live); err != nil {
			return err
		}
		change(&live.Spec.Targets[0])
		return env.Delivery.Client.Update(context.Background(), live)
	})
}

// releaseManager reads app's ReleaseManager.
func releaseManager(app string) (*picchuv1alpha1.ReleaseManager, error) {
	return env.Apps().ReleaseManager(context.Background(), app)
}

// released waits until app's build tag is released.
func released(t *testing.T, app, tag string) {
	t.Helper()
	env.Apps().WaitState(t, releaseTimeout, app, tag, "released")
}

// get reads name in app's namespace on target into obj.
func get(target *harness.Target, app, name string, obj client.Object) error {
	return target.Client.Get(context.Background(), client.ObjectKey{Namespace: app + "-production", Name: name}, obj)
}

// object is an empty unstructured object of kind.
func object(kind schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u
}

// gone says name of obj's kind is not in app's namespace on target.
func gone(target *harness.Target, app, name string, obj client.Object) error {
	switch err := get(target, app, name, obj); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%s %s is still on %s", obj.GetObjectKind().GroupVersionKind().Kind, name, target.Name)
}

// envFromSecret is the secretRef of container app's envFrom naming secret.
func envFromSecret(rs *appsv1.ReplicaSet, app, secret string) *corev1.SecretEnvSource {
	for _, c := range rs.Spec.Template.Spec.Containers {
		if c.Name != app {
			continue
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil && e.SecretRef.Name == secret {
				return e.SecretRef
			}
		}
	}
	return nil
}

// TestExternalSecrets_CopiedWhereServedAndExposedToThePods: an
// ExternalSecret a build's configSelector selects is copied to target-0,
// which serves the kind, and its Secret is in the pods' envFrom there;
// target-1, which does not, still runs the build, its pods referring to
// the Secret as optional, and the ReleaseManager's condition names it. A
// change of the ExternalSecret reaches the copy, and the copy goes once
// the selector no longer selects it.
func TestExternalSecrets_CopiedWhereServedAndExposedToThePods(t *testing.T) {
	const app = "vault"
	ctx := context.Background()
	es := object(externalSecretKind)
	es.SetName("vault-v1-env")
	es.SetNamespace(env.Namespace)
	es.SetLabels(map[string]string{"config": "vault-v1"})
	es.Object["spec"] = map[string]any{
		"refreshInterval": "1h",
		"secretStoreRef":  map[string]any{"kind": "ClusterSecretStore", "name": "vault"},
		"target":          map[string]any{"name": "vault-env"},
		"data":            []any{map[string]any{"secretKey": "password", "remoteRef": map[string]any{"key": "db/password"}}},
	}
	create(t, es)
	create(t, revision(app, "v1", func(_ *picchuv1alpha1.Revision, tg *picchuv1alpha1.RevisionTarget) {
		tg.ConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"config": "vault-v1"}}
	}))
	released(t, app, "v1")

	served, missing := env.Targets[0], env.Targets[1]
	kit.Eventually(t, watchTimeout, "the copy and the envFrom", func() error {
		cp := object(externalSecretKind)
		if err := get(served, app, "vault-v1-env", cp); err != nil {
			return err
		}
		target, _, _ := unstructured.NestedString(cp.Object, "spec", "target", "name")
		key, _, _ := unstructured.NestedString(cp.Object, "spec", "secretStoreRef", "name")
		if cp.GetLabels()[picchuv1alpha1.LabelTag] != "v1" || cp.GetLabels()["config"] != "" || target != "vault-env" || key != "vault" {
			return fmt.Errorf("copy %v", cp.Object)
		}
		for _, tc := range []struct {
			target   *harness.Target
			optional bool
		}{{served, false}, {missing, true}} {
			rs := &appsv1.ReplicaSet{}
			if err := get(tc.target, app, "v1", rs); err != nil {
				return err
			}
			ref := envFromSecret(rs, app, "vault-env")
			if ref == nil || (ref.Optional != nil && *ref.Optional) != tc.optional {
				return fmt.Errorf("%s: envFrom %+v, want vault-env optional %t", tc.target.Name, rs.Spec.Template.Spec.Containers[0].EnvFrom, tc.optional)
			}
		}
		return nil
	})
	kit.Eventually(t, watchTimeout, "the condition naming target-1", func() error {
		rm, err := releaseManager(app)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionExternalSecretsServed)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, missing.Name) || strings.Contains(c.Message, served.Name) {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})

	// A change of the source reaches the copy through the watch.
	kit.Eventually(t, 10*time.Second, "changing the ExternalSecret", func() error {
		live := object(externalSecretKind)
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(es), live); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(live.Object, "5m", "spec", "refreshInterval"); err != nil {
			return err
		}
		return env.Delivery.Client.Update(ctx, live)
	})
	kit.Eventually(t, watchTimeout, "the change on target-0", func() error {
		cp := object(externalSecretKind)
		if err := get(served, app, "vault-v1-env", cp); err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedString(cp.Object, "spec", "refreshInterval"); got != "5m" {
			return fmt.Errorf("refreshInterval %q", got)
		}
		return nil
	})

	// No longer selected: the copy, the envFrom and the condition go.
	kit.Eventually(t, 10*time.Second, "unlabelling the ExternalSecret", func() error {
		live := object(externalSecretKind)
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(es), live); err != nil {
			return err
		}
		live.SetLabels(nil)
		return env.Delivery.Client.Update(ctx, live)
	})
	kit.Eventually(t, watchTimeout, "the copy pruned", func() error {
		if err := gone(served, app, "vault-v1-env", object(externalSecretKind)); err != nil {
			return err
		}
		rs := &appsv1.ReplicaSet{}
		if err := get(served, app, "v1", rs); err != nil {
			return err
		}
		if ref := envFromSecret(rs, app, "vault-env"); ref != nil {
			return fmt.Errorf("envFrom still has %+v", ref)
		}
		rm, err := releaseManager(app)
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionExternalSecretsServed); c != nil {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// TestKEDADatadog_ConfigTokenAndMetric: a KEDA build with a datadog
// trigger and a request-rate target gets its dd-cfg ConfigMap, the app's
// token Secret, a TriggerAuthentication reading both, a ScaledObject whose
// trigger reads its DatadogMetric, and the DatadogMetric where the kind is
// served (target-0); target-1 gets all but the DatadogMetric. Without the
// datadog trigger the Datadog settings go, and once the build retires its
// KEDA objects and DatadogMetric go.
func TestKEDADatadog_ConfigTokenAndMetric(t *testing.T) {
	const app = "dogs"
	rev := revision(app, "v1", func(_ *picchuv1alpha1.Revision, tg *picchuv1alpha1.RevisionTarget) {
		tg.Scale.TargetRequestsRate = ptrString("25")
		tg.Scale.KedaWorker = &picchuv1alpha1.KedaScaleInfo{Triggers: []kedav1alpha1.ScaleTriggers{
			{Type: "datadog", Metadata: map[string]string{}},
		}}
	})
	create(t, rev)
	released(t, app, "v1")
	for i, target := range env.Targets {
		kit.Eventually(t, watchTimeout, target.Name+": the KEDA objects", func() error {
			cm := &corev1.ConfigMap{}
			if err := get(target, app, "dd-cfg-v1", cm); err != nil {
				return err
			}
			if cm.Data["authMode"] != "bearer" || cm.Data["datadogNamespace"] != "datadog" || cm.Data["datadogMetricsServicePort"] != "8443" {
				return fmt.Errorf("dd-cfg %v", cm.Data)
			}
			token := &corev1.Secret{}
			if err := get(target, app, "service-account-token", token); err != nil {
				return err
			}
			if token.Type != corev1.SecretTypeServiceAccountToken || token.Annotations[corev1.ServiceAccountNameKey] != app {
				return fmt.Errorf("token secret %+v", token.ObjectMeta)
			}
			ta := &kedav1alpha1.TriggerAuthentication{}
			if err := get(target, app, "v1", ta); err != nil {
				return err
			}
			if len(ta.Spec.ConfigMapTargetRef) != 5 || ta.Spec.ConfigMapTargetRef[0].Name != "dd-cfg-v1" ||
				len(ta.Spec.SecretTargetRef) != 1 || ta.Spec.SecretTargetRef[0].Name != "service-account-token" {
				return fmt.Errorf("trigger authentication %+v", ta.Spec)
			}
			so := &kedav1alpha1.ScaledObject{}
			if err := get(target, app, "v1", so); err != nil {
				return err
			}
			md := so.Spec.Triggers[0].Metadata
			if md["datadogMetricName"] != "v1" || md["datadogMetricNamespace"] != app+"-production" ||
				md["useClusterAgentProxy"] != "true" || md["targetValue"] != "25" {
				return fmt.Errorf("trigger %+v", so.Spec.Triggers[0])
			}
			dm := object(datadogMetricKind)
			if i == 1 {
				// target-1 does not serve DatadogMetrics: skipped, and the
				// cluster is synced.
				return synced(app, target.Name)
			}
			if err := get(target, app, "v1", dm); err != nil {
				return err
			}
			if q, _, _ := unstructured.NestedString(dm.Object, "spec", "query"); !strings.Contains(q, "destination_workload:v1") {
				return fmt.Errorf("DatadogMetric query %q", q)
			}
			return nil
		})
	}

	// Without the datadog trigger: no Datadog settings.
	update(t, rev, func(tg *picchuv1alpha1.RevisionTarget) {
		tg.Scale.KedaWorker.Triggers = []kedav1alpha1.ScaleTriggers{{Type: "cron", Metadata: map[string]string{
			"timezone": "UTC", "start": "0 6 * * *", "end": "0 20 * * *", "desiredReplicas": "3",
		}}}
	})
	served := env.Targets[0]
	kit.Eventually(t, watchTimeout, "the Datadog settings gone", func() error {
		if err := gone(served, app, "dd-cfg-v1", &corev1.ConfigMap{}); err != nil {
			return err
		}
		ta := &kedav1alpha1.TriggerAuthentication{}
		if err := get(served, app, "v1", ta); err != nil {
			return err
		}
		if ta.Spec.ConfigMapTargetRef != nil || ta.Spec.SecretTargetRef != nil {
			return fmt.Errorf("trigger authentication %+v", ta.Spec)
		}
		so := &kedav1alpha1.ScaledObject{}
		if err := get(served, app, "v1", so); err != nil {
			return err
		}
		if so.Spec.Triggers[0].Type != "cron" {
			return fmt.Errorf("triggers %+v", so.Spec.Triggers)
		}
		return nil
	})

	// Retired once v2 is released: v1's KEDA objects and DatadogMetric go.
	v2 := revision(app, "v2", func(r *picchuv1alpha1.Revision, tg *picchuv1alpha1.RevisionTarget) {
		r.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
		tg.Scale.TargetRequestsRate = ptrString("25")
		tg.Scale.KedaWorker = &picchuv1alpha1.KedaScaleInfo{Triggers: []kedav1alpha1.ScaleTriggers{
			{Type: "datadog", Metadata: map[string]string{}},
		}}
	})
	create(t, v2)
	released(t, app, "v2")
	kit.Eventually(t, releaseTimeout, "v1's objects gone", func() error {
		for _, obj := range []client.Object{object(datadogMetricKind), &kedav1alpha1.ScaledObject{}, &kedav1alpha1.TriggerAuthentication{}} {
			if err := gone(served, app, "v1", obj); err != nil {
				return err
			}
		}
		return get(served, app, "v2", object(datadogMetricKind))
	})
}

// synced says the ReleaseManager of app reports cluster synced.
func synced(app, cluster string) error {
	rm, err := releaseManager(app)
	if err != nil {
		return err
	}
	for _, cs := range rm.Status.Clusters {
		if cs.Name == cluster && !cs.Synced {
			return fmt.Errorf("%s not synced: %s", cluster, cs.Message)
		}
	}
	return nil
}

// TestAmbientRequestRate_ScaledObjectOnTheClusterPrometheus: an ambient
// build with a request-rate target scales with a KEDA ScaledObject asking
// the cluster's Prometheus, and no HPA; out of ambient mode it gets its
// HPA back and the ScaledObject goes.
func TestAmbientRequestRate_ScaledObjectOnTheClusterPrometheus(t *testing.T) {
	const app = "mesh"
	rev := revision(app, "v1", func(_ *picchuv1alpha1.Revision, tg *picchuv1alpha1.RevisionTarget) {
		tg.AmbientMesh = true
		tg.Scale.TargetRequestsRate = ptrString("40")
		tg.Scale.TargetCPUUtilizationPercentage = int32p(60)
	})
	create(t, rev)
	released(t, app, "v1")
	for _, target := range env.Targets {
		kit.Eventually(t, watchTimeout, target.Name+": the ScaledObject", func() error {
			if err := gone(target, app, "v1", &autoscalingv2.HorizontalPodAutoscaler{}); err != nil {
				return err
			}
			so := &kedav1alpha1.ScaledObject{}
			if err := get(target, app, "v1", so); err != nil {
				return err
			}
			tr := so.Spec.Triggers
			if len(tr) != 2 || tr[0].Type != "prometheus" || tr[0].Metadata["serverAddress"] != clusterPrometheus ||
				!strings.Contains(tr[0].Metadata["query"], `destination_workload="v1"`) || tr[0].Metadata["threshold"] != "40" ||
				tr[1].Type != "cpu" || *so.Spec.MinReplicaCount < 1 {
				return fmt.Errorf("scaled object %+v", so.Spec)
			}
			rs := &appsv1.ReplicaSet{}
			if err := get(target, app, "v1", rs); err != nil {
				return err
			}
			if a := rs.Annotations["picchu.medium.engineering/autoscaler"]; a != "keda" {
				return fmt.Errorf("autoscaler annotation %q", a)
			}
			return nil
		})
	}
	update(t, rev, func(tg *picchuv1alpha1.RevisionTarget) { tg.AmbientMesh = false })
	for _, target := range env.Targets {
		kit.Eventually(t, watchTimeout, target.Name+": the HPA back", func() error {
			if err := gone(target, app, "v1", &kedav1alpha1.ScaledObject{}); err != nil {
				return err
			}
			return get(target, app, "v1", &autoscalingv2.HorizontalPodAutoscaler{})
		})
	}
}

// TestEventDriven_NoPodsWhereDisabled: an event-driven build runs no pod
// on target-1, which disables event-driven builds, and is released on
// target-0 alone, its replicas and HPA range all there: the next build
// ramps with the capacity gate counting target-0 alone. Once target-1
// allows event-driven builds, the build is divided over both.
func TestEventDriven_NoPodsWhereDisabled(t *testing.T) {
	const app = "worker"
	build := func(tag string, commit int) *picchuv1alpha1.Revision {
		return revision(app, tag, func(rev *picchuv1alpha1.Revision, tg *picchuv1alpha1.RevisionTarget) {
			rev.Spec.EventDriven = true
			rev.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: time.Date(2026, 11, 2, 9, commit, 0, 0, time.UTC).
				Format(time.RFC3339)}
			tg.Scale = picchuv1alpha1.ScaleInfo{Min: int32p(4), Max: 8, TargetCPUUtilizationPercentage: int32p(50)}
		})
	}
	create(t, build("v1", 1))
	released(t, app, "v1")
	// v2 ramps from v1's pods on target-0: a gate counting target-1 would
	// wait for pods there forever.
	create(t, build("v2", 2))
	released(t, app, "v2")
	runs, idle := env.Targets[0], env.Targets[1]
	kit.Eventually(t, watchTimeout, "replicas and HPA on target-0 only", func() error {
		rs := &appsv1.ReplicaSet{}
		if err := get(runs, app, "v2", rs); err != nil {
			return err
		}
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := get(runs, app, "v2", hpa); err != nil {
			return err
		}
		// The ramp sized it from v1's pods (4 at v1's share of the
		// traffic), all on target-0.
		if *rs.Spec.Replicas < 4 || *hpa.Spec.MinReplicas != 4 || hpa.Spec.MaxReplicas != 8 {
			return fmt.Errorf("%s: %d replicas, HPA %d..%d", runs.Name, *rs.Spec.Replicas, *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
		}
		if err := get(idle, app, "v2", rs); err != nil {
			return err
		}
		if *rs.Spec.Replicas != 0 {
			return fmt.Errorf("%s: %d replicas", idle.Name, *rs.Spec.Replicas)
		}
		return gone(idle, app, "v2", hpa)
	})

	setDisableEventDriven(t, idle, false)
	t.Cleanup(func() { setDisableEventDriven(t, idle, true) })
	kit.Eventually(t, watchTimeout, "divided over both", func() error {
		for _, target := range env.Targets {
			hpa := &autoscalingv2.HorizontalPodAutoscaler{}
			if err := get(target, app, "v2", hpa); err != nil {
				return err
			}
			if *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 4 {
				return fmt.Errorf("%s: HPA %d..%d", target.Name, *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
			}
		}
		rs := &appsv1.ReplicaSet{}
		if err := get(idle, app, "v2", rs); err != nil {
			return err
		}
		if *rs.Spec.Replicas != 2 {
			return fmt.Errorf("%s: %d replicas, want the HPA's min", idle.Name, *rs.Spec.Replicas)
		}
		return nil
	})
}

// setDisableEventDriven sets target's Cluster's disableEventDriven.
func setDisableEventDriven(t *testing.T, target *harness.Target, disable bool) {
	t.Helper()
	kit.Eventually(t, 10*time.Second, "updating "+target.Name, func() error {
		cl := &picchuv1alpha1.Cluster{}
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKeyFromObject(target.Cluster), cl); err != nil {
			return err
		}
		cl.Spec.DisableEventDriven = disable
		return env.Delivery.Client.Update(context.Background(), cl)
	})
}

func ptrString(s string) *string { return &s }

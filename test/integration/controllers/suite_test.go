package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/releasemetrics"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

var (
	env      *harness.Env
	registry *access.Registry
	// running is the operator, as main assembles it.
	running *inprocess.Runner
	// replicaSetEvents receives the ReleaseManagers the registry reports.
	replicaSetEvents = make(chan types.NamespacedName, 100)
)

// removalGrace is how long an app no Revision targets stays before it goes.
const removalGrace = 3 * time.Second

// serviceLevelsNamespace is where the operator writes Sloth service levels.
const serviceLevelsNamespace = "service-level-objectives"

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 2}, setup)
}

func setup(s *harness.Suite) error {
	ctx := s.Ctx
	env = s.Env
	// Ingress gateways, as a real fleet has them.
	for _, target := range env.Targets {
		if err := kit.Update(ctx, env.Delivery.Client, target.Cluster, func(cl *picchuv1alpha1.Cluster) {
			cl.Spec.Ingresses = picchuv1alpha1.ClusterIngresses{
				Public: picchuv1alpha1.IngressInfo{
					Gateway: "istio-system/public", DefaultDomains: []string{"example.net"}, AllowedDomains: []string{"example.com"},
				},
				Private: picchuv1alpha1.IngressInfo{
					Gateway: "istio-system/private", DefaultDomains: []string{"internal.example.net"}, AllowedDomains: []string{"example.com"},
				},
			}
		}); err != nil {
			return fmt.Errorf("configuring ingresses: %w", err)
		}
	}
	if err := releasemetrics.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering release metrics: %w", err)
	}
	var err error
	running, err = inprocess.Run(s, operator.Options{
		// Short, so that the tests see an unreachable cluster come back soon.
		ClusterHealthPeriod: 2 * time.Second,
		OnReplicaSet: func(rm types.NamespacedName) {
			select {
			case replicaSetEvents <- rm:
			default: // the test reads only the first few
			}
		},
		WrapTransport: targetWrites.wrap,
		// Long, so that only events can explain a prompt reaction.
		SyncPeriod:             10 * time.Minute,
		ClusterTimeout:         5 * time.Second,
		ServiceLevelsNamespace: serviceLevelsNamespace,
		RemovalGrace:           removalGrace,
		// A build's pods go in the run after its last route: these tests
		// watch pods go, not the drain (test/integration/release does).
		ScaleDownDelay: releasemanager.NoScaleDownDelay,
		// Team A's apps live in team-a-* (TestRevision_ANamespaceOutsideThePolicyIsNeverTaken).
		AppNamespacePolicy: picchuv1alpha1.AppNamespacePolicy{policedNamespace: {"{namespace}-*"}},
	})
	if err != nil {
		return err
	}
	registry = running.Operator().Registry
	return nil
}

// readiness waits until the Cluster's Ready condition has status and reason.
func readiness(t *testing.T, name string, status metav1.ConditionStatus, reason string) *picchuv1alpha1.Cluster {
	t.Helper()
	cl := &picchuv1alpha1.Cluster{}
	kit.Eventually(t, 30*time.Second, fmt.Sprintf("cluster %s Ready=%s (%s)", name, status, reason), func() error {
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: name}, cl); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("ready condition %+v", c)
		}
		return nil
	})
	return cl
}

func TestClusterReconciler_RegistersReadyClusters(t *testing.T) {
	for _, target := range env.Targets {
		cl := readiness(t, target.Name, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)
		if cl.Status.Kubernetes.Version != "v1.36.3" || !cl.Status.Kubernetes.Ready {
			t.Errorf("%s: status.kubernetes = %+v, want ready v1.36.3", target.Name, cl.Status.Kubernetes)
		}
		if cl.Status.ObservedGeneration != cl.Generation {
			t.Errorf("%s: observedGeneration %d, generation %d", target.Name, cl.Status.ObservedGeneration, cl.Generation)
		}
		if len(cl.Finalizers) != 1 || cl.Finalizers[0] != picchuv1alpha1.FinalizerCluster {
			t.Errorf("%s: finalizers %v", target.Name, cl.Finalizers)
		}
		if _, ok := registry.Get(client.ObjectKeyFromObject(cl)); !ok {
			t.Errorf("%s: not in the registry", target.Name)
		}
	}
}

// TestClusterReconciler_PicksUpNewCredentials breaks and then restores a
// Cluster's Secret: the operator follows both without a restart.
func TestClusterReconciler_PicksUpNewCredentials(t *testing.T) {
	ctx := context.Background()
	target := env.Targets[1]
	readiness(t, target.Name, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: env.Namespace, Name: target.Name}
	if err := env.Delivery.Client.Get(ctx, key, secret); err != nil {
		t.Fatal(err)
	}
	good := secret.Data[access.AuthInfoKey]
	before, _ := registry.Get(key)

	secret.Data[access.AuthInfoKey] = []byte(`{"token": "not-a-valid-token"}`)
	if err := env.Delivery.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	cl := readiness(t, target.Name, metav1.ConditionFalse, picchuv1alpha1.ReasonUnreachable)
	if cl.Status.Kubernetes.Ready {
		t.Errorf("status.kubernetes.ready is true with a bad token")
	}
	if after, _ := registry.Get(key); after == before {
		t.Errorf("the registry kept the client built from the old token")
	}

	secret.Data[access.AuthInfoKey] = good
	if err := env.Delivery.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	readiness(t, target.Name, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)

	secret.Data[access.AuthInfoKey] = []byte(`not json`)
	if err := env.Delivery.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	cl = readiness(t, target.Name, metav1.ConditionFalse, picchuv1alpha1.ReasonInvalidCredentials)
	if c := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionStalled); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("undecodable credentials are not Stalled: %+v", c)
	}
	secret.Data[access.AuthInfoKey] = good
	if err := env.Delivery.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	cl = readiness(t, target.Name, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)
	if c := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionStalled); c != nil {
		t.Errorf("Stalled remains after recovery: %+v", c)
	}
}

// TestClusterReconciler_DisableAndDelete drops the cluster's client when the
// Cluster is disabled or deleted.
func TestClusterReconciler_DisableAndDelete(t *testing.T) {
	ctx := context.Background()
	cl := &picchuv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "extra", Namespace: env.Namespace, Labels: map[string]string{picchuv1alpha1.LabelFleet: "other"}},
		Spec:       *env.Targets[0].Cluster.Spec.DeepCopy(),
	}
	secret := &corev1.Secret{}
	if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.Targets[0].Name}, secret); err != nil {
		t.Fatal(err)
	}
	if err := env.Delivery.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "extra", Namespace: env.Namespace}, Data: secret.Data,
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.Delivery.Client.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cl)
	cl = readiness(t, "extra", metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)

	// Patched, not updated: the Cluster controller writes the status
	// meanwhile, and an update from an older read would conflict.
	patch := client.MergeFrom(cl.DeepCopy())
	cl.Spec.Enabled = false
	if err := env.Delivery.Client.Patch(ctx, cl, patch); err != nil {
		t.Fatal(err)
	}
	readiness(t, "extra", metav1.ConditionFalse, picchuv1alpha1.ReasonDisabled)
	if _, ok := registry.Get(key); ok {
		t.Errorf("a disabled cluster is still in the registry")
	}

	cl = readiness(t, "extra", metav1.ConditionFalse, picchuv1alpha1.ReasonDisabled)
	patch = client.MergeFrom(cl.DeepCopy())
	cl.Spec.Enabled = true
	if err := env.Delivery.Client.Patch(ctx, cl, patch); err != nil {
		t.Fatal(err)
	}
	readiness(t, "extra", metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)

	if err := env.Delivery.Client.Delete(ctx, cl); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 30*time.Second, "deleted cluster is gone and unregistered", func() error {
		if err := env.Delivery.Client.Get(ctx, key, &picchuv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		if _, ok := registry.Get(key); ok {
			return fmt.Errorf("still registered")
		}
		return nil
	})
}

// TestRegistry_ReportsReplicaSetChanges creates a Picchu-managed ReplicaSet
// on a target and expects its ReleaseManager to be reported at once.
func TestRegistry_ReportsReplicaSetChanges(t *testing.T) {
	ctx := context.Background()
	target := env.Targets[0]
	readiness(t, target.Name, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)
	ns := "demo-production"
	if err := target.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	// Earlier tests' events may fill the buffer, and a full buffer drops
	// new ones: start from an empty one.
	for drained := false; !drained; {
		select {
		case <-replicaSetEvents:
		default:
			drained = true
		}
	}
	labels := map[string]string{picchuv1alpha1.LabelApp: "demo", picchuv1alpha1.LabelTarget: "production", picchuv1alpha1.LabelTag: "v1"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: ns, Labels: labels},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "demo", Image: "demo:v1"}}},
			},
		},
	}
	if err := target.Client.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	want := types.NamespacedName{Namespace: env.Namespace, Name: "demo-production"}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-replicaSetEvents:
			if got == want {
				return
			}
			t.Logf("other event: %v", got)
		case <-deadline:
			t.Fatalf("no event for %v within 10s of creating a ReplicaSet", want)
		}
	}
}

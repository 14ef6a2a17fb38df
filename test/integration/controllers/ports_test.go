package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// workerRevision is a queue worker under KEDA: a build with no ports.
func workerRevision(app, tag string) *picchuv1alpha1.Revision {
	rev := appRevision(app, tag, env.Fleet)
	t := &rev.Spec.Targets[0]
	t.Ports = nil
	t.ServiceMonitors = nil
	one := int32(1)
	t.Scale = picchuv1alpha1.ScaleInfo{Min: &one, Default: 2, Max: 4, KedaWorker: &picchuv1alpha1.KedaScaleInfo{
		Triggers: []kedav1alpha1.ScaleTriggers{{Type: "aws-sqs-queue", Metadata: map[string]string{
			"queueURL": "https://sqs.us-east-1.amazonaws.com/1/" + app, "queueLength": "5",
		}}},
	}}
	return rev
}

// withCommitTime orders builds: the later commit is the newer build.
func withCommitTime(rev *picchuv1alpha1.Revision, at string) *picchuv1alpha1.Revision {
	rev.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: at}
	return rev
}

// releasedWhileReady waits until the build tag of app is released,
// reporting its ReplicaSets ready on every target whenever it looks, as the
// ReplicaSet controller would: the ramp resizes a build step by step.
func releasedWhileReady(t *testing.T, timeout time.Duration, app, tag string) {
	t.Helper()
	ctx := context.Background()
	kit.Eventually(t, timeout, app+" "+tag+" released", func() error {
		for _, target := range env.Targets {
			if err := reportReady(ctx, target, app, tag); err != nil {
				return fmt.Errorf("%s: %w", target.Name, err)
			}
		}
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: app + "-production"}, rm); err != nil {
			return err
		}
		for _, r := range rm.Status.Revisions {
			if r.Tag == tag && r.State.Current != "released" {
				return fmt.Errorf("state %s at %d%%", r.State.Current, r.CurrentPercent)
			}
			if r.Tag == tag {
				return nil
			}
		}
		return fmt.Errorf("no status for %s", tag)
	})
}

// reportReady reports every replica of the build's ReplicaSet on target
// available, unless it says so already.
func reportReady(ctx context.Context, target *harness.Target, app, tag string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs := &appsv1.ReplicaSet{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: tag}, rs); err != nil {
			return err
		}
		n := int32(1)
		if rs.Spec.Replicas != nil {
			n = *rs.Spec.Replicas
		}
		if rs.Status.AvailableReplicas == n && rs.Status.Replicas == n && rs.Status.ObservedGeneration == rs.Generation {
			return nil
		}
		rs.Status = appsv1.ReplicaSetStatus{
			Replicas: n, FullyLabeledReplicas: n, ReadyReplicas: n, AvailableReplicas: n, ObservedGeneration: rs.Generation,
		}
		return target.Client.Status().Update(ctx, rs)
	})
}

// allSynced waits until the ReleaseManager of app says every cluster synced:
// no object was rejected on any of them.
func allSynced(t *testing.T, app string) {
	t.Helper()
	kit.Eventually(t, 10*time.Second, app+" synced on every cluster", func() error {
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: app + "-production"}, rm); err != nil {
			return err
		}
		if len(rm.Status.Clusters) != len(env.Targets) {
			return fmt.Errorf("clusters %+v", rm.Status.Clusters)
		}
		for _, c := range rm.Status.Clusters {
			if !c.Synced {
				return fmt.Errorf("cluster %s not synced: %s", c.Name, c.Message)
			}
		}
		return nil
	})
}

// noRoutingObjects waits until the app has no Service, DestinationRule or
// VirtualService on the target.
func noRoutingObjects(t *testing.T, target *harness.Target, app string) {
	t.Helper()
	ns := app + "-production"
	kit.Eventually(t, 10*time.Second, target.Name+": no Service or routes for "+app, func() error {
		for _, obj := range []client.Object{&corev1.Service{}, &istionetworking.DestinationRule{}, &istionetworking.VirtualService{}} {
			err := target.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: app}, obj)
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s/%s: %v (want none)", obj, ns, app, err)
			}
		}
		return nil
	})
}

// TestReleaseManager_DeploysAPortlessWorker deploys a queue worker with no
// ports: its ReplicaSet runs on every cluster, nothing is rejected, it is
// released, and it has no Service and no routes (a Service without ports is
// invalid, and nothing would reach the worker through one).
func TestReleaseManager_DeploysAPortlessWorker(t *testing.T) {
	ctx := context.Background()
	const app = "queue"
	config(t, app, "v1")
	if err := env.Delivery.Client.Create(ctx, workerRevision(app, "v1")); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		rs := replicaSet(t, target, app, "v1")
		if ports := rs.Spec.Template.Spec.Containers[0].Ports; len(ports) != 0 {
			t.Errorf("%s: container ports %+v, want none", target.Name, ports)
		}
		makeReady(t, target, app, "v1")
	}
	buildState(t, 10*time.Second, app, "v1", "released")
	allSynced(t, app)
	for _, target := range env.Targets {
		noRoutingObjects(t, target, app)
		kit.Eventually(t, 10*time.Second, target.Name+": KEDA scales the released worker", func() error {
			return target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: "v1"}, &kedav1alpha1.ScaledObject{})
		})
	}
}

// TestReleaseManager_AppBecomesAWorker releases a build with ports, then a
// newer one without: the Service stays while the old build's Revision
// exists, and goes, with the routes, when the old build is deleted.
func TestReleaseManager_AppBecomesAWorker(t *testing.T) {
	ctx := context.Background()
	const app = "convert"
	config(t, app, "v1")
	config(t, app, "v2")
	v1 := withCommitTime(appRevision(app, "v1", env.Fleet), "2026-11-01T10:00:00Z")
	v2 := withCommitTime(workerRevision(app, "v2"), "2026-11-02T10:00:00Z")
	if err := env.Delivery.Client.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	buildState(t, 10*time.Second, app, "v1", "released")
	if err := env.Delivery.Client.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	releasedWhileReady(t, 30*time.Second, app, "v2")
	buildState(t, 10*time.Second, app, "v1", "retired")
	allSynced(t, app)
	for _, target := range env.Targets {
		svc := &corev1.Service{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: app}, svc); err != nil {
			t.Fatalf("%s: the Service went while v1, which has ports, is still there: %v", target.Name, err)
		}
	}

	if err := env.Delivery.Client.Delete(ctx, v1); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, target.Name+": v1 removed", func() error {
			err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: "v1"}, &appsv1.ReplicaSet{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("ReplicaSet v1: %v", err)
			}
			return nil
		})
		noRoutingObjects(t, target, app)
	}
	allSynced(t, app)
}

// TestReleaseManager_RenamedPort releases v1, which calls port 80 "http",
// then v2, which calls it "web": the shared Service is never rejected, and
// while both run it has one port 80 that reaches the pods of both.
func TestReleaseManager_RenamedPort(t *testing.T) {
	ctx := context.Background()
	const app = "rename"
	config(t, app, "v1")
	config(t, app, "v2")
	v1 := withCommitTime(appRevision(app, "v1", env.Fleet), "2026-11-01T10:00:00Z")
	v2 := withCommitTime(appRevision(app, "v2", env.Fleet), "2026-11-02T10:00:00Z")
	v2.Spec.Targets[0].Ports[0].Name = "web"
	v2.Spec.Targets[0].ServiceMonitors = []picchuv1alpha1.ServiceMonitor{serviceMonitor(app, "status"), serviceMonitor(app, "web")}
	if err := env.Delivery.Client.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	buildState(t, 10*time.Second, app, "v1", "released")
	if err := env.Delivery.Client.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	releasedWhileReady(t, 30*time.Second, app, "v2")
	allSynced(t, app)
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, target.Name+": one port 80 for both builds", func() error {
			svc := &corev1.Service{}
			if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: app}, svc); err != nil {
				return err
			}
			var port80 []corev1.ServicePort
			for _, p := range svc.Spec.Ports {
				if p.Port == 80 {
					port80 = append(port80, p)
				}
			}
			if len(port80) != 1 || port80[0].Name != "web" || port80[0].TargetPort != intstr.FromInt32(8080) {
				return fmt.Errorf("ports %+v: want one port 80, named web (v2, the newest), targeting 8080", svc.Spec.Ports)
			}
			return nil
		})
	}
	// Deleting the Revision of a build that takes no traffic removes it.
	if err := env.Delivery.Client.Delete(ctx, v1); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, target.Name+": port 80 targets web once v1 is gone", func() error {
			svc := &corev1.Service{}
			if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: app}, svc); err != nil {
				return err
			}
			if p := svc.Spec.Ports[0]; p.Port != 80 || p.Name != "web" || p.TargetPort != intstr.FromString("web") {
				return fmt.Errorf("ports %+v", svc.Spec.Ports)
			}
			return nil
		})
	}
}

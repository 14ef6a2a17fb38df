package harness_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// TestControllers_ReplicaSetAndHPAOnKwokNodes starts a target with real
// controllers: a ReplicaSet's pods are scheduled on kwok nodes and become
// Running and Ready, an HPA raises the ReplicaSet to its minimum replicas,
// and Stop leaves none of the controller processes running.
func TestControllers_ReplicaSetAndHPAOnKwokNodes(t *testing.T) {
	ctx := context.Background()
	began := time.Now()
	env, err := harness.Start(ctx, harness.Options{Targets: 1, Controllers: true})
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		if err := env.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started a delivery cluster and a target with controllers in %s", time.Since(began).Round(time.Millisecond))

	target := env.Targets[0]
	if !target.Controllers {
		t.Fatal("target.Controllers is false on a target started with Options.Controllers")
	}
	if env.Delivery.Controllers {
		t.Error("the delivery cluster reports controllers")
	}
	pids := harness.ControllerPIDs(&target.Server)
	for _, name := range []string{"kwok", "kube-scheduler", "kube-controller-manager"} {
		if _, ok := pids[name]; !ok {
			t.Fatalf("no %s process among %v", name, pids)
		}
	}
	if err := target.ServeReplicaSets(ctx); err == nil {
		t.Error("ServeReplicaSets accepted a target that runs real controllers")
	}

	c := target.Client
	ns := "demo"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	labels := map[string]string{"app": "demo"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: "registry.example/x:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("64Mi"),
					}},
				}}},
			},
		},
	}
	if err := c.Create(ctx, rs); err != nil {
		t.Fatalf("creating ReplicaSet: %v", err)
	}
	kit.Eventually(t, time.Minute, "3 pods Running and Ready on kwok nodes", func() error {
		return runningReadyPods(ctx, c, ns, labels, 3)
	})
	kit.Eventually(t, time.Minute, "3 available replicas", func() error {
		return availableReplicas(ctx, c, rs, 3)
	})

	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "ReplicaSet", Name: rs.Name,
			},
			MinReplicas: ptr.To[int32](5),
			MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{
						Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60),
					},
				},
			}},
		},
	}
	if err := c.Create(ctx, hpa); err != nil {
		t.Fatalf("creating HPA: %v", err)
	}
	kit.Eventually(t, time.Minute, "the HPA scales the ReplicaSet to its 5 minimum replicas", func() error {
		return availableReplicas(ctx, c, rs, 5)
	})
	kit.Eventually(t, time.Minute, "5 pods Running and Ready on kwok nodes", func() error {
		return runningReadyPods(ctx, c, ns, labels, 5)
	})

	stopped = true
	if err := env.Stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	for name, pid := range pids {
		if running(pid, name) {
			t.Errorf("%s (pid %d) still runs after Stop", name, pid)
		}
	}
}

// runningReadyPods checks that exactly want pods match labels in ns, each
// Running, Ready and on a node.
func runningReadyPods(ctx context.Context, c client.Client, ns string, labels map[string]string, want int) error {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	if len(pods.Items) != want {
		return fmt.Errorf("%d pods, want %d", len(pods.Items), want)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || !podReady(&p) {
			return fmt.Errorf("pod %s: node %q, phase %s, ready %t", p.Name, p.Spec.NodeName, p.Status.Phase, podReady(&p))
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// availableReplicas checks that rs wants, and has, want available replicas.
func availableReplicas(ctx context.Context, c client.Client, rs *appsv1.ReplicaSet, want int32) error {
	got := &appsv1.ReplicaSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(rs), got); err != nil {
		return fmt.Errorf("reading ReplicaSet: %w", err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != want || got.Status.AvailableReplicas != want {
		return fmt.Errorf("ReplicaSet spec.replicas %v, status.availableReplicas %d; want %d",
			ptr.Deref(got.Spec.Replicas, -1), got.Status.AvailableReplicas, want)
	}
	return nil
}

// running says whether process pid runs, as a program named name (so that
// a reused pid does not count).
func running(pid int, name string) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if errors.Is(err, os.ErrNotExist) || len(cmdline) == 0 {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return filepath.Base(string(argv0)) == name
}

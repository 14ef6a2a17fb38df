package nodes_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/medium/picchu/decide/platform"
	"github.com/medium/picchu/fleet/nodes"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 1}, harness.KeepEnv(&env))
}

func createNode(t *testing.T, c client.Client, name, arch string, ready corev1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		platform.LabelOS: "linux", platform.LabelArch: arch,
	}}}
	if err := c.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	setReady(t, c, name, ready)
}

func setReady(t *testing.T, c client.Client, name string, ready corev1.ConditionStatus) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now()}}
	if err := c.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func TestPlatforms_OfARealCluster(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	createNode(t, tgt.Client, "amd-1", "amd64", corev1.ConditionTrue)
	createNode(t, tgt.Client, "arm-1", "arm64", corev1.ConditionFalse)

	remote, err := cluster.New(tgt.Config, func(o *cluster.Options) { o.Scheme = tgt.Client.Scheme() })
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "picchu", Name: tgt.Name}
	var changes atomic.Int32
	p := nodes.New(log.Log, func(k types.NamespacedName) {
		if k == key {
			changes.Add(1)
		}
	})
	defer p.Stop()

	readCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := p.Platforms(readCtx, key, remote)
	if err != nil {
		t.Fatal(err)
	}
	amd64, arm64 := platform.Platform{OS: "linux", Architecture: "amd64"}, platform.Platform{OS: "linux", Architecture: "arm64"}
	if !slices.Equal(got, []platform.Platform{amd64}) {
		t.Errorf("platforms %v, want only the ready amd64 node's", got)
	}

	// A heartbeat that changes nothing asks for nothing.
	setReady(t, tgt.Client, "amd-1", corev1.ConditionTrue)
	// The arm64 node becoming ready is a change.
	setReady(t, tgt.Client, "arm-1", corev1.ConditionTrue)
	kit.Eventually(t, 20*time.Second, "the change told", func() error {
		if changes.Load() == 0 {
			return fmt.Errorf("no change told yet")
		}
		return nil
	})
	if n := changes.Load(); n != 1 {
		t.Errorf("%d changes told, want 1", n)
	}
	if got, err = p.Platforms(readCtx, key, remote); err != nil || !slices.Equal(got, []platform.Platform{amd64, arm64}) {
		t.Errorf("platforms %v (%v), want both", got, err)
	}

	// Forgotten, the cache is built again on the next read.
	p.Forget(key)
	if got, err = p.Platforms(readCtx, key, remote); err != nil || !slices.Equal(got, []platform.Platform{amd64, arm64}) {
		t.Errorf("platforms after forget %v (%v)", got, err)
	}
}

func TestReduce(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7", Labels: map[string]string{
			platform.LabelOS: "linux", platform.LabelArch: "arm64", "pool": "big",
		}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.0.0.0/24", Taints: []corev1.Taint{{Key: "pool", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			NodeInfo:    corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64", KernelVersion: "6"},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: "ok"}},
			Images:      []corev1.ContainerImage{{Names: []string{"big"}}},
		},
	}
	got, err := nodes.Reduce(n)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7", Labels: map[string]string{platform.LabelOS: "linux", platform.LabelArch: "arm64", "pool": "big"}},
		Spec:       corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "pool", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			NodeInfo:    corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64"},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reduced\n%+v\nwant\n%+v", got, want)
	}
	if other, _ := nodes.Reduce("x"); other != "x" {
		t.Error("a non-node was changed")
	}
}

// TestCapacity_OfARealCluster: the capacity read gives the nodes with what
// room is counted from, and only the pods that take room: bound to a
// node, not ended. A node added is a change told.
func TestCapacity_OfARealCluster(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	c := tgt.Client
	createNode(t, c, "room-1", "amd64", corev1.ConditionTrue)
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: "room-1"}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("10")}
	if err := c.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "room"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	newPod := func(name, node string, phase corev1.PodPhase) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "room", Name: name, Labels: map[string]string{"picchu.medium.engineering/tag": name, "other": "x"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			}}}},
		}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if phase != "" {
			p.Status.Phase = phase
			if err := c.Status().Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	newPod("running", "room-1", corev1.PodRunning)
	newPod("pending", "", corev1.PodPending)
	newPod("done", "room-1", corev1.PodSucceeded)

	remote, err := cluster.New(tgt.Config, func(o *cluster.Options) { o.Scheme = tgt.Client.Scheme() })
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "picchu", Name: tgt.Name}
	var changes atomic.Int32
	p := nodes.New(log.Log, func(k types.NamespacedName) {
		if k == key {
			changes.Add(1)
		}
	})
	defer p.Stop()
	readCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := p.Capacity(readCtx, key, remote)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pod := range got.Pods {
		names = append(names, pod.Name)
		if pod.Name == "running" {
			want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
			if r := pod.Spec.Containers[0].Resources.Requests; !reflect.DeepEqual(r, want) || pod.Labels["other"] != "" || pod.Spec.NodeName != "room-1" {
				t.Errorf("reduced pod %+v", pod)
			}
		}
	}
	if !slices.Equal(names, []string{"running"}) {
		t.Errorf("pods %v, want only the bound running one", names)
	}
	i := slices.IndexFunc(got.Nodes, func(n corev1.Node) bool { return n.Name == "room-1" })
	if i < 0 || got.Nodes[i].Status.Allocatable.Cpu().String() != "2" {
		t.Fatalf("nodes %+v, want room-1 with its allocatable", got.Nodes)
	}

	// A node added is more room: told once.
	before := changes.Load()
	createNode(t, c, "room-2", "amd64", corev1.ConditionTrue)
	kit.Eventually(t, 20*time.Second, "the new node told", func() error {
		if changes.Load() == before {
			return fmt.Errorf("no change told yet")
		}
		return nil
	})
}

func TestReducePod(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{
			"picchu.medium.engineering/app": "a", "picchu.medium.engineering/tag": "v1", "pod-template-hash": "x",
		}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{
			NodeName: "n",
			InitContainers: []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"),
			}}}},
			Containers: []corev1.Container{
				{Name: "a", Image: "a", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}},
				{Name: "b", Image: "b", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
	got, err := nodes.ReducePod(p)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{
			"picchu.medium.engineering/app": "a", "picchu.medium.engineering/tag": "v1",
		}},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "requests", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			// The init container's 2 CPUs outweigh the 750m of the others.
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reduced\n%+v\nwant\n%+v", got, want)
	}
}

// TestRoomOrPlatformMoved: of two reduced nodes, a heartbeat's (only the
// resource version moved) tells nothing; a change of readiness,
// schedulability, taints, allocatable or labels does.
func TestRoomOrPlatformMoved(t *testing.T) {
	reduced := func(change func(*corev1.Node)) any {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1", Labels: map[string]string{platform.LabelArch: "amd64"}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
			},
		}
		if change != nil {
			change(n)
		}
		out, err := nodes.Reduce(n)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := reduced(nil)
	for _, tc := range []struct {
		name   string
		change func(*corev1.Node)
		want   bool
	}{
		{"a heartbeat", func(n *corev1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Now().Add(time.Minute))
		}, false},
		{"not ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"cordoned", func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
		{"tainted", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }, true},
		{"resized", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("8") }, true},
		{"relabelled", func(n *corev1.Node) { n.Labels[platform.LabelArch] = "arm64" }, true},
	} {
		if got := nodes.RoomOrPlatformMoved(before, reduced(tc.change)); got != tc.want {
			t.Errorf("%s: moved %v, want %v", tc.name, got, tc.want)
		}
	}
}

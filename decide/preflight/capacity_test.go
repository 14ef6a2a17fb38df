package preflight

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, cpu, memory string, pods int64, mutate ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/arch": "amd64"}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
				corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, m := range mutate {
		m(&n)
	}
	return n
}

func pod(cpu, memory string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	requests := corev1.ResourceList{}
	if cpu != "" {
		requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests}}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func boundTo(nodeName string, p *corev1.Pod) corev1.Pod {
	out := *p.DeepCopy()
	out.Spec.NodeName = nodeName
	out.Status.Phase = corev1.PodRunning
	return out
}

func TestRoomFor(t *testing.T) {
	cordoned := func(n *corev1.Node) { n.Spec.Unschedulable = true }
	notReady := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
	arm := func(n *corev1.Node) { n.Labels["kubernetes.io/arch"] = "arm64" }
	tainted := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	}
	preferNot := func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}}
	}
	amd64Only := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "amd64"} }
	arm64Affinity := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}},
			}}},
		}}}
	}
	tolerates := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	}
	gpu := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
	}
	withInit := func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("3"),
		}}}}
	}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		nodes  []corev1.Node
		bound  []corev1.Pod
		pods   int64
		usable int
	}{
		{name: "empty nodes, cpu bound", pod: pod("500m", "128Mi"), nodes: []corev1.Node{node("a", "2", "8Gi", 110), node("b", "1", "8Gi", 110)}, pods: 6, usable: 2},
		{name: "memory bound", pod: pod("100m", "3Gi"), nodes: []corev1.Node{node("a", "4", "8Gi", 110)}, pods: 2, usable: 1},
		{name: "pod slots bound", pod: pod("", ""), nodes: []corev1.Node{node("a", "4", "8Gi", 3)}, pods: 3, usable: 1},
		{name: "room left by bound pods, node by node (no sum across nodes)",
			pod:   pod("600m", ""),
			nodes: []corev1.Node{node("a", "1", "8Gi", 110), node("b", "1", "8Gi", 110)},
			bound: []corev1.Pod{boundTo("a", pod("500m", "")), boundTo("b", pod("500m", ""))},
			// 500m free on each: 1000m in all, but no node fits 600m.
			pods: 0, usable: 2},
		{name: "ended pods take no room", pod: pod("1", ""), nodes: []corev1.Node{node("a", "1", "8Gi", 110)},
			bound: []corev1.Pod{func() corev1.Pod { p := boundTo("a", pod("1", "")); p.Status.Phase = corev1.PodSucceeded; return p }()},
			pods:  1, usable: 1},
		{name: "unbound pods take no room", pod: pod("1", ""), nodes: []corev1.Node{node("a", "1", "8Gi", 110)},
			bound: []corev1.Pod{*pod("1", "")}, pods: 1, usable: 1},
		{name: "cordoned and not ready nodes are left out", pod: pod("1", ""),
			nodes: []corev1.Node{node("a", "4", "8Gi", 110, cordoned), node("b", "4", "8Gi", 110, notReady), node("c", "2", "8Gi", 110)}, pods: 2, usable: 1},
		{name: "node selector", pod: pod("1", "", amd64Only),
			nodes: []corev1.Node{node("a", "4", "8Gi", 110, arm), node("b", "2", "8Gi", 110)}, pods: 2, usable: 1},
		{name: "required affinity", pod: pod("1", "", arm64Affinity),
			nodes: []corev1.Node{node("a", "4", "8Gi", 110, arm), node("b", "2", "8Gi", 110)}, pods: 4, usable: 1},
		{name: "untolerated taint", pod: pod("1", ""),
			nodes: []corev1.Node{node("a", "4", "8Gi", 110, tainted), node("b", "2", "8Gi", 110, preferNot)}, pods: 2, usable: 1},
		{name: "tolerated taint", pod: pod("1", "", tolerates),
			nodes: []corev1.Node{node("a", "4", "8Gi", 110, tainted)}, pods: 4, usable: 1},
		{name: "a resource no node offers", pod: pod("1", "", gpu), nodes: []corev1.Node{node("a", "4", "8Gi", 110)}, pods: 0, usable: 1},
		{name: "init containers count as the scheduler counts them", pod: pod("1", "", withInit),
			nodes: []corev1.Node{node("a", "4", "8Gi", 110)}, pods: 1, usable: 1},
		{name: "no nodes", pod: pod("1", ""), pods: 0, usable: 0},
		{name: "nothing asked and no pod limit is no bound", pod: pod("", ""),
			nodes: []corev1.Node{func() corev1.Node {
				n := node("a", "1", "1Gi", 1)
				delete(n.Status.Allocatable, corev1.ResourcePods)
				return n
			}()}, pods: math.MaxInt32, usable: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RoomFor(tt.pod, tt.nodes, tt.bound)
			if got.Pods != tt.pods || got.Usable != tt.usable || got.Nodes != len(tt.nodes) {
				t.Errorf("RoomFor = %d pods on %d/%d usable nodes, want %d on %d/%d", got.Pods, got.Usable, got.Nodes, tt.pods, tt.usable, len(tt.nodes))
			}
		})
	}
}

func TestRoomFor_Free(t *testing.T) {
	nodes := []corev1.Node{node("a", "2", "4Gi", 10), node("b", "1", "2Gi", 10)}
	bound := []corev1.Pod{boundTo("a", pod("1500m", "1Gi")), boundTo("b", pod("250m", "512Mi"))}
	room := RoomFor(pod("500m", "256Mi"), nodes, bound)
	if got, want := describe(room.Free), "cpu 1250m, memory 4608Mi, pods 18"; got != want {
		t.Errorf("free %q, want %q", got, want)
	}
	if room.Pods != 2 {
		t.Errorf("room for %d pods, want 2 (1 on a, 1 on b)", room.Pods)
	}
}

func TestCheckCapacity(t *testing.T) {
	p := pod("500m", "256Mi")
	tests := []struct {
		name    string
		waiting int32
		room    Room
		want    []string // parts of the detail; nil for a pass
	}{
		{name: "nothing waits", waiting: 0, room: Room{}},
		{name: "enough room", waiting: 2, room: Room{Pods: 2, Usable: 1, Nodes: 1}},
		{name: "short", waiting: 3, room: Room{Pods: 1, Usable: 2, Nodes: 3, Free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("700m")}},
			want: []string{"capacity: 3 pods of v2 (each cpu 500m, memory 256Mi) find no room", "the 2 of 3 nodes that can run them have room for 1 (free cpu 700m)"}},
		{name: "one pod", waiting: 1, room: Room{Usable: 1, Nodes: 1},
			want: []string{"1 pod of v2 (each cpu 500m, memory 256Mi) finds no room"}},
		{name: "no usable node", waiting: 1, room: Room{Nodes: 4},
			want: []string{"none of the 4 nodes can run them"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := CheckCapacity("v2", tt.waiting, p, tt.room)
			if tt.want == nil {
				if f != nil {
					t.Fatalf("CheckCapacity = %v, want a pass", f)
				}
				return
			}
			if f == nil {
				t.Fatal("CheckCapacity passed, want a failure")
			}
			if f.Check != Capacity {
				t.Errorf("check %q, want %q", f.Check, Capacity)
			}
			for _, part := range tt.want {
				if !strings.Contains(f.Error(), part) {
					t.Errorf("%q does not say %q", f.Error(), part)
				}
			}
		})
	}
}

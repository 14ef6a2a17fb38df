package preflight

import (
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	schedulinghelper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Room is how many more pods of a build the nodes of a cluster can hold,
// as the scheduler would count them.
type Room struct {
	// Pods is how many more pods like the build's fit, node by node.
	Pods int64
	// Usable is the number of nodes that can run them: ready, schedulable,
	// matching the pod's node selector and required affinity, with no
	// taint it does not tolerate. Nodes is the number of nodes.
	Usable, Nodes int
	// Free is what the usable nodes have left of the resources the pod
	// requests, and of pods: allocatable minus the requests of the pods
	// bound to them that have not ended.
	Free corev1.ResourceList
}

// PodRequests is what one pod asks of a node, as the scheduler counts it
// (its containers, init containers and overhead), plus one pod.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	out := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	out[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return out
}

// RoomFor counts the room nodes have for pods like pod, bound being the
// pods of the cluster bound to a node (those that ended take no room).
func RoomFor(pod *corev1.Pod, nodes []corev1.Node, bound []corev1.Pod) Room {
	want := PodRequests(pod)
	used := map[string]corev1.ResourceList{}
	for i := range bound {
		p := &bound[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		add(used, p.Spec.NodeName, PodRequests(p))
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	room := Room{Nodes: len(nodes), Free: corev1.ResourceList{}}
	free := map[corev1.ResourceName]int64{}
	for i := range nodes {
		n := &nodes[i]
		if !usable(n, pod, affinity) {
			continue
		}
		room.Usable++
		fits := int64(-1)
		for name, q := range want {
			alloc, ok := n.Status.Allocatable[name]
			if !ok {
				if name == corev1.ResourcePods {
					continue // a node that states no pod limit has none
				}
				if q.IsZero() {
					continue
				}
				fits = 0
				continue
			}
			left := alloc.MilliValue()
			if u, ok := used[n.Name][name]; ok {
				left -= u.MilliValue()
			}
			left = max(left, 0)
			free[name] += left
			if q.MilliValue() <= 0 {
				continue
			}
			if f := left / q.MilliValue(); fits < 0 || f < fits {
				fits = f
			}
		}
		if fits < 0 {
			// Nothing it asks for is counted on the node.
			fits = math.MaxInt32
		}
		room.Pods += fits
	}
	for name, v := range free {
		room.Free[name] = *resource.NewMilliQuantity(v, format(name))
	}
	return room
}

// CheckCapacity says whether room holds the waiting pods of build tag, each
// asking for PodRequests(pod): nil when it does, or when none waits.
func CheckCapacity(tag string, waiting int32, pod *corev1.Pod, room Room) *Failure {
	if waiting <= 0 || room.Pods >= int64(waiting) {
		return nil
	}
	each := PodRequests(pod)
	delete(each, corev1.ResourcePods)
	asks := ""
	if len(each) > 0 {
		asks = fmt.Sprintf(" (each %s)", describe(each))
	}
	head := fmt.Sprintf("%d %s of %s%s %s no room", waiting, plural(int64(waiting), "pod"), tag, asks, verb(int64(waiting), "finds", "find"))
	if room.Usable == 0 {
		return &Failure{Check: Capacity, Detail: fmt.Sprintf(
			"%s: none of the %d nodes can run them (ready, schedulable, matching their node selector, affinity and tolerations)", head, room.Nodes)}
	}
	return &Failure{Check: Capacity, Detail: fmt.Sprintf("%s: the %d of %d nodes that can run them have room for %d (free %s)",
		head, room.Usable, room.Nodes, room.Pods, describe(room.Free))}
}

// usable says node n can take pods like pod: ready, schedulable, matching
// its required node affinity and node selector, and tainted only with what
// it tolerates.
func usable(n *corev1.Node, pod *corev1.Pod, affinity nodeaffinity.RequiredNodeAffinity) bool {
	if n.Spec.Unschedulable || !ready(n) {
		return false
	}
	if ok, err := affinity.Match(n); err != nil || !ok {
		return false
	}
	_, untolerated := schedulinghelper.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	return !untolerated
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func add(used map[string]corev1.ResourceList, node string, rl corev1.ResourceList) {
	sum, ok := used[node]
	if !ok {
		sum = corev1.ResourceList{}
		used[node] = sum
	}
	for name, q := range rl {
		v := sum[name]
		v.Add(q)
		sum[name] = v
	}
}

// format is how quantities of resource name print: memory-like in binary
// units, the rest in decimal ones.
func format(name corev1.ResourceName) resource.Format {
	switch name {
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
		return resource.BinarySI
	}
	if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
		return resource.BinarySI
	}
	return resource.DecimalSI
}

// describe prints a resource list as "cpu 500m, memory 256Mi, pods 3":
// cpu and memory first, pods last, the rest by name; memory-like amounts
// rounded down to the mebibyte.
func describe(rl corev1.ResourceList) string {
	names := make([]string, 0, len(rl))
	for name := range rl {
		names = append(names, string(name))
	}
	rank := func(n string) int {
		switch corev1.ResourceName(n) {
		case corev1.ResourceCPU:
			return 0
		case corev1.ResourceMemory:
			return 1
		case corev1.ResourcePods:
			return 3
		}
		return 2
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		q := rl[corev1.ResourceName(n)]
		if format(corev1.ResourceName(n)) == resource.BinarySI && q.Value() >= 1<<20 {
			q = *resource.NewQuantity(q.Value()/(1<<20)*(1<<20), resource.BinarySI)
		}
		parts[i] = n + " " + q.String()
	}
	return strings.Join(parts, ", ")
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func verb(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package fleet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/kit"
)

const (
	// KwokNodeAnnotation, with the value KwokNodeValue, marks the fake
	// nodes kwokctl makes (`kwokctl scale node`). The kwok controller of a
	// binary-runtime cluster, as the fleet's are, manages every node
	// (kwokctl runs it with --manage-all-nodes=true: it makes a node Ready,
	// keeps its heartbeat and runs the pods bound to it); kwokctl's other
	// runtimes have it manage only the nodes with this annotation, which
	// AddNode's nodes carry too.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	KwokNodeValue      = "fake"

	// addedNodeAnnotation marks the nodes AddNode created: they are never
	// the template of another.
	addedNodeAnnotation = "picchu.medium.engineering/fleet-added-node"
	// kwokctlScaleLabel marks the nodes of `kwokctl scale node`.
	kwokctlScaleLabel = "kwok.x-k8s.io/kwokctl-scale"
	// betaLabelOS and betaLabelArch are the deprecated twins of
	// kubernetes.io/os and kubernetes.io/arch that kwokctl's nodes carry.
	betaLabelOS   = "beta.kubernetes.io/os"
	betaLabelArch = "beta.kubernetes.io/arch"
)

// AddNode adds one more fake node, name, to the cluster, and waits until it
// is Ready and schedulable (the controller manager has lifted its
// not-ready taint). It is a copy of the cluster's own fake nodes (those of
// `kwokctl scale node`): their labels (but kwokctl's, so that scaling the
// cluster's nodes again leaves it be), with kubernetes.io/hostname its name
// and labels set over them (kubernetes.io/os and kubernetes.io/arch also
// set the node info and the beta.kubernetes.io twins); their annotations,
// kwok's included, so that kwok manages it; their taints; and their
// capacity, with the resources allocatable names replacing theirs
// (allocatable nil: as theirs), both as its capacity and as its
// allocatable. A cluster with no such node gets one as kwokctl makes them
// (linux/amd64, 32 CPUs, 256Gi, 110 pods). DeleteNode removes it.
func (c *Cluster) AddNode(ctx context.Context, name string, labels map[string]string, allocatable corev1.ResourceList) error {
	tmpl, err := c.nodeTemplate(ctx)
	if err != nil {
		return fmt.Errorf("cluster %s: adding node %s: %w", c.Name, name, err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       corev1.NodeSpec{},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{},
			NodeInfo: tmpl.Status.NodeInfo,
		},
	}
	maps.Copy(node.Labels, tmpl.Labels)
	// Not one of `kwokctl scale node`'s replicas, which it counts by this
	// label: scaling again would delete it, or keep it for one of its own.
	delete(node.Labels, kwokctlScaleLabel)
	node.Labels[corev1.LabelHostname] = name
	maps.Copy(node.Labels, labels)
	for label, beta := range map[string]string{corev1.LabelOSStable: betaLabelOS, corev1.LabelArchStable: betaLabelArch} {
		v, set := labels[label]
		if !set {
			continue
		}
		if _, ok := node.Labels[beta]; ok {
			if _, own := labels[beta]; !own {
				node.Labels[beta] = v
			}
		}
		if label == corev1.LabelOSStable {
			node.Status.NodeInfo.OperatingSystem = v
		} else {
			node.Status.NodeInfo.Architecture = v
		}
	}
	// The template's annotations, its name in them made this node's (the
	// metrics path of kwokctl's nodes names the node).
	for k, v := range tmpl.Annotations {
		node.Annotations[k] = strings.ReplaceAll(v, tmpl.Name, name)
	}
	node.Annotations[KwokNodeAnnotation] = KwokNodeValue
	node.Annotations[addedNodeAnnotation] = "true"
	// The taints the template was given, not those the node controllers
	// put on and lift (node.kubernetes.io/not-ready and the like).
	for _, t := range tmpl.Spec.Taints {
		if !strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			node.Spec.Taints = append(node.Spec.Taints, *t.DeepCopy())
		}
	}
	// Pod IPs of its own, as kwokctl's nodes each have (kwok gives a node
	// without one addresses from a range its other nodes' pods use).
	if node.Spec.PodCIDR, err = c.nextPodCIDR(ctx); err != nil {
		return fmt.Errorf("cluster %s: adding node %s: %w", c.Name, name, err)
	}
	base := tmpl.Status.Capacity
	if len(tmpl.Status.Allocatable) > 0 {
		base = tmpl.Status.Allocatable
	}
	for k, q := range base {
		node.Status.Capacity[k] = q.DeepCopy()
	}
	for k, q := range allocatable {
		node.Status.Capacity[k] = q.DeepCopy()
	}
	node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	node.Status.Phase = tmpl.Status.Phase
	if err := c.Client.Create(ctx, node); err != nil {
		return fmt.Errorf("cluster %s: adding node %s: %w", c.Name, name, err)
	}
	return kit.Poll(ctx, pollInterval, readyTimeout, fmt.Sprintf("node %s of %s Ready", name, c.Name), func(ctx context.Context) error {
		n := &corev1.Node{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		return schedulable(n)
	})
}

// schedulable says why pods cannot be placed on n yet, if they cannot: it
// is not Ready, is cordoned, or still has a taint the node controllers lift.
func schedulable(n *corev1.Node) error {
	ready := slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
	switch {
	case !ready:
		return errors.New("not Ready")
	case n.Spec.Unschedulable:
		return errors.New("unschedulable")
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return fmt.Errorf("tainted %s", t.Key)
		}
	}
	return nil
}

// nodeTemplate is the first, by name, of the cluster's fake nodes that
// AddNode did not add, or a node as kwokctl makes them when there is none.
func (c *Cluster) nodeTemplate(ctx context.Context) (*corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Annotations[KwokNodeAnnotation] == KwokNodeValue && n.Annotations[addedNodeAnnotation] == "" {
			return n, nil
		}
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{
				"type": "kwok", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				betaLabelOS: "linux", betaLabelArch: "amd64",
			},
			Annotations: map[string]string{KwokNodeAnnotation: KwokNodeValue},
		},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64"},
		},
	}, nil
}

// nextPodCIDR is the block of pod IPs after the last of the cluster's
// nodes' (10.0.1.0/24 after 10.0.0.0/24, as kwokctl numbers them), or ""
// when no node has an IPv4 one.
func (c *Cluster) nextPodCIDR(ctx context.Context) (string, error) {
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes); err != nil {
		return "", fmt.Errorf("listing nodes: %w", err)
	}
	var last netip.Prefix
	for _, n := range nodes.Items {
		p, err := netip.ParsePrefix(n.Spec.PodCIDR)
		if err != nil || !p.Addr().Is4() {
			continue
		}
		p = p.Masked()
		if !last.IsValid() || last.Addr().Less(p.Addr()) {
			last = p
		}
	}
	if !last.IsValid() {
		return "", nil
	}
	a := last.Addr().As4()
	next := binary.BigEndian.Uint32(a[:]) + 1<<(32-last.Bits())
	binary.BigEndian.PutUint32(a[:], next)
	return netip.PrefixFrom(netip.AddrFrom4(a), last.Bits()).String(), nil
}

// DeleteNode deletes the node name of the cluster, then the pods bound to
// it (at once, as the pod garbage collector would only some time after:
// with no node, kwok no longer finishes their deletion), and waits until
// the node is gone. Their controllers make them again on other nodes. A
// node that does not exist is not an error.
func (c *Cluster) DeleteNode(ctx context.Context, name string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("cluster %s: deleting node %s: %w", c.Name, name, err)
	}
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.MatchingFields{"spec.nodeName": name}); err != nil {
		return fmt.Errorf("cluster %s: listing the pods of node %s: %w", c.Name, name, err)
	}
	for i := range pods.Items {
		if err := c.Client.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("cluster %s: deleting pod %s/%s of node %s: %w", c.Name, pods.Items[i].Namespace, pods.Items[i].Name, name, err)
		}
	}
	return kit.Poll(ctx, pollInterval, readyTimeout, fmt.Sprintf("node %s of %s gone", name, c.Name), func(ctx context.Context) error {
		err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("still there")
	})
}

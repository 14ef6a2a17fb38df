package platform

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	amd64   = Platform{OS: "linux", Architecture: "amd64"}
	arm64   = Platform{OS: "linux", Architecture: "arm64"}
	arm64v8 = Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	winAMD  = Platform{OS: "windows", Architecture: "amd64"}
)

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		image    []Platform
		nodes    []Platform
		want     []corev1.NodeSelectorRequirement
		runnable bool
		message  string
	}{
		{"unknown image", nil, []Platform{amd64}, nil, true, ""},
		{"multi-arch on amd64", []Platform{arm64v8, amd64}, []Platform{amd64},
			[]corev1.NodeSelectorRequirement{in(LabelOS, "linux"), in(LabelArch, "amd64", "arm64")}, true,
			"image offers linux/amd64, linux/arm64/v8; the cluster's ready nodes run linux/amd64"},
		{"arm64 image, variant ignored on nodes", []Platform{arm64v8}, []Platform{amd64, arm64},
			[]corev1.NodeSelectorRequirement{in(LabelOS, "linux"), in(LabelArch, "arm64")}, true,
			"image offers linux/arm64/v8; the cluster's ready nodes run linux/amd64, linux/arm64"},
		{"arm64 image on amd64 only", []Platform{arm64}, []Platform{amd64},
			[]corev1.NodeSelectorRequirement{in(LabelOS, "linux"), in(LabelArch, "arm64")}, false,
			"image offers linux/arm64, but the cluster's ready nodes run only linux/amd64"},
		{"no ready node", []Platform{amd64}, nil,
			[]corev1.NodeSelectorRequirement{in(LabelOS, "linux"), in(LabelArch, "amd64")}, false,
			"image offers linux/amd64, but the cluster has no ready node"},
		{"os and arch must match together", []Platform{winAMD, arm64}, []Platform{{OS: "linux", Architecture: "amd64"}},
			[]corev1.NodeSelectorRequirement{in(LabelOS, "linux", "windows"), in(LabelArch, "amd64", "arm64")}, false,
			"image offers linux/arm64, windows/amd64, but the cluster's ready nodes run only linux/amd64"},
		{"repeats", []Platform{amd64, amd64}, []Platform{amd64},
			[]corev1.NodeSelectorRequirement{in(LabelOS, "linux"), in(LabelArch, "amd64")}, true,
			"image offers linux/amd64; the cluster's ready nodes run linux/amd64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Place(tc.image, tc.nodes)
			if !reflect.DeepEqual(got.Requirements, tc.want) {
				t.Errorf("requirements %+v, want %+v", got.Requirements, tc.want)
			}
			if got.Runnable != tc.runnable || got.Message != tc.message {
				t.Errorf("runnable %v %q, want %v %q", got.Runnable, got.Message, tc.runnable, tc.message)
			}
		})
	}
}

func node(name string, labels map[string]string, info corev1.NodeSystemInfo, ready corev1.ConditionStatus, unschedulable bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Spec.Unschedulable = unschedulable
	n.Status.NodeInfo = info
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: ready}}
	}
	return n
}

func TestOfNodes(t *testing.T) {
	labels := func(os, arch string) map[string]string { return map[string]string{LabelOS: os, LabelArch: arch} }
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		want  []Platform
	}{
		{"none", nil, nil},
		{"ready nodes, sorted without repeats", []corev1.Node{
			node("a", labels("linux", "arm64"), corev1.NodeSystemInfo{}, corev1.ConditionTrue, false),
			node("b", labels("linux", "amd64"), corev1.NodeSystemInfo{}, corev1.ConditionTrue, false),
			node("c", labels("linux", "amd64"), corev1.NodeSystemInfo{}, corev1.ConditionTrue, false),
		}, []Platform{amd64, arm64}},
		{"not ready, unknown, unschedulable are left out", []corev1.Node{
			node("a", labels("linux", "arm64"), corev1.NodeSystemInfo{}, corev1.ConditionFalse, false),
			node("b", labels("linux", "arm64"), corev1.NodeSystemInfo{}, corev1.ConditionUnknown, false),
			node("c", labels("linux", "arm64"), corev1.NodeSystemInfo{}, "", false),
			node("d", labels("linux", "arm64"), corev1.NodeSystemInfo{}, corev1.ConditionTrue, true),
			node("e", labels("linux", "amd64"), corev1.NodeSystemInfo{}, corev1.ConditionTrue, false),
		}, []Platform{amd64}},
		{"node info without labels", []corev1.Node{
			node("a", nil, corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64"}, corev1.ConditionTrue, false),
			node("b", nil, corev1.NodeSystemInfo{}, corev1.ConditionTrue, false),
		}, []Platform{arm64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OfNodes(tc.nodes); !slices.Equal(got, tc.want) {
				t.Errorf("platforms %v, want %v", got, tc.want)
			}
		})
	}
}

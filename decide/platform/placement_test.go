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

func TestWithRequirements(t *testing.T) {
	reqs := Requirements([]Platform{amd64, arm64})
	zone := in("topology.kubernetes.io/zone", "a")
	gpu := in("gpu", "yes")
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{gpu}}}}
	podAffinity := &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}}
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	term := func(rs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: rs}
	}
	for _, tc := range []struct {
		name string
		aff  *corev1.Affinity
		reqs []corev1.NodeSelectorRequirement
		want *corev1.Affinity
	}{
		{"no requirement, no affinity", nil, nil, nil},
		{"no requirement keeps the affinity", required(term(zone)), nil, required(term(zone))},
		{"no affinity", nil, reqs, required(term(reqs...))},
		{"empty affinity", &corev1.Affinity{}, reqs, required(term(reqs...))},
		{"and-ed into every term", required(term(zone), term(gpu)), reqs,
			required(term(zone, reqs[0], reqs[1]), term(gpu, reqs[0], reqs[1]))},
		{"a fields-only term", required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{in("metadata.name", "n1")}}), reqs,
			required(corev1.NodeSelectorTerm{MatchExpressions: reqs, MatchFields: []corev1.NodeSelectorRequirement{in("metadata.name", "n1")}})},
		{"preferred and pod affinity kept",
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}, PodAffinity: podAffinity}, reqs,
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(reqs...)}},
				PreferredDuringSchedulingIgnoredDuringExecution: preferred,
			}, PodAffinity: podAffinity}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *corev1.Affinity
			if tc.aff != nil {
				before = tc.aff.DeepCopy()
			}
			got := WithRequirements(tc.aff, tc.reqs)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("affinity\n%+v\nwant\n%+v", got, tc.want)
			}
			if !reflect.DeepEqual(tc.aff, before) {
				t.Error("the given affinity was changed")
			}
		})
	}
}

func TestRecorded(t *testing.T) {
	zone := in("topology.kubernetes.io/zone", "a")
	gpu := in("gpu", "yes")
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	term := func(rs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: rs}
	}
	written := func(own *corev1.Affinity, ps ...Platform) *corev1.Affinity {
		return WithRequirements(own, Requirements(ps))
	}
	for _, tc := range []struct {
		name      string
		own, live *corev1.Affinity
		want      []Platform
	}{
		{"none written", nil, nil, nil},
		{"the user's own only", required(term(zone)), required(term(zone)), nil},
		{"no affinity of the user's", nil, written(nil, amd64, arm64), []Platform{amd64, arm64}},
		{"the variant is not written", nil, written(nil, arm64v8), []Platform{arm64}},
		{"every os with every architecture", nil, written(nil, amd64, Platform{OS: "windows", Architecture: "arm64"}),
			[]Platform{amd64, arm64, {OS: "windows", Architecture: "amd64"}, {OS: "windows", Architecture: "arm64"}}},
		{"after the user's terms", required(term(zone), term(gpu)), written(required(term(zone), term(gpu)), arm64), []Platform{arm64}},
		{"the user's affinity changed since", required(term(gpu)), written(required(term(zone)), arm64), nil},
		{"a user's own arch requirement", required(term(in(LabelOS, "linux"), in(LabelArch, "amd64"))),
			required(term(in(LabelOS, "linux"), in(LabelArch, "amd64"))), nil},
		{"not in every term", required(term(zone), term(gpu)), required(term(zone, in(LabelOS, "linux"), in(LabelArch, "arm64")), term(gpu)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Recorded(tc.own, tc.live); !slices.Equal(got, tc.want) {
				t.Errorf("recorded %v, want %v", got, tc.want)
			}
		})
	}
}

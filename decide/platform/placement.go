package platform

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// The well-known node labels of a node's os and architecture.
const (
	LabelOS   = corev1.LabelOSStable
	LabelArch = corev1.LabelArchStable
)

// OfNodes is the platforms (os and architecture, no variant) of the nodes
// that are ready and schedulable, sorted. A node's labels name its
// platform, or else its status's node info.
func OfNodes(nodes []corev1.Node) []Platform {
	var ps []Platform
	for _, n := range nodes {
		if n.Spec.Unschedulable || !ready(n) {
			continue
		}
		p := Platform{OS: n.Labels[LabelOS], Architecture: n.Labels[LabelArch]}
		if p.OS == "" {
			p.OS = n.Status.NodeInfo.OperatingSystem
		}
		if p.Architecture == "" {
			p.Architecture = n.Status.NodeInfo.Architecture
		}
		if p.OS != "" && p.Architecture != "" {
			ps = append(ps, p)
		}
	}
	return Sorted(ps)
}

func ready(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Placement is where a cluster can run an image.
type Placement struct {
	// Requirements keep the image's pods on nodes of its operating systems
	// and architectures: kubernetes.io/os In [...] and kubernetes.io/arch
	// In [...]. None when the image's platforms are not known. Node labels
	// carry no variant, and the two requirements admit every os with every
	// architecture: Runnable is the exact test.
	Requirements []corev1.NodeSelectorRequirement
	// Runnable says a ready node runs one of the image's platforms (or
	// that the image's platforms are not known).
	Runnable bool
	// Message names the image's platforms and the nodes', when both are known.
	Message string
}

// Place is where a cluster whose ready nodes run nodes (OfNodes) can run
// an image that offers image.
func Place(image, nodes []Platform) Placement {
	if len(image) == 0 {
		return Placement{Runnable: true}
	}
	image = Sorted(image)
	pl := Placement{Requirements: Requirements(image)}
	for _, n := range nodes {
		if slices.ContainsFunc(image, func(p Platform) bool { return p.OS == n.OS && p.Architecture == n.Architecture }) {
			pl.Runnable = true
			break
		}
	}
	switch {
	case len(nodes) == 0:
		pl.Message = fmt.Sprintf("image offers %s, but the cluster has no ready node", join(image))
	case pl.Runnable:
		pl.Message = fmt.Sprintf("image offers %s; the cluster's ready nodes run %s", join(image), join(nodes))
	default:
		pl.Message = fmt.Sprintf("image offers %s, but the cluster's ready nodes run only %s", join(image), join(nodes))
	}
	return pl
}

// Requirements keep pods on nodes of the platforms' operating systems and
// architectures: kubernetes.io/os In [...] and kubernetes.io/arch In
// [...], sorted. None for no platform.
func Requirements(ps []Platform) []corev1.NodeSelectorRequirement {
	if len(ps) == 0 {
		return nil
	}
	var oses, arches []string
	for _, p := range ps {
		oses = append(oses, p.OS)
		arches = append(arches, p.Architecture)
	}
	slices.Sort(oses)
	slices.Sort(arches)
	return []corev1.NodeSelectorRequirement{
		{Key: LabelOS, Operator: corev1.NodeSelectorOpIn, Values: slices.Compact(oses)},
		{Key: LabelArch, Operator: corev1.NodeSelectorOpIn, Values: slices.Compact(arches)},
	}
}

// WithRequirements is a copy of the affinity whose required node affinity
// also asks for the requirements: they are AND-ed into every one of its
// node selector terms (which are OR-ed), so the affinity the user asked
// for is kept, or make its one term when there is none. The affinity is
// returned as it is when there is no requirement.
func WithRequirements(aff *corev1.Affinity, reqs []corev1.NodeSelectorRequirement) *corev1.Affinity {
	if len(reqs) == 0 {
		return aff
	}
	out := aff.DeepCopy()
	if out == nil {
		out = &corev1.Affinity{}
	}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := out.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	sel := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(sel.NodeSelectorTerms) == 0 {
		sel.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range sel.NodeSelectorTerms {
		for _, r := range reqs {
			sel.NodeSelectorTerms[i].MatchExpressions = append(sel.NodeSelectorTerms[i].MatchExpressions, *r.DeepCopy())
		}
	}
	return out
}

// Recorded is the platforms whose requirements WithRequirements added to
// own to make live, a pod template's affinity written before: every os it
// requires with every architecture (which Requirements turns back into
// the same requirements). None when live's required node affinity is not
// own's with such requirements added.
func Recorded(own, live *corev1.Affinity) []Platform {
	sel := required(live)
	if sel == nil || len(sel.NodeSelectorTerms) == 0 {
		return nil
	}
	added := 0
	if own := required(own); own != nil && len(own.NodeSelectorTerms) > 0 {
		added = len(own.NodeSelectorTerms[0].MatchExpressions)
	}
	exprs := sel.NodeSelectorTerms[0].MatchExpressions
	if len(exprs) != added+2 {
		return nil
	}
	oses, arches := exprs[added], exprs[added+1]
	if oses.Key != LabelOS || oses.Operator != corev1.NodeSelectorOpIn || arches.Key != LabelArch || arches.Operator != corev1.NodeSelectorOpIn {
		return nil
	}
	var ps []Platform
	for _, os := range oses.Values {
		for _, arch := range arches.Values {
			ps = append(ps, Platform{OS: os, Architecture: arch})
		}
	}
	ps = Sorted(ps)
	if len(ps) == 0 || !equality.Semantic.DeepEqual(required(WithRequirements(own, Requirements(ps))), sel) {
		return nil
	}
	return ps
}

// required is the affinity's required node selector, or nil.
func required(a *corev1.Affinity) *corev1.NodeSelector {
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

func join(ps []Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

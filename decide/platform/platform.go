// Package platform holds the pure decisions about where an image can run:
// the platforms an image offers against the platforms of a cluster's
// ready nodes, and the node affinity that keeps its pods on those.
package platform

import (
	"cmp"
	"slices"
)

// Platform is an operating system and CPU architecture (and variant, such
// as v8 for arm64) an image is built for or a node runs.
type Platform struct {
	OS, Architecture, Variant string
}

// String is os/architecture[/variant], as docker writes it.
func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// Sorted is the platforms sorted and without repeats.
func Sorted(ps []Platform) []Platform {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b Platform) int {
		return cmp.Or(cmp.Compare(a.OS, b.OS), cmp.Compare(a.Architecture, b.Architecture), cmp.Compare(a.Variant, b.Variant))
	})
	return slices.Compact(out)
}

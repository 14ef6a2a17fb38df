package v1alpha1

import (
	"slices"
	"strings"
	"testing"
)

func rev(app string, targets ...string) Revision {
	r := Revision{Spec: RevisionSpec{App: RevisionApp{Name: app}}}
	r.Name = app + "-" + strings.Join(targets, "-")
	for _, t := range targets {
		r.Spec.Targets = append(r.Spec.Targets, RevisionTarget{Name: t})
	}
	return r
}

func TestCollisions(t *testing.T) {
	others := []Revision{rev("a-b", "c"), rev("shop", "production", "staging"), rev("a", "b-c")}
	for _, tc := range []struct {
		name string
		rev  Revision
		want []Collision
	}{
		{"another app's name", rev("a", "b-c", "d"), []Collision{{Index: 0, Name: "a-b-c", App: "a-b", Target: "c"}}},
		{"the same app never collides", rev("shop", "production"), nil},
		{"no dash, no collision", rev("blog", "production"), nil},
		{"second target collides", rev("a", "z", "b-c"), []Collision{{Index: 1, Name: "a-b-c", App: "a-b", Target: "c"}}},
		{"names that only look alike", rev("shop-prod", "uction"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rev
			got := Collisions(&r, others)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Collisions = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCollidingApps(t *testing.T) {
	got := collidingApps(&Revision{Spec: RevisionSpec{App: RevisionApp{Name: "a-b"}, Targets: []RevisionTarget{{Name: "c-d"}, {Name: "e"}}}})
	want := []string{"a", "a-b-c"}
	if !slices.Equal(got, want) {
		t.Errorf("collidingApps = %v, want %v", got, want)
	}
}

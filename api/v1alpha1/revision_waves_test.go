package v1alpha1

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestValidate_Waves: a wave's selector must parse, its name be unique
// and its bake not negative; each error names the field.
func TestValidate_Waves(t *testing.T) {
	east := metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}
	for _, tc := range []struct {
		name  string
		waves []ReleaseWave
		want  string // in the error; empty: valid
	}{
		{"two waves", []ReleaseWave{{Name: "east", Selector: east, Bake: &metav1.Duration{Duration: time.Minute}}, {Name: "rest"}}, ""},
		{"unnamed waves", []ReleaseWave{{Selector: east}, {}}, ""},
		{"a bad selector", []ReleaseWave{{Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "region", Operator: "Near", Values: []string{"east"}}}}}, {}}, "spec.targets[0].release.waves[0].selector"},
		{"a name twice", []ReleaseWave{{Name: "east", Selector: east}, {Name: "east"}}, "spec.targets[0].release.waves[1].name"},
		{"a negative bake", []ReleaseWave{{Selector: east, Bake: &metav1.Duration{Duration: -time.Second}}, {}}, "spec.targets[0].release.waves[0].bake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Revision{Spec: RevisionSpec{Targets: []RevisionTarget{{Name: "production", Release: ReleaseInfo{Waves: tc.waves}}}}}
			_, err := r.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

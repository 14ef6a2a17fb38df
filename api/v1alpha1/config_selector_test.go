package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestConfigLabels(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sel     *metav1.LabelSelector
		matches map[string]string
		want    bool
		none    bool
	}{
		{name: "unset selects nothing", none: true},
		{name: "empty selects nothing", sel: &metav1.LabelSelector{}, none: true},
		{name: "labels", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"config": "echo"}}, matches: map[string]string{"config": "echo", "x": "y"}, want: true},
		{name: "other labels", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"config": "echo"}}, matches: map[string]string{"config": "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := (&RevisionTarget{ConfigSelector: tc.sel}).ConfigLabels()
			if err != nil {
				t.Fatal(err)
			}
			if (sel == nil) != tc.none {
				t.Fatalf("selector %v, want none: %v", sel, tc.none)
			}
			if sel != nil && sel.Matches(labels.Set(tc.matches)) != tc.want {
				t.Errorf("%v matches %v: %v, want %v", sel, tc.matches, !tc.want, tc.want)
			}
		})
	}
	bad := &RevisionTarget{ConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bad"}}}}
	if _, err := bad.ConfigLabels(); err == nil {
		t.Error("a bad configSelector parsed")
	}
}

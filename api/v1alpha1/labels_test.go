package v1alpha1

import "testing"

func TestIgnored(t *testing.T) {
	for _, c := range []struct {
		labels map[string]string
		want   bool
	}{
		{nil, false},
		{map[string]string{LabelApp: "shop"}, false},
		{map[string]string{LabelIgnore: "true"}, true},
		{map[string]string{LabelIgnore: ""}, true},
		{map[string]string{LabelIgnore: "false"}, true},
	} {
		if got := Ignored(c.labels); got != c.want {
			t.Errorf("Ignored(%v) = %v, want %v", c.labels, got, c.want)
		}
	}
}

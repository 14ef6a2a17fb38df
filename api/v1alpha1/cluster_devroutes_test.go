package v1alpha1

import (
	"strings"
	"testing"
)

func TestDevRouteHeader(t *testing.T) {
	for _, tc := range []struct {
		tmpl, want, err string
	}{
		{"", "x-dev-shop", ""},
		{"X-Dev-{{.App}}-{{.Target}}", "x-dev-shop-production", ""},
		{"dev-{{.Namespace}}-{{.Fleet}}", "dev-shop-production-prod", ""},
		{"{{.Nope}}", "", "spec.devRouteTagTemplate"},
		{"{{.App", "", "spec.devRouteTagTemplate"},
		{"x dev", "", "not an HTTP header name"},
		{"{{if false}}x{{end}}", "", "not an HTTP header name"},
	} {
		c := &Cluster{Spec: ClusterSpec{DevRouteTagTemplate: tc.tmpl}}
		got, err := c.DevRouteHeader("shop", "production", "prod")
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one saying %q", tc.tmpl, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
		if _, verr := c.Validate(); (verr != nil) != (tc.err != "") {
			t.Errorf("%q: Validate %v", tc.tmpl, verr)
		}
	}
}

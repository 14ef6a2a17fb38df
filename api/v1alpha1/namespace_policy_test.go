package v1alpha1

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestAppProtectedNamespaces(t *testing.T) {
	got := AppProtectedNamespaces([]string{"-monitoring", "team-*"}, []string{"picchu", "*", ""})
	for _, ns := range []string{"kube-system", "default", "istio-system", "cert-manager", "flux-system", "openshift-config", "team-x", "picchu"} {
		if _, ok := ProtectedNamespace(ns, got); !ok {
			t.Errorf("%s is not protected by %v", ns, got)
		}
	}
	for _, ns := range []string{"monitoring", "shop-production"} {
		if p, ok := ProtectedNamespace(ns, got); ok {
			t.Errorf("%s is protected by %q", ns, p)
		}
	}
	if slices.Contains(got, "*") || slices.Contains(got, "") {
		t.Errorf("%v protects every namespace", got)
	}
	secrets := SecretProtectedNamespaces([]string{"-monitoring", "team-*"})
	if !slices.Equal(secrets, append(slices.Clone(DefaultProtectedNamespaces), "team-*")) {
		t.Errorf("ClusterSecrets' protected namespaces: %v", secrets)
	}
}

func TestParseAppNamespacePolicy(t *testing.T) {
	p, err := ParseAppNamespacePolicy("team-a=team-a-*, team-a=shared-web,*={namespace}-*")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Patterns("team-a"); !slices.Equal(got, []string{"team-a-*", "shared-web"}) {
		t.Errorf("team-a's patterns: %v", got)
	}
	if got := p.Patterns("payments"); !slices.Equal(got, []string{"payments-*"}) {
		t.Errorf("payments' patterns: %v", got)
	}
	for _, bad := range []string{"team-a", "=x-*", "team-a=", "team-a=*", "Team=x", "team-a=x-{ns}", "team-a=x*y"} {
		if _, err := ParseAppNamespacePolicy(bad); err == nil || !strings.Contains(err.Error(), "DELIVERY=PATTERN") {
			t.Errorf("%q: %v, want refused", bad, err)
		}
	}
	if p, err := ParseAppNamespacePolicy(""); err != nil || len(p) != 0 {
		t.Errorf("an empty policy: %v, %v", p, err)
	}
}

func TestAppNamespacePolicy_Check(t *testing.T) {
	p := AppNamespacePolicy{"team-a": {"{namespace}-*"}}
	for _, tc := range []struct {
		delivery, app, target string
		ok                    bool
	}{
		{"team-a", "team-a-web", "production", true},
		{"team-a", "web", "production", false},
		{"team-b", "web", "production", true}, // no entry, no "*": free
	} {
		err := p.Check(tc.delivery, tc.app, tc.target)
		var refused *NamespaceNotAllowedError
		if (err == nil) != tc.ok || (err != nil && (!errors.As(err, &refused) || refused.Namespace != AppNamespace(tc.app, tc.target))) {
			t.Errorf("%s's %s in %s: %v", tc.delivery, tc.app, tc.target, err)
		}
	}
	if err := (AppNamespacePolicy)(nil).Check("team-a", "web", "production"); err != nil {
		t.Errorf("no policy refused: %v", err)
	}
}

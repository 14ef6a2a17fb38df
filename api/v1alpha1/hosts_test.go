package v1alpha1

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestHostRefused(t *testing.T) {
	info := IngressInfo{
		Gateway:        "istio-system/public",
		DefaultDomains: []string{"example.com", "Shared.Example.NET."},
		AllowedDomains: []string{"team-a.example.org"},
	}
	cases := map[string]string{ // host: "" when allowed, else a part of the reason
		"shop.example.com":              "",
		"example.com":                   "",
		"a.b.example.com":               "",
		"x.shared.example.net":          "",
		"team-a.example.org":            "",
		"api.team-a.example.org":        "",
		"*.team-a.example.org":          "",
		"*.api.team-a.example.org":      "",
		"*.example.com":                 `wildcard under default domain "example.com"`,
		"*.shop.example.com":            `wildcard under default domain "example.com"`,
		"vault.vault.svc.cluster.local": "under none of the ingress's domains",
		"evilexample.com":               "under none",
		"example.com.evil.net":          "under none",
		"team-b.example.org":            "under none",
		"*.example.org":                 "under none",
		"*":                             "under none",
		"":                              "under none",
	}
	for host, want := range cases {
		err := info.HostRefused(host)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q refused: %v", host, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want one saying %q", host, err, want)
		case want != "":
			var refused *HostNotAllowedError
			if !errors.As(err, &refused) || refused.Host != host {
				t.Errorf("%q: error %#v is no HostNotAllowedError naming the host", host, err)
			}
		}
	}
	if err := (&IngressInfo{}).HostRefused("shop.example.com"); err == nil || !strings.Contains(err.Error(), "defaultDomains: none; allowedDomains: none") {
		t.Errorf("an ingress with no domains: %v, want a refusal saying it has none", err)
	}
}

// FuzzHostRefused: a host is allowed only when it is, past an optional
// "*.", one of the domains or ends in "." and one of them; a wildcard only
// under allowedDomains.
func FuzzHostRefused(f *testing.F) {
	for _, seed := range [][3]string{
		{"shop.example.com", "example.com", ""},
		{"*.a.example.org", "", "a.example.org"},
		{"*.example.com", "example.com", ""},
		{"xexample.com", "example.com", "example.com"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, host, def, allowed string) {
		info := IngressInfo{DefaultDomains: []string{def}, AllowedDomains: []string{allowed}}
		err := info.HostRefused(host)
		name, wildcard := strings.CutPrefix(normalDomain(host), "*.")
		underOne := func(d string) bool {
			d = normalDomain(d)
			return d != "" && (name == d || strings.HasSuffix(name, "."+d))
		}
		want := underOne(allowed) || (!wildcard && underOne(def))
		if (err == nil) != want {
			t.Errorf("host %q, defaultDomains [%q], allowedDomains [%q]: error %v, want allowed %t", host, def, allowed, err, want)
		}
	})
}

func TestRevisionTarget_HostErrors(t *testing.T) {
	cluster := func(name string, enabled bool, public, private IngressInfo) Cluster {
		c := Cluster{Spec: ClusterSpec{Enabled: enabled, Ingresses: ClusterIngresses{Public: public, Private: private}}}
		c.Name = name
		return c
	}
	public := IngressInfo{Gateway: "istio-system/public", DefaultDomains: []string{"example.com"}}
	private := IngressInfo{Gateway: "istio-system/private", DefaultDomains: []string{"internal.example.com"}}
	target := &RevisionTarget{Ports: []PortInfo{
		{Name: "http", Mode: PortModePublic, Ingresses: []Ingress{IngressPrivate, IngressPublic}, Hosts: []string{"shop.example.com", "vault.vault.svc.cluster.local"}},
		{Name: "admin", Mode: PortModePrivate, Ingresses: []Ingress{IngressPrivate}, Hosts: []string{"admin.internal.example.com"}},
		{Name: "local", Mode: PortModeLocal, Hosts: []string{"anything.example.net"}},
	}}
	path := field.NewPath("spec", "targets").Index(0)
	clusters := []Cluster{
		cluster("east", true, public, IngressInfo{Gateway: private.Gateway, DefaultDomains: []string{"internal.example.com"}, AllowedDomains: []string{"example.com"}}),
		cluster("west", true, public, IngressInfo{Gateway: private.Gateway, DefaultDomains: []string{"internal.example.com"}, AllowedDomains: []string{"example.com"}}),
		cluster("off", false, IngressInfo{Gateway: "x/y"}, IngressInfo{Gateway: "x/y"}),
	}
	errs := target.HostErrors(clusters, path)
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one, for the vault host", errs)
	}
	e := errs[0]
	if e.Field != "spec.targets[0].ports[0].hosts[1]" || e.BadValue != "vault.vault.svc.cluster.local" ||
		!strings.Contains(e.Detail, "cluster east, private ingress") || !strings.Contains(e.Detail, "and on 1 more clusters") {
		t.Errorf("error %s: %q, want the field, the first cluster and how many more", e.Field, e.Detail)
	}

	// shop.example.com on the private ingress of a cluster that allows it
	// only on the public one.
	narrow := []Cluster{cluster("north", true, public, private)}
	errs = target.HostErrors(narrow, path)
	if len(errs) != 2 || errs[0].Field != "spec.targets[0].ports[0].hosts[0]" || !strings.Contains(errs[0].Detail, "north, private ingress") {
		t.Errorf("errors %v, want shop.example.com refused on north's private ingress, and the vault host", errs)
	}
	// A cluster without gateways routes no host: nothing to refuse.
	if errs := target.HostErrors([]Cluster{cluster("bare", true, IngressInfo{}, IngressInfo{})}, path); len(errs) != 0 {
		t.Errorf("a cluster without gateways: %v", errs)
	}
}

package admission_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// hostsNamespace is the delivery namespace of the hosts tests: its own
// Clusters, which no other test's Revisions see.
const hostsNamespace = "hosts-team"

// hostsRevisionJSON is a Revision of app "shop" in fleet with a public port
// routing hosts.
func hostsRevisionJSON(fleet string, hosts ...string) string {
	return `{"app": {"name": "shop", "tag": "v1", "image": "registry.example/shop:v1"},
		"targets": [{"name": "production", "fleet": "` + fleet + `",
		"ports": [{"name": "http", "mode": "public", "hosts": ["` + strings.Join(hosts, `", "`) + `"]}]}]}`
}

// TestRevisionWebhook_RefusesHostsTheFleetDoesNotAllow: fleet "production"
// of namespace hosts-team has two clusters whose public ingress serves
// example.com, one of which also allows team.example.org. A Revision's
// host must be allowed on every cluster of the fleet: another team's
// in-mesh host, a wildcard over the shared default domain and a wildcard
// one cluster does not allow are refused, naming the host's field and the
// cluster; a fleet with no Clusters yet refuses nothing (the controller
// checks each cluster as it plans).
func TestRevisionWebhook_RefusesHostsTheFleetDoesNotAllow(t *testing.T) {
	ctx := context.Background()
	if err := hookedClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostsNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	for name, allowed := range map[string][]string{"east": nil, "west": {"team.example.org"}} {
		cl := &picchuv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hostsNamespace, Labels: map[string]string{picchuv1alpha1.LabelFleet: "production"}},
			Spec: picchuv1alpha1.ClusterSpec{
				Enabled: true,
				Config:  &picchuv1alpha1.ClusterConfig{Server: "https://" + name + ".example.net:6443"},
				Ingresses: picchuv1alpha1.ClusterIngresses{Public: picchuv1alpha1.IngressInfo{
					Gateway: "istio-system/public", DefaultDomains: []string{"example.com"}, AllowedDomains: allowed,
				}},
			},
		}
		if err := hookedClient.Create(ctx, cl); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	revision := func(fleet string, hosts ...string) error {
		u := object(t, "Revision", hostsRevisionJSON(fleet, hosts...))
		u.SetNamespace(hostsNamespace)
		return hookedClient.Create(ctx, u)
	}
	for _, tc := range []struct {
		host, want string
	}{
		{"vault.vault.svc.cluster.local", `cluster east, public ingress: host "vault.vault.svc.cluster.local" is under none of the ingress's domains (defaultDomains: example.com; allowedDomains: none) (and on 1 more clusters of the fleet)`},
		{"*.example.com", `cluster east, public ingress: host "*.example.com" is a wildcard under default domain "example.com"`},
		{"*.team.example.org", `cluster east, public ingress: host "*.team.example.org" is under none`},
	} {
		err := revision("production", "shop.example.com", tc.host)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.targets[0].ports[0].hosts[1]") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("host %s: %v, want an invalid error naming spec.targets[0].ports[0].hosts[1] and saying %q", tc.host, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hosts[0]") {
			t.Errorf("host %s: the allowed shop.example.com was refused too: %v", tc.host, err)
		}
	}
	if err := revision("production", "shop.example.com", "example.com"); err != nil {
		t.Errorf("hosts under the fleet's default domain were refused: %v", err)
	}
	if err := revision("staging", "vault.vault.svc.cluster.local"); err != nil {
		t.Errorf("a fleet without Clusters refused a host: %v", err)
	}
}

// TestRevision_SchemaRefusesMalformedHosts: without webhooks, the schema
// refuses a host that is no DNS name (or "*." and one), naming its field.
func TestRevision_SchemaRefusesMalformedHosts(t *testing.T) {
	ctx := context.Background()
	for _, host := range []string{"Shop.example.com", "shop.example.com:443", "*", "a.*.example.com", "shop_1.example.com", "https://shop.example.com", "shop.example.com."} {
		err := create(ctx, bare.Delivery.Client, object(t, "Revision", hostsRevisionJSON("production", host)))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.targets[0].ports[0].hosts[0]") {
			t.Errorf("host %q: %v, want an invalid error naming spec.targets[0].ports[0].hosts[0]", host, err)
		}
	}
	for _, host := range []string{"shop.example.com", "*.shop.example.com", "shop", "1.example.com"} {
		if err := create(ctx, bare.Delivery.Client, object(t, "Revision", hostsRevisionJSON("production", host))); err != nil {
			t.Errorf("host %q refused: %v", host, err)
		}
	}
}

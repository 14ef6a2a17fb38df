package harness_test

import (
	"context"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	istioapi "istio.io/api/networking/v1alpha3"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/test/integration/harness"
)

// TestHarness_DeliveryAndTwoTargets starts a delivery cluster and two targets
// with the third-party CRDs, then, as Picchu will, reads each registered
// Cluster and its Secret from the delivery cluster, builds a client from them
// alone and uses it on the target.
func TestHarness_DeliveryAndTwoTargets(t *testing.T) {
	ctx := context.Background()
	env, err := harness.Start(ctx, harness.Options{Targets: 2, Fleet: "production"})
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	clusters := &picchuv1alpha1.ClusterList{}
	if err := env.Delivery.Client.List(ctx, clusters, client.InNamespace(env.Namespace),
		client.MatchingLabels{picchuv1alpha1.LabelFleet: "production"}); err != nil {
		t.Fatalf("listing clusters: %v", err)
	}
	if len(clusters.Items) != 2 {
		t.Fatalf("%d clusters registered in fleet production, want 2", len(clusters.Items))
	}
	auths := map[harness.AuthMode]bool{}
	for _, target := range env.Targets {
		auths[target.Auth] = true
	}
	if !auths[harness.AuthClientCertificate] || !auths[harness.AuthToken] {
		t.Fatalf("targets use %v; want one client certificate and one token", auths)
	}

	for i := range clusters.Items {
		cluster := &clusters.Items[i]
		t.Run(cluster.Name, func(t *testing.T) {
			secret := &corev1.Secret{}
			if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(cluster), secret); err != nil {
				t.Fatalf("reading the cluster's secret: %v", err)
			}
			cfg, err := access.RESTConfig(cluster, secret)
			if err != nil {
				t.Fatalf("building config: %v", err)
			}
			c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
			if err != nil {
				t.Fatalf("building client: %v", err)
			}
			nss := &corev1.NamespaceList{}
			if err := c.List(ctx, nss); err != nil {
				t.Fatalf("listing namespaces with the registered credentials: %v", err)
			}
			if !hasNamespace(nss, "kube-system") {
				t.Fatalf("namespaces %v lack kube-system", names(nss))
			}

			// The target's API server holds the real third-party schemas: it
			// accepts each kind Picchu writes, and rejects what they forbid.
			ns := "demo-production"
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatalf("creating namespace: %v", err)
			}
			meta := metav1.ObjectMeta{Name: "demo", Namespace: ns}
			objects := []client.Object{
				&istionetworkingv1alpha3.VirtualService{ObjectMeta: meta, Spec: istioapi.VirtualService{
					Hosts: []string{"demo"},
					Http: []*istioapi.HTTPRoute{{Route: []*istioapi.HTTPRouteDestination{
						{Destination: &istioapi.Destination{Host: "demo", Subset: "v1"}, Weight: 100},
					}}},
				}},
				&istionetworkingv1alpha3.DestinationRule{ObjectMeta: meta, Spec: istioapi.DestinationRule{
					Host: "demo", Subsets: []*istioapi.Subset{{Name: "v1", Labels: map[string]string{"tag": "v1"}}},
				}},
				&monitoringv1.ServiceMonitor{ObjectMeta: meta, Spec: monitoringv1.ServiceMonitorSpec{
					Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"}},
					Endpoints: []monitoringv1.Endpoint{{Port: "http"}},
				}},
				&monitoringv1.PrometheusRule{ObjectMeta: meta, Spec: monitoringv1.PrometheusRuleSpec{
					Groups: []monitoringv1.RuleGroup{{Name: "demo", Rules: []monitoringv1.Rule{{Record: "demo:up", Expr: intstr.FromString("up")}}}},
				}},
				&kedav1alpha1.ScaledObject{ObjectMeta: meta, Spec: kedav1alpha1.ScaledObjectSpec{
					ScaleTargetRef: &kedav1alpha1.ScaleTarget{Name: "v1", Kind: "ReplicaSet", APIVersion: appsv1.SchemeGroupVersion.String()},
					Triggers:       []kedav1alpha1.ScaleTriggers{{Type: "cpu", MetricType: "Utilization", Metadata: map[string]string{"value": "60"}}},
				}},
				&slothv1.PrometheusServiceLevel{ObjectMeta: meta, Spec: slothv1.PrometheusServiceLevelSpec{
					Service: "demo",
					SLOs: []slothv1.SLO{{Name: "availability", Objective: 99.9, SLI: slothv1.SLI{Events: &slothv1.SLIEvents{
						ErrorQuery: `sum(rate(errors[{{.window}}]))`, TotalQuery: `sum(rate(total[{{.window}}]))`,
					}}, Alerting: slothv1.Alerting{PageAlert: slothv1.Alert{Disable: true}, TicketAlert: slothv1.Alert{Disable: true}}}},
				}},
			}
			for _, obj := range objects {
				if err := c.Create(ctx, obj); err != nil {
					t.Errorf("creating %T on the target: %v", obj, err)
				}
			}
			bad := &monitoringv1.ServiceMonitor{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns}, Spec: monitoringv1.ServiceMonitorSpec{
				Selector:  metav1.LabelSelector{},
				Endpoints: []monitoringv1.Endpoint{{Port: "http", Scheme: "gopher"}},
			}}
			if err := c.Create(ctx, bad); err == nil {
				t.Errorf("the target accepted a ServiceMonitor with scheme gopher: its CRD schema is not the real one")
			}
		})
	}
}

func hasNamespace(list *corev1.NamespaceList, name string) bool {
	for _, ns := range list.Items {
		if ns.Name == name {
			return true
		}
	}
	return false
}

func names(list *corev1.NamespaceList) []string {
	var out []string
	for _, ns := range list.Items {
		out = append(out, ns.Name)
	}
	return out
}

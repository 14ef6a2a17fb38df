// Package install_test checks Picchu's installation, config/default as
// kustomize renders it: every object against a real API server's schemas
// (the ServiceMonitor against prometheus-operator's own CRD), and that its
// metrics are scrapable as installed: the ServiceMonitor selects the
// metrics Service, whose port reaches the port the manager serves its
// metrics on.
package install_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// render returns config/default's objects as kustomize builds them.
func render(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	resources, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(kit.RepoRoot(), "config", "default"))
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// one returns the rendered object of kind named name, converted to into.
func one(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("config/default has no %s %s", kind, name)
}

// TestDefault_MetricsAreScrapable follows a scrape of the installed
// operator: the ServiceMonitor selects the metrics Service (and no other),
// in its namespace, by the port name it scrapes; the Service selects the
// manager's pods and targets the container port the manager's
// --metrics-addr serves.
func TestDefault_MetricsAreScrapable(t *testing.T) {
	objs := render(t)
	var (
		deploy  appsv1.Deployment
		svc     corev1.Service
		monitor monitoringv1.ServiceMonitor
	)
	one(t, objs, "Deployment", "picchu-controller-manager", &deploy)
	one(t, objs, "Service", "picchu-controller-manager-metrics", &svc)
	one(t, objs, "ServiceMonitor", "picchu-controller-manager", &monitor)

	// The ServiceMonitor selects this Service alone, in its own namespace.
	sel, err := metav1.LabelSelectorAsSelector(&monitor.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Service" {
			continue
		}
		if selected := sel.Matches(labels.Set(o.GetLabels())); selected != (o.GetName() == svc.Name) {
			t.Errorf("the ServiceMonitor's selector %s selects Service %s: %v", sel, o.GetName(), selected)
		}
	}
	ns := monitor.Spec.NamespaceSelector
	if monitor.Namespace != svc.Namespace && !ns.Any && !slices.Contains(ns.MatchNames, svc.Namespace) {
		t.Errorf("the ServiceMonitor (in %s) does not look in namespace %s", monitor.Namespace, svc.Namespace)
	}
	if len(monitor.Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %+v, want one", monitor.Spec.Endpoints)
	}
	ep := monitor.Spec.Endpoints[0]
	var port *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Name == ep.Port {
			port = &svc.Spec.Ports[i]
		}
	}
	if port == nil || port.Name != "metrics" {
		t.Fatalf("the ServiceMonitor scrapes port %q, which Service %s does not name metrics: %+v", ep.Port, svc.Name, svc.Spec.Ports)
	}
	if ep.Path != "" && ep.Path != "/metrics" {
		t.Errorf("the ServiceMonitor scrapes %s, the manager serves /metrics", ep.Path)
	}

	// The Service selects the manager's pods...
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(deploy.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service %s selects %v, the manager's pods are labelled %v", svc.Name, svc.Spec.Selector, deploy.Spec.Template.Labels)
	}
	// ... and targets the container port the manager serves its metrics on.
	var manager *corev1.Container
	for i := range deploy.Spec.Template.Spec.Containers {
		if deploy.Spec.Template.Spec.Containers[i].Name == "manager" {
			manager = &deploy.Spec.Template.Spec.Containers[i]
		}
	}
	if manager == nil {
		t.Fatal("the Deployment has no manager container")
	}
	var addr string
	for _, arg := range manager.Args {
		if v, ok := strings.CutPrefix(arg, "--metrics-addr="); ok {
			addr = v
		}
	}
	if addr == "" {
		addr = ":8383" // main.go's default
	}
	_, served, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("--metrics-addr=%s: %v", addr, err)
	}
	var target int32
	for _, p := range manager.Ports {
		if (port.TargetPort.Type == intstr.String && p.Name == port.TargetPort.StrVal) ||
			(port.TargetPort.Type == intstr.Int && p.ContainerPort == port.TargetPort.IntVal) {
			target = p.ContainerPort
		}
	}
	if fmt.Sprint(target) != served {
		t.Errorf("Service %s targets container port %d (%s), the manager serves its metrics on %q", svc.Name, target, port.TargetPort.String(), addr)
	}
}

// TestDefault_ObjectsFitTheirSchemas applies every object of config/default
// to a real API server with Picchu's CRDs and prometheus-operator's
// ServiceMonitor CRD (at the version go.mod pins), as a dry-run create (an
// update of what the server already has) with strict field validation: a
// field a schema lacks, a wrong type or an invalid value fails. cert-manager's objects are skipped: the repository
// does not carry its CRDs.
func TestDefault_ObjectsFitTheirSchemas(t *testing.T) {
	ctx := context.Background()
	env, err := harness.Start(ctx, harness.Options{})
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping API server: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	crds, err := kit.ThirdPartyCRDPaths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var monitorCRD []string
	for _, p := range crds {
		if strings.HasSuffix(p, "monitoring.coreos.com_servicemonitors.yaml") {
			monitorCRD = append(monitorCRD, p)
		}
	}
	if len(monitorCRD) != 1 {
		t.Fatalf("no ServiceMonitor CRD among %v", crds)
	}
	if _, err := envtest.InstallCRDs(env.Delivery.Config, envtest.CRDInstallOptions{Paths: monitorCRD, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}

	c := env.Delivery.Client
	kinds := map[string]bool{}
	for _, o := range render(t) {
		kinds[o.GetKind()] = true
		if o.GroupVersionKind().Group == "cert-manager.io" {
			continue
		}
		strict := client.FieldValidation("Strict")
		obj := o.DeepCopy()
		err := c.Create(ctx, obj, client.DryRunAll, strict)
		if apierrors.IsAlreadyExists(err) {
			// The namespace and the CRDs the harness created: tried as
			// an update of what is there.
			current := &unstructured.Unstructured{}
			current.SetGroupVersionKind(o.GroupVersionKind())
			if err = c.Get(ctx, client.ObjectKeyFromObject(o), current); err == nil {
				obj = o.DeepCopy()
				obj.SetResourceVersion(current.GetResourceVersion())
				err = c.Update(ctx, obj, client.DryRunAll, strict)
			}
		}
		if err != nil {
			t.Errorf("%s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	for _, kind := range []string{"CustomResourceDefinition", "Deployment", "Service", "ServiceMonitor", "ClusterRole",
		"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		if !kinds[kind] {
			t.Errorf("config/default renders no %s", kind)
		}
	}
}

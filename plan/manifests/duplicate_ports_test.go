package manifests_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

// TestDuplicatePorts_ATargetAcceptsTheObjects builds the objects of a build
// whose ports share a port number (http and grpc on 80), which admission
// accepts with a warning as the original did, and applies them to a real
// cluster: it accepts every one. The Service has port 80 once, named after
// the first port (the first wins); the container has all three ports; each
// port has its routes. (A shared containerPort is rejected at admission: a
// container's ports are keyed by number and protocol, and server-side
// apply refuses a ReplicaSet with two.)
func TestDuplicatePorts_ATargetAcceptsTheObjects(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	const app, ns = "dupports", "dupports-production"
	spec := &picchuv1alpha1.RevisionTarget{
		Name: "production", Fleet: "production",
		Ports: []picchuv1alpha1.PortInfo{
			port("http", 80, 8080, corev1.ProtocolTCP), port("grpc", 80, 8081, corev1.ProtocolTCP), port("admin", 81, 8082, corev1.ProtocolTCP),
		},
	}
	spec.DefaultRouting()
	vs, _, err := manifests.VirtualServices(manifests.Routing{
		App: app, Target: "production", Fleet: "production", Ports: spec.Ports, DefaultIngressPorts: spec.DefaultIngressPorts,
		Releases: []manifests.Release{{Tag: "v1", Weight: 100}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	objects := []client.Object{
		manifests.AppNamespace(app, "production", manifests.MeshSidecar),
		manifests.Service(app, "production", spec.Ports),
		manifests.ReplicaSet(manifests.Build{App: app, Target: "production", Tag: "v1", Image: "dupports:v1", Spec: spec}),
		vs,
	}
	for _, obj := range objects {
		if err := c.Apply(ctx, obj); err != nil {
			t.Fatalf("the target rejected %T: %v", obj, err)
		}
	}
	svc := &corev1.Service{}
	if err := tgt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, svc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range svc.Spec.Ports {
		got = append(got, fmt.Sprintf("%s:%d->%s", p.Name, p.Port, p.TargetPort.String()))
	}
	if want := []string{"http:80->http", "admin:81->admin"}; !reflect.DeepEqual(got, want) {
		t.Errorf("service ports %v, want %v", got, want)
	}
	if names := routeNames(&vs.Spec); !reflect.DeepEqual(names, []string{"01_release-admin", "01_release-grpc", "01_release-http"}) {
		t.Errorf("routes %v, want one release route per port", names)
	}
}

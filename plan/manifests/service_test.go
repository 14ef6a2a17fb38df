package manifests_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

func port(name string, number, container int32, protocol corev1.Protocol) picchuv1alpha1.PortInfo {
	return picchuv1alpha1.PortInfo{Name: name, Port: number, ContainerPort: container, Protocol: protocol}
}

// Test_Service_Ports builds the Service from the ports of several builds,
// newest first: whatever they are, it has one port per number and protocol
// and per name, the first port of a number naming it.
func Test_Service_Ports(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	byName := func(name string) intstr.IntOrString { return intstr.FromString(name) }
	tests := []struct {
		name  string
		ports []picchuv1alpha1.PortInfo
		want  []corev1.ServicePort
	}{
		{
			name:  "one build",
			ports: []picchuv1alpha1.PortInfo{port("http", 80, 8080, tcp), port("status", 4444, 4444, tcp)},
			want: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: tcp, TargetPort: byName("http")},
				{Name: "status", Port: 4444, Protocol: tcp, TargetPort: byName("status")},
			},
		},
		{
			name:  "a port renamed on the same container port targets the number, so both builds are endpoints",
			ports: []picchuv1alpha1.PortInfo{port("web", 80, 8080, tcp), port("http", 80, 8080, tcp)},
			want:  []corev1.ServicePort{{Name: "web", Port: 80, Protocol: tcp, TargetPort: intstr.FromInt32(8080)}},
		},
		{
			name:  "a port renamed and moved targets the first build's name",
			ports: []picchuv1alpha1.PortInfo{port("web", 80, 9090, tcp), port("http", 80, 8080, tcp)},
			want:  []corev1.ServicePort{{Name: "web", Port: 80, Protocol: tcp, TargetPort: byName("web")}},
		},
		{
			name:  "a port moved under the same name targets the name, which each build's pods resolve",
			ports: []picchuv1alpha1.PortInfo{port("http", 80, 9090, tcp), port("http", 80, 8080, tcp)},
			want:  []corev1.ServicePort{{Name: "http", Port: 80, Protocol: tcp, TargetPort: byName("http")}},
		},
		{
			name:  "a name already taken by another number is left out",
			ports: []picchuv1alpha1.PortInfo{port("http", 80, 8080, tcp), port("http", 81, 8080, tcp)},
			want:  []corev1.ServicePort{{Name: "http", Port: 80, Protocol: tcp, TargetPort: byName("http")}},
		},
		{
			name: "a renamed port's old name stays free for another number",
			ports: []picchuv1alpha1.PortInfo{
				port("http", 80, 8080, tcp), port("web", 80, 8080, tcp), port("web", 81, 8081, tcp),
			},
			want: []corev1.ServicePort{
				{Name: "http", Port: 80, Protocol: tcp, TargetPort: intstr.FromInt32(8080)},
				{Name: "web", Port: 81, Protocol: tcp, TargetPort: byName("web")},
			},
		},
		{
			name:  "the same number over two protocols is two ports",
			ports: []picchuv1alpha1.PortInfo{port("dns", 53, 5353, udp), port("dns-tcp", 53, 5354, tcp)},
			want: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: udp, TargetPort: byName("dns")},
				{Name: "dns-tcp", Port: 53, Protocol: tcp, TargetPort: byName("dns-tcp")},
			},
		},
		{
			name:  "no protocol is TCP",
			ports: []picchuv1alpha1.PortInfo{port("web", 80, 8080, ""), port("http", 80, 8080, tcp)},
			want:  []corev1.ServicePort{{Name: "web", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := manifests.Service("shop", "production", tt.ports)
			if svc == nil {
				t.Fatal("no Service")
			}
			if !reflect.DeepEqual(svc.Spec.Ports, tt.want) {
				t.Errorf("ports\n got %+v\nwant %+v", svc.Spec.Ports, tt.want)
			}
			if err := uniquePorts(svc.Spec.Ports); err != nil {
				t.Error(err)
			}
		})
	}
}

// uniquePorts checks what the API server checks of a Service's ports: no
// two with the same number and protocol, no two with the same name.
func uniquePorts(ports []corev1.ServicePort) error {
	numbers, names := map[string]bool{}, map[string]bool{}
	for _, p := range ports {
		protocol := p.Protocol
		if protocol == "" {
			protocol = corev1.ProtocolTCP
		}
		number := fmt.Sprintf("%d/%s", p.Port, protocol)
		if numbers[number] || names[p.Name] {
			return fmt.Errorf("duplicate port %s or name %q in %+v", number, p.Name, ports)
		}
		numbers[number], names[p.Name] = true, true
	}
	return nil
}

// Test_Service_NoneWithoutPorts: an app whose builds have no port (a queue
// worker) gets no Service, and no DestinationRule for its host.
func Test_Service_NoneWithoutPorts(t *testing.T) {
	if svc := manifests.Service("worker", "production", nil); svc != nil {
		t.Errorf("Service %+v, want none", svc.Spec)
	}
	r := routing()
	r.Ports = nil
	if dr, err := manifests.DestinationRule(r); dr != nil || err != nil {
		t.Errorf("DestinationRule %v, %v; want nil, nil", dr, err)
	}
	if mesh, ingress, err := manifests.VirtualServices(r, cluster()); mesh != nil || ingress != nil || err != nil {
		t.Errorf("VirtualServices %v, %v, %v; want nil, nil, nil", mesh, ingress, err)
	}
	ref := manifests.ServiceObject("worker", "production")
	if ref.Name != "worker" || ref.Namespace != "worker-production" || ref.Labels[picchuv1alpha1.LabelApp] != "worker" {
		t.Errorf("reference to delete %s/%s %v", ref.Namespace, ref.Name, ref.Labels)
	}
}

// TestService_RenamedPortOnARealCluster applies the Service of an app whose
// v1 calls port 80 "http" and whose v2 calls it "web": the target accepts
// it, with one port 80 that reaches both builds' pods.
func TestService_RenamedPortOnARealCluster(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	const app = "renamed"
	v1 := []picchuv1alpha1.PortInfo{port("http", 80, 8080, corev1.ProtocolTCP), port("status", 4444, 4444, corev1.ProtocolTCP)}
	v2 := []picchuv1alpha1.PortInfo{port("web", 80, 8080, corev1.ProtocolTCP), port("status", 4444, 4444, corev1.ProtocolTCP)}
	if err := c.Apply(ctx, manifests.AppNamespace(app, "production", manifests.MeshSidecar)); err != nil {
		t.Fatal(err)
	}
	// v1 alone, then v2 routable (first) with v1 still there, then v2 alone.
	for _, step := range []struct {
		ports  []picchuv1alpha1.PortInfo
		want80 corev1.ServicePort
	}{
		{v1, corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		{append(v2, v1[0]), corev1.ServicePort{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		{v2, corev1.ServicePort{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")}},
	} {
		if err := c.Apply(ctx, manifests.Service(app, "production", step.ports)); err != nil {
			t.Fatalf("the target rejected the Service of ports %+v: %v", step.ports, err)
		}
		svc := &corev1.Service{}
		if err := tgt.Client.Get(ctx, client.ObjectKey{Namespace: "renamed-production", Name: app}, svc); err != nil {
			t.Fatal(err)
		}
		if len(svc.Spec.Ports) != 2 {
			t.Fatalf("stored ports %+v, want 80 and 4444", svc.Spec.Ports)
		}
		got := svc.Spec.Ports[0]
		got.NodePort = 0
		if got != step.want80 {
			t.Errorf("stored port 80 %+v, want %+v", got, step.want80)
		}
	}
}

// Package platforms_test releases apps whose images offer different
// platforms (os/architecture) over two target clusters that run the real
// kube-scheduler and ReplicaSet controller on kwok nodes: east has amd64
// and arm64 nodes, west only amd64. The images are in an in-memory
// registry, over TLS, that asks for the credentials of the Revisions'
// image pull secrets, and in a second one that can be made to fail.
package platforms_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

var (
	env *harness.Env
	// host is the registry's host:port.
	host string
	// armNode is east's arm64 node.
	armNode string
	// flaky is the registry that can be made to fail.
	flaky *flakyRegistry
	// registryTransport trusts both registries' certificate.
	registryTransport http.RoundTripper
	// running is the operator; a test may restart it.
	running *inprocess.Runner
)

const (
	registryUser, registryPassword = "picchu", "s3cret"
	pullSecret                     = "registry-credentials"
)

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 2, Controllers: true}, setup)
}

func setup(s *harness.Suite) error {
	ctx := s.Ctx
	env = s.Env
	reg, err := kit.StartRegistry(kit.RegistryOptions{User: registryUser, Password: registryPassword})
	if err != nil {
		return fmt.Errorf("starting the registry: %w", err)
	}
	s.OnStop(func() error { reg.Close(); return nil })
	host = reg.Host
	if flaky, err = startFlakyRegistry(); err != nil {
		return fmt.Errorf("starting the flaky registry: %w", err)
	}
	s.OnStop(func() error { flaky.close(); return nil })
	roots := x509.NewCertPool()
	roots.AddCert(reg.Certificate())
	roots.AddCert(flaky.Certificate())
	registryTransport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	if err := pushImages(reg); err != nil {
		return err
	}
	if _, err := flaky.PushIndex("shop:multi", v1.Platform{OS: "linux", Architecture: "amd64"}, v1.Platform{OS: "linux", Architecture: "arm64"}); err != nil {
		return err
	}
	if err := env.Delivery.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: pullSecret, Namespace: env.Namespace},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON()},
	}); err != nil {
		return fmt.Errorf("creating the pull secret: %w", err)
	}
	// East's last node runs arm64.
	east := env.Targets[0]
	nodes := &corev1.NodeList{}
	if err := east.Client.List(ctx, nodes, client.MatchingLabels{harness.KwokNodeLabel: "kwok"}); err != nil || len(nodes.Items) == 0 {
		return fmt.Errorf("listing east's nodes: %d, %v", len(nodes.Items), err)
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	arm := &nodes.Items[len(nodes.Items)-1]
	arm.Labels[corev1.LabelArchStable] = "arm64"
	if err := east.Client.Update(ctx, arm); err != nil {
		return fmt.Errorf("making node %s arm64: %w", arm.Name, err)
	}
	armNode = arm.Name
	running, err = inprocess.Run(s, operator.Options{SyncPeriod: time.Minute, ClusterTimeout: 5 * time.Second, InspectImagePlatforms: true,
		ImageTransport: registryTransport})
	return err
}

// pushImages pushes shop:multi (amd64 and arm64), shop:arm (arm64) and
// shop:s390x.
func pushImages(reg *kit.Registry) error {
	if _, err := reg.PushIndex("shop:multi", v1.Platform{OS: "linux", Architecture: "amd64"}, v1.Platform{OS: "linux", Architecture: "arm64"}); err != nil {
		return err
	}
	for _, arch := range []string{"arm64", "s390x"} {
		tag := map[string]string{"arm64": "arm", "s390x": "s390x"}[arch]
		if _, err := reg.Push("shop:"+tag, "linux", arch); err != nil {
			return err
		}
	}
	return nil
}

// revision is build tag of app with image, two fixed replicas, released
// at once, changed by opts.
func revision(app, tag, img string, opts ...kit.RevisionOption) *picchuv1alpha1.Revision {
	two := int32(2)
	return env.Apps().Revision(app, tag, append([]kit.RevisionOption{
		kit.Image(img), kit.Scale(picchuv1alpha1.ScaleInfo{Default: two, Min: &two, Max: 2}),
		kit.With(func(rev *picchuv1alpha1.Revision) {
			rev.Spec.App.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pullSecret}}
		}),
	}, opts...)...)
}

func create(t *testing.T, rev *picchuv1alpha1.Revision) {
	t.Helper()
	if err := env.Delivery.Client.Create(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
}

func releaseManager(app string) (*picchuv1alpha1.ReleaseManager, error) {
	return env.Apps().ReleaseManager(context.Background(), app)
}

func buildState(rm *picchuv1alpha1.ReleaseManager, tag string) string {
	st, _ := kit.BuildStatus(rm, tag)
	return st.State.Current
}

// platformsCondition waits for the app's ImagePlatforms condition to have
// status and reason, with a message holding each of parts.
func platformsCondition(t *testing.T, app string, status metav1.ConditionStatus, reason string, parts ...string) {
	t.Helper()
	kit.Eventually(t, 60*time.Second, app+" ImagePlatforms "+reason, func() error {
		rm, err := releaseManager(app)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionImagePlatforms)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("condition %+v", c)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("message %q lacks %q", c.Message, p)
			}
		}
		return nil
	})
}

// podNodes are the nodes of the build's running pods on target.
func podNodes(ctx context.Context, target *harness.Target, app, tag string) ([]string, error) {
	pods := &corev1.PodList{}
	if err := target.Client.List(ctx, pods, client.InNamespace(app+"-production"),
		client.MatchingLabels{picchuv1alpha1.LabelPodTag: tag}); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			out = append(out, p.Spec.NodeName)
		}
	}
	return out, nil
}

func TestPlatforms_MultiArchImageRunsEverywhere(t *testing.T) {
	ctx := context.Background()
	create(t, revision("multi", "v1", host+"/shop:multi"))
	env.Apps().WaitState(t, 90*time.Second, "multi", "v1", "released")
	platformsCondition(t, "multi", metav1.ConditionTrue, "Runnable")
	for _, target := range env.Targets {
		rs := &appsv1.ReplicaSet{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: "multi-production", Name: "v1"}, rs); err != nil {
			t.Fatal(err)
		}
		terms := rs.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) != 1 || fmt.Sprint(terms[0].MatchExpressions) != fmt.Sprint([]corev1.NodeSelectorRequirement{
			{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
		}) {
			t.Errorf("%s: affinity %+v", target.Name, terms)
		}
	}
}

func TestPlatforms_Arm64ImageHoldsOnAnAmd64OnlyCluster(t *testing.T) {
	ctx := context.Background()
	create(t, revision("armonly", "v1", host+"/shop:arm"))
	west := env.Targets[1]
	platformsCondition(t, "armonly", metav1.ConditionFalse, "NoMatchingNode",
		"v1 held on cluster "+west.Name, "image offers linux/arm64", "ready nodes run only linux/amd64")
	// East runs it, on its arm64 node only.
	east := env.Targets[0]
	kit.Eventually(t, 60*time.Second, "armonly v1's pods on east's arm64 node", func() error {
		nodes, err := podNodes(ctx, east, "armonly", "v1")
		if err != nil {
			return err
		}
		if len(nodes) == 0 {
			return fmt.Errorf("no pod running")
		}
		for _, n := range nodes {
			if n != armNode {
				return fmt.Errorf("a pod runs on %s", n)
			}
		}
		return nil
	})
	// West gets no ReplicaSet, and the build holds (never released).
	rs := &appsv1.ReplicaSet{}
	if err := west.Client.Get(ctx, client.ObjectKey{Namespace: "armonly-production", Name: "v1"}, rs); err == nil {
		t.Errorf("west got the ReplicaSet of an arm64 build")
	}
	rm, err := releaseManager("armonly")
	if err != nil {
		t.Fatal(err)
	}
	if s := buildState(rm, "v1"); s == "released" || s == "failed" {
		t.Errorf("v1 is %s, want it held", s)
	}

	// Once west has an arm64 node, the build goes on there at once.
	nodes := &corev1.NodeList{}
	if err := west.Client.List(ctx, nodes, client.MatchingLabels{harness.KwokNodeLabel: "kwok"}); err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing west's nodes: %d, %v", len(nodes.Items), err)
	}
	arm := &nodes.Items[0]
	arm.Labels[corev1.LabelArchStable] = "arm64"
	if err := west.Client.Update(ctx, arm); err != nil {
		t.Fatal(err)
	}
	platformsCondition(t, "armonly", metav1.ConditionTrue, "Runnable")
	kit.Eventually(t, 60*time.Second, "armonly v1's pods on west's arm64 node", func() error {
		nodes, err := podNodes(ctx, west, "armonly", "v1")
		if err != nil {
			return err
		}
		if len(nodes) == 0 || slices.ContainsFunc(nodes, func(n string) bool { return n != arm.Name }) {
			return fmt.Errorf("pods on %v", nodes)
		}
		return nil
	})
}

func TestPlatforms_ImageNoClusterRunsFails(t *testing.T) {
	create(t, revision("mainframe", "v1", host+"/shop:s390x"))
	kit.Eventually(t, 90*time.Second, "mainframe v1 failed", func() error {
		rev := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: "mainframe-v1"}, rev); err != nil {
			return err
		}
		if !rev.Spec.Failed {
			return fmt.Errorf("not failed")
		}
		return nil
	})
	// Once failed, the build is no longer inspected: its record still
	// says why it failed.
	var st picchuv1alpha1.ReleaseManagerRevisionStatus
	kit.Eventually(t, 30*time.Second, "mainframe v1 recorded failed", func() error {
		rm, err := releaseManager("mainframe")
		if err != nil {
			return err
		}
		i := slices.IndexFunc(rm.Status.Revisions, func(st picchuv1alpha1.ReleaseManagerRevisionStatus) bool { return st.Tag == "v1" })
		if i < 0 {
			return fmt.Errorf("no v1 in %+v", rm.Status.Revisions)
		}
		if st = rm.Status.Revisions[i]; st.State.Current != "failed" {
			return fmt.Errorf("v1 is %s", st.State.Current)
		}
		return nil
	})
	if !strings.Contains(st.Rejected, "linux/s390x") || !strings.Contains(st.Rejected, "linux/amd64") {
		t.Errorf("v1's status %+v does not name both sides' platforms", st)
	}
}

func TestPlatforms_UnreachableRegistryHolds(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := l.Addr().String()
	l.Close()
	create(t, revision("lost", "v1", gone+"/shop:v1"))
	platformsCondition(t, "lost", metav1.ConditionFalse, "PlatformsUnknown", "v1: ", gone, "registry unreachable")
	for _, target := range env.Targets {
		rs := &appsv1.ReplicaSet{}
		if err := target.Client.Get(context.Background(), client.ObjectKey{Namespace: "lost-production", Name: "v1"}, rs); err == nil {
			t.Errorf("%s got the ReplicaSet of a build whose image cannot be read", target.Name)
		}
	}
}

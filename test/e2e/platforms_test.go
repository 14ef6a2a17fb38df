package e2e

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

// armRegistry serves, on 127.0.0.1 over TLS (the operator sends
// credentials over nothing else), an in-memory registry that asks for a
// user and password, holding app:v1, a linux/arm64 image (a single
// manifest), and creates the pull secret of its credentials on the
// delivery cluster. It returns the image's reference, the secret's name,
// and a PEM file of the registry's certificate for the operator to trust
// (SSL_CERT_FILE); cleanup deletes the secret and stops the registry.
func armRegistry(t *testing.T, app string) (image, secret, caFile string) {
	t.Helper()
	ctx := context.Background()
	// What the registry serves, the operator's reads included, in the test's log.
	reg, err := kit.StartRegistry(kit.RegistryOptions{User: "picchu", Password: "s3cret", Logger: log.New(testLog{t}, "registry: ", 0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	caFile = filepath.Join(t.TempDir(), "registry.pem")
	if err := os.WriteFile(caFile, reg.CertificatePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if image, err = reg.Push(app+":v1", "linux", "arm64"); err != nil {
		t.Fatal(err)
	}

	secret = app + "-registry"
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: lab.Namespace},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON()},
	}
	if err := lab.Delivery.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err := lab.Delivery.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.Delivery.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	return image, secret, caFile
}

// testLog writes lines to a test's log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// replicaSetsOf are the ReplicaSets of app's build tag on cluster c.
func replicaSetsOf(ctx context.Context, c *fleet.Cluster, app, tag string) ([]appsv1.ReplicaSet, error) {
	list := &appsv1.ReplicaSetList{}
	if err := c.Client.List(ctx, list, client.InNamespace(app+"-"+story.Target), client.MatchingLabels{picchuv1alpha1.LabelTag: tag}); err != nil {
		return nil, fmt.Errorf("%s: listing ReplicaSets: %w", c.Name, err)
	}
	return list.Items, nil
}

// runsOnlyOn checks that app's build tag runs on cluster c, all of its
// ReplicaSets' pods Running, and every one of its pods on node.
func runsOnlyOn(ctx context.Context, c *fleet.Cluster, app, tag, node string) error {
	obs := story.ObserveCluster(ctx, c, app)
	if obs.Err != nil {
		return obs.Err
	}
	if p := obs.Pods[tag]; p.Desired == 0 || p.Running < p.Desired {
		return fmt.Errorf("%s: %s has %d of %d pods Running", c.Name, tag, p.Running, p.Desired)
	}
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods, client.InNamespace(app+"-"+story.Target), client.MatchingLabels{picchuv1alpha1.LabelTag: tag}); err != nil {
		return fmt.Errorf("%s: listing pods: %w", c.Name, err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Spec.NodeName != node {
			return fmt.Errorf("%s: pod %s is on node %q, want %s", c.Name, p.Name, p.Spec.NodeName, node)
		}
	}
	return nil
}

// platformsCondition reads app's ImagePlatforms condition, and checks it
// has status and reason and a message holding each of parts.
func platformsCondition(ctx context.Context, app string, status metav1.ConditionStatus, reason string, parts ...string) (*metav1.Condition, error) {
	rm := &picchuv1alpha1.ReleaseManager{}
	if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm); err != nil {
		return nil, err
	}
	c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionImagePlatforms)
	if c == nil || c.Status != status || c.Reason != reason {
		return c, fmt.Errorf("ImagePlatforms %+v, want %s %s", c, status, reason)
	}
	for _, p := range parts {
		if !strings.Contains(c.Message, p) {
			return c, fmt.Errorf("ImagePlatforms message %q lacks %q", c.Message, p)
		}
	}
	return c, nil
}

// requiresArch checks that every ReplicaSet of app's build tag on c keeps
// its pods on nodes of architecture arch alone.
func requiresArch(ctx context.Context, c *fleet.Cluster, app, tag, arch string) error {
	rss, err := replicaSetsOf(ctx, c, app, tag)
	if err != nil {
		return err
	}
	if len(rss) == 0 {
		return fmt.Errorf("%s: no ReplicaSet of %s", c.Name, tag)
	}
	for _, rs := range rss {
		aff := rs.Spec.Template.Spec.Affinity
		if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			return fmt.Errorf("%s: ReplicaSet %s has no required node affinity", c.Name, rs.Name)
		}
		for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if !slices.ContainsFunc(term.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
				return r.Key == corev1.LabelArchStable && r.Operator == corev1.NodeSelectorOpIn && slices.Equal(r.Values, []string{arch})
			}) {
				return fmt.Errorf("%s: ReplicaSet %s: node selector term %+v does not require %s", c.Name, rs.Name, term, arch)
			}
		}
	}
	return nil
}

// TestImagePlatformsOnTheFleet: with the operator reading images'
// platforms (--inspect-image-platforms), app "armada", whose image is
// linux/arm64 alone (in a registry the test serves, behind the
// Revision's pull secret), runs in east on the one arm64 node east is
// given, and nowhere else there; west, whose nodes all run amd64, holds
// the build: ImagePlatforms is False, NoMatchingNode, naming west and both
// sides' platforms, the build is neither released nor failed, and west
// gets no ReplicaSet of it. Once west is given an arm64 node too, the
// build goes on there, on that node alone, and is released everywhere.
func TestImagePlatformsOnTheFleet(t *testing.T) {
	ctx := context.Background()
	const app = "armada"
	start := time.Now()
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	// Last to run: the operator as every other test has it.
	t.Cleanup(func() {
		if err := lab.StartOperator(ctx, operatorBinary); err != nil {
			t.Error(err)
		}
	})
	image, secret, caFile := armRegistry(t, app)
	east, west := lab.Target("east"), lab.Target("west")
	type added struct {
		c    *fleet.Cluster
		name string
	}
	var nodes []added
	addArmNode := func(c *fleet.Cluster) string {
		t.Helper()
		node := "arm64-" + c.Name
		// A node left by an earlier run that failed in the middle.
		if err := c.DeleteNode(ctx, node); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, added{c, node})
		if err := c.AddNode(ctx, node, map[string]string{corev1.LabelArchStable: "arm64"}, nil); err != nil {
			t.Fatal(err)
		}
		return node
	}
	// First to run: the app goes, then the nodes it ran on.
	t.Cleanup(func() {
		if err := story.Reset(ctx, lab, app); err != nil {
			t.Error(err)
		}
		for _, n := range nodes {
			if err := n.c.DeleteNode(ctx, n.name); err != nil {
				t.Error(err)
			}
		}
	})
	eastArm := addArmNode(east)
	if err := lab.StartOperatorWithEnv(ctx, operatorBinary, []string{"SSL_CERT_FILE=" + caFile}, "--inspect-image-platforms"); err != nil {
		t.Fatal(err)
	}
	t.Logf("registry up, %s added to east, operator restarted: %s", eastArm, time.Since(start).Round(100*time.Millisecond))

	rev := apply(t, app, "v1", func(r *picchuv1alpha1.Revision) {
		r.Spec.App.Image = image
		r.Spec.App.ImagePullSecrets = []corev1.LocalObjectReference{{Name: secret}}
	})
	applied := time.Now()
	held := []string{"v1 held on cluster " + west.Name + ":", "image offers linux/arm64", "run only linux/amd64"}
	var cond *metav1.Condition
	if err := kit.Poll(ctx, pollInterval, time.Minute, app+": west holds v1", func(ctx context.Context) error {
		var err error
		cond, err = platformsCondition(ctx, app, metav1.ConditionFalse, "NoMatchingNode", held...)
		return err
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	t.Logf("ImagePlatforms: %s", cond.Message)
	if err := kit.Poll(ctx, pollInterval, time.Minute, app+": v1 runs in east on "+eastArm+" alone", func(ctx context.Context) error {
		return runsOnlyOn(ctx, east, app, "v1", eastArm)
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	if err := requiresArch(ctx, east, app, "v1", "arm64"); err != nil {
		t.Error(err)
	}
	t.Logf("v1 runs in east on %s alone %s after it was applied", eastArm, time.Since(applied).Round(100*time.Millisecond))

	// West holds v1 for as long as the build would take to be released
	// were it runnable there (its canary, then a step), and some more.
	hold := time.Duration(rev.Spec.Targets[0].Canary.TTL)*time.Second + 10*time.Second
	deadline := time.Now().Add(hold)
	if err := kit.Poll(ctx, pollInterval, hold+30*time.Second, app+": west holds v1 for "+hold.String(), func(ctx context.Context) error {
		s := story.Observe(ctx, lab, app)
		if s.Err != nil {
			return s.Err
		}
		if b := s.Build("v1"); b.State == "released" || b.State == "failed" || b.Failed {
			t.Fatalf("v1 is %q (failed %v %q), want it held\n%s", b.State, b.Failed, b.FailedReason, recordOf(app))
		}
		rss, err := replicaSetsOf(ctx, west, app, "v1")
		if err != nil {
			return err
		}
		if len(rss) > 0 {
			t.Fatalf("west got ReplicaSet %s of an arm64 build\n%s", rss[0].Name, recordOf(app))
		}
		if _, err := platformsCondition(ctx, app, metav1.ConditionFalse, "NoMatchingNode", held...); err != nil {
			t.Fatalf("%v\n%s", err, recordOf(app))
		}
		if err := runsOnlyOn(ctx, east, app, "v1", eastArm); err != nil {
			t.Fatalf("%v\n%s", err, recordOf(app))
		}
		if time.Now().Before(deadline) {
			return errors.New("watching")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("held in west for %s:\n%s", hold, recordOf(app))

	// West gets an arm64 node: the build goes on there, on it alone.
	westArm := addArmNode(west)
	gotNode := time.Now()
	kit.Eventually(t, time.Minute, app+": ImagePlatforms True once west has an arm64 node", func() error {
		_, err := platformsCondition(ctx, app, metav1.ConditionTrue, "Runnable")
		return err
	})
	if err := kit.Poll(ctx, pollInterval, time.Minute, app+": v1 runs in west on "+westArm+" alone", func(ctx context.Context) error {
		return runsOnlyOn(ctx, west, app, "v1", westArm)
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	if err := requiresArch(ctx, west, app, "v1", "arm64"); err != nil {
		t.Error(err)
	}
	until(t, 2*time.Minute, app, "v1 released in east and west", releasedEverywhere("v1", east.Name, west.Name))
	t.Logf("v1 released everywhere %s after west got %s", time.Since(gotNode).Round(100*time.Millisecond), westArm)
	for _, c := range []*fleet.Cluster{east, west} {
		if err := runsOnlyOn(ctx, c, app, "v1", "arm64-"+c.Name); err != nil {
			t.Error(err)
		}
	}
}

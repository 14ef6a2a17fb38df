package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// operatorUser is the delivery cluster user the RBAC test runs the operator as.
const operatorUser = "picchu-operator"

// operatorArgsEnv, when set, makes the test binary run the operator with
// these arguments (one a line) instead of the tests: a test runs the
// operator in a process of its own, so that nothing the process registers
// once (controller names, metrics) is left from another test.
const operatorArgsEnv = "PICCHU_TEST_OPERATOR_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(operatorArgsEnv); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := run(ctx, strings.Split(args, "\n")); err != nil {
			fmt.Fprintln(os.Stderr, "picchu:", err)
			os.Exit(1)
		}
		return
	}
	code := m.Run()
	if err := removeOperatorBuild(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// startOperator runs the operator with args in a child process, and stops
// it (SIGTERM) when the test ends. The returned function says whether it
// still runs, with the tail of its output when it does not.
func startOperator(t *testing.T, args ...string) func() error {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), operatorArgsEnv+"="+strings.Join(args, "\n"))
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			if waitErr != nil {
				t.Errorf("operator: %v\n%s", waitErr, out.tail(2000))
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("the operator did not stop within 30s of SIGTERM\n%s", out.tail(2000))
		}
		if t.Failed() {
			t.Logf("operator output:\n%s", out.tail(8000))
		}
	})
	return func() error {
		select {
		case <-exited:
			return fmt.Errorf("the operator exited: %v\n%s", waitErr, out.tail(2000))
		default:
			return nil
		}
	}
}

// lockedBuffer collects a process's output.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// size is how many bytes were written so far: a mark for since.
func (b *lockedBuffer) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// since returns what was written after mark.
func (b *lockedBuffer) since(mark int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()[mark:]
}

func (b *lockedBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// applyShippedRBAC creates config/rbac's roles and bindings on env's
// delivery cluster as kustomize would deploy them in env's namespace, bound
// to operatorUser instead of the operator's service account.
func applyShippedRBAC(ctx context.Context, t *testing.T, env *harness.Env) {
	t.Helper()
	for _, file := range []string{"role.yaml", "role_binding.yaml"} {
		f, err := os.Open(filepath.Join(kit.RepoRoot(), "config", "rbac", file))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if obj.GetNamespace() == "system" {
				obj.SetNamespace(env.Namespace)
			}
			if _, ok := obj.Object["subjects"]; ok {
				obj.Object["subjects"] = []any{map[string]any{
					"kind": "User", "name": operatorUser, "apiGroup": "rbac.authorization.k8s.io",
				}}
			}
			if err := env.Delivery.Client.Create(ctx, obj); err != nil {
				t.Fatalf("%s: creating %s %s: %v", file, obj.GetKind(), obj.GetName(), err)
			}
		}
	}
}

// TestRun_WorksWithTheShippedRBACAlone runs the operator as a user holding
// only config/rbac's permissions, with --namespaces: the user may not read
// Secrets outside its namespace, write kinds Picchu never writes, or hold
// leases elsewhere, and the operator still connects its cluster, elects
// itself, and deploys a build with its configSelector's Secret and
// ConfigMap, recording status and events.
func TestRun_WorksWithTheShippedRBACAlone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := harness.Start(ctx, harness.Options{Targets: 1})
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping API servers: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	applyShippedRBAC(ctx, t, env)
	user, err := env.Delivery.Env.AddUser(envtest.User{Name: operatorUser}, nil)
	if err != nil {
		t.Fatal(err)
	}
	as, err := client.New(user.Config(), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}

	// What the shipped RBAC does not allow.
	if err := as.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets in every namespace: %v, want Forbidden", err)
	}
	if err := as.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets of kube-system: %v, want Forbidden", err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "kube-system"}}
	if err := as.Create(ctx, lease); !apierrors.IsForbidden(err) {
		t.Errorf("creating a lease in kube-system: %v, want Forbidden", err)
	}
	for _, obj := range []client.Object{
		&picchuv1alpha1.ClusterSecrets{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: env.Namespace},
			Spec: picchuv1alpha1.ClusterSecretsSpec{Source: picchuv1alpha1.SecretSource{Namespace: "kube-system"}, Target: picchuv1alpha1.SecretTarget{Namespace: "x"}}},
		&picchuv1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Name: "mirror", Namespace: env.Namespace}, Spec: picchuv1alpha1.MirrorSpec{ClusterName: "mirror"}},
		&picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: env.Namespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: env.Namespace}},
	} {
		if err := as.Create(ctx, obj); !apierrors.IsForbidden(err) {
			t.Errorf("creating %T: %v, want Forbidden", obj, err)
		}
	}

	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigFile := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	running := startOperator(t,
		"--kubeconfig", kubeconfigFile,
		"--enable-webhooks=false",
		"--enable-leader-election",
		"--leader-election-namespace", env.Namespace,
		"--namespaces", env.Namespace,
		"--metrics-addr", freePort(t),
		"--health-probe-bind-address", freePort(t),
	)

	kit.Eventually(t, 30*time.Second, "the leader lease is held", func() error {
		if err := running(); err != nil {
			return err
		}
		return kit.LeaseHeld(ctx, env.Delivery.Client, client.ObjectKey{Namespace: env.Namespace, Name: leaderElectionID})
	})
	kit.Eventually(t, 30*time.Second, "the target cluster is Ready", func() error {
		return kit.ClusterReady(ctx, env.Delivery.Client, client.ObjectKeyFromObject(env.Targets[0].Cluster))
	})

	labels := map[string]string{"config": "demo-v1"}
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "demo-env", Namespace: env.Namespace, Labels: labels}, Data: map[string]string{"MODE": "rbac"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-secrets", Namespace: env.Namespace, Labels: labels}, Data: map[string][]byte{"TOKEN": []byte("t")}},
		&picchuv1alpha1.Revision{
			ObjectMeta: metav1.ObjectMeta{Name: "demo-v1", Namespace: env.Namespace},
			Spec: picchuv1alpha1.RevisionSpec{
				App: picchuv1alpha1.RevisionApp{Name: "demo", Tag: "v1", Image: "registry.example/demo:v1"},
				Targets: []picchuv1alpha1.RevisionTarget{{
					Name: "production", Fleet: env.Fleet,
					ConfigSelector: &metav1.LabelSelector{MatchLabels: labels},
					Scale:          picchuv1alpha1.ScaleInfo{Default: 1, Max: 1},
					Release:        picchuv1alpha1.ReleaseInfo{Eligible: true, Max: 100, Schedule: picchuv1alpha1.ScheduleAlways},
				}},
			},
		},
	} {
		if err := env.Delivery.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	target := env.Targets[0]
	kit.Eventually(t, 30*time.Second, "the build, its config and its status", func() error {
		if err := running(); err != nil {
			return err
		}
		ns := "demo-production"
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "v1"}, &appsv1.ReplicaSet{}); err != nil {
			return err
		}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "demo-env"}, &corev1.ConfigMap{}); err != nil {
			return err
		}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "demo-secrets"}, &corev1.Secret{}); err != nil {
			return err
		}
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "demo-production"}, rm); err != nil {
			return err
		}
		if len(rm.Status.Revisions) == 0 || len(rm.Finalizers) == 0 {
			return fmt.Errorf("release manager status %+v, finalizers %v", rm.Status.Revisions, rm.Finalizers)
		}
		rev := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "demo-v1"}, rev); err != nil {
			return err
		}
		if len(rev.Status.Targets) == 0 || rev.Labels[picchuv1alpha1.LabelApp] != "demo" {
			return fmt.Errorf("revision status %+v, labels %v", rev.Status.Targets, rev.Labels)
		}
		events := &eventsv1.EventList{}
		if err := env.Delivery.Client.List(ctx, events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Kind == "ReleaseManager" {
				return nil
			}
		}
		return fmt.Errorf("no event on the release manager among %d", len(events.Items))
	})
}

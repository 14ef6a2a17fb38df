// Package clustersecrets tests the ClusterSecrets controller, in the
// operator as main assembles it, against a real delivery API server and
// three real target API servers: target-0 and target-1 enabled, target-2
// registered but disabled, all three labelled secrets=yes.
package clustersecrets

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/clustersecrets"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

var env *harness.Env

// selectable is the label of the Clusters the tests' ClusterSecrets select.
const selectable = "secrets"

// timeout bounds every wait on the operator.
const timeout = 30 * time.Second

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 3}, setup)
}

func setup(s *harness.Suite) error {
	env = s.Env
	for i, target := range env.Targets {
		target.Cluster.Labels[selectable] = "yes"
		// target-2 is registered, labelled as the others, and disabled.
		target.Cluster.Spec.Enabled = i != 2
		if err := env.Delivery.Client.Update(s.Ctx, target.Cluster); err != nil {
			return fmt.Errorf("labelling cluster %s: %w", target.Name, err)
		}
	}
	for _, ns := range []string{elsewhere, unwatched} {
		if err := env.Delivery.Client.Create(s.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	// The operator reads the Secrets of env's namespace and elsewhere.
	var err error
	running, err = inprocess.Run(s, operator.Options{
		Namespaces: []string{elsewhere},
		// Short, so that a cluster taken away is seen back soon.
		ClusterHealthPeriod: 2 * time.Second,
		ClusterTimeout:      5 * time.Second,
		// Long, so that only events can explain a prompt copy.
		SyncPeriod:    10 * time.Minute,
		WrapTransport: targetWrites.wrap,
	})
	return err
}

// Namespaces of the delivery cluster besides env's: the operator reads
// the Secrets of elsewhere, and not those of unwatched.
const (
	elsewhere = "secrets-elsewhere"
	unwatched = "secrets-unwatched"
)

// running is the operator; a test may restart it with other options.
var running *inprocess.Runner

// writes counts the requests that write Secrets or namespaces to target
// clusters, made by the operator's clients.
type writes struct {
	mu sync.Mutex
	n  int
}

var targetWrites = &writes{}

func (w *writes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet && (strings.Contains(req.URL.Path, "/secrets") || strings.Contains(req.URL.Path, "/namespaces")) {
			w.mu.Lock()
			w.n++
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (w *writes) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// enabled are the targets whose Clusters are enabled.
func enabled() []*harness.Target { return env.Targets[:2] }

// source creates a Secret in the delivery cluster's namespace, deleted
// when the test ends.
func source(t *testing.T, name string, labels map[string]string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	t.Helper()
	return sourceIn(t, env.Namespace, name, labels, typ, data)
}

// sourceIn creates a Secret in namespace of the delivery cluster, deleted
// when the test ends.
func sourceIn(t *testing.T, namespace, name string, labels map[string]string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Type:       typ,
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	if err := env.Delivery.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Delivery.Client.Delete(context.Background(), s); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	return s
}

// create creates a ClusterSecrets, deleted (and its deletion waited for,
// so that its copies are gone) when the test ends.
func create(t *testing.T, name string, spec picchuv1alpha1.ClusterSecretsSpec) *picchuv1alpha1.ClusterSecrets {
	t.Helper()
	cs := &picchuv1alpha1.ClusterSecrets{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace}, Spec: spec}
	if err := env.Delivery.Client.Create(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remove(t, cs) })
	return cs
}

// remove deletes a ClusterSecrets and waits until it is gone.
func remove(t *testing.T, cs *picchuv1alpha1.ClusterSecrets) {
	t.Helper()
	ctx := context.Background()
	if err := env.Delivery.Client.Delete(ctx, cs); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, timeout, "clustersecrets "+cs.Name+" gone", func() error {
		err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(cs), &picchuv1alpha1.ClusterSecrets{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there: %s", readyOf(t, cs.Name))
	})
}

// update changes a ClusterSecrets' spec.
func update(t *testing.T, name string, change func(*picchuv1alpha1.ClusterSecretsSpec)) {
	t.Helper()
	// The controller writes status between our read and our write; read
	// again and retry on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cs := get(t, name)
		change(&cs.Spec)
		return env.Delivery.Client.Update(context.Background(), cs)
	}); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, name string) *picchuv1alpha1.ClusterSecrets {
	t.Helper()
	cs := &picchuv1alpha1.ClusterSecrets{}
	if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: name}, cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// readyOf describes the Ready condition of a ClusterSecrets.
func readyOf(t *testing.T, name string) string {
	t.Helper()
	cs := &picchuv1alpha1.ClusterSecrets{}
	if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: name}, cs); err != nil {
		return err.Error()
	}
	c := meta.FindStatusCondition(cs.Status.Conditions, picchuv1alpha1.ConditionReady)
	if c == nil {
		return "no Ready condition"
	}
	return fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
}

// condition waits until the ClusterSecrets' condition of type has status
// and reason, for its current generation, and its message holds each of
// contains; it returns the ClusterSecrets.
func condition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason string, contains ...string) *picchuv1alpha1.ClusterSecrets {
	t.Helper()
	var cs *picchuv1alpha1.ClusterSecrets
	kit.Eventually(t, timeout, fmt.Sprintf("%s %s=%s (%s)", name, typ, status, reason), func() error {
		cs = &picchuv1alpha1.ClusterSecrets{}
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: name}, cs); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cs.Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason || cs.Status.ObservedGeneration != cs.Generation ||
			c.ObservedGeneration != cs.Generation {
			return fmt.Errorf("generation %d, observed %d, conditions %+v", cs.Generation, cs.Status.ObservedGeneration, cs.Status.Conditions)
		}
		for _, s := range contains {
			if !strings.Contains(c.Message, s) {
				return fmt.Errorf("message %q lacks %q", c.Message, s)
			}
		}
		return nil
	})
	return cs
}

// copyOn reads a Secret on a target cluster, with the test's own client.
func copyOn(ctx context.Context, target *harness.Target, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := target.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return nil, err
	}
	return s, nil
}

// gone waits until the Secret is on none of targets.
func gone(t *testing.T, targets []*harness.Target, namespace, name string) {
	t.Helper()
	for _, target := range targets {
		kit.Eventually(t, timeout, fmt.Sprintf("%s/%s gone from %s", namespace, name, target.Name), func() error {
			_, err := copyOn(context.Background(), target, namespace, name)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("still there")
		})
	}
}

// events returns the notes of the events on a ClusterSecrets.
func events(t *testing.T, name string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := env.Delivery.Client.List(context.Background(), list, client.InNamespace(env.Namespace)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ClusterSecrets" && e.Regarding.Name == name {
			notes = append(notes, e.Reason+": "+e.Note)
		}
	}
	return notes
}

// ownerLabel is the ownership label the copies of a ClusterSecrets carry.
func ownerLabel(name string) map[string]string {
	return map[string]string{clustersecrets.LabelOwner: clustersecrets.OwnerLabelValue(env.Namespace, name)}
}

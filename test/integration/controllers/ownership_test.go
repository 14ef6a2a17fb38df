package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// theirs is a namespace someone else made on every target, with a Secret
// in it, as it was before Picchu saw it.
type theirs struct {
	name string
	// before are the namespace's and the Secret's stored JSON, by target.
	before map[string][2][]byte
}

// theirNamespace creates, on every target, namespace name with labels and
// an annotation of its owner's and a Secret, and records them.
func theirNamespace(t *testing.T, name string, labels map[string]string) *theirs {
	t.Helper()
	ctx := context.Background()
	out := &theirs{name: name, before: map[string][2][]byte{}}
	for _, target := range env.Targets {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{"owner": "platform-team"}}}
		if err := target.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: name, Labels: map[string]string{"team": "platform"}},
			Data: map[string][]byte{"ca.key": []byte("private")}}
		if err := target.Client.Create(ctx, secret); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
		out.before[target.Name] = out.read(t, target)
	}
	return out
}

// read returns the stored JSON of the namespace and its Secret on target.
func (th *theirs) read(t *testing.T, target *harness.Target) [2][]byte {
	t.Helper()
	ctx := context.Background()
	var out [2][]byte
	for i, obj := range []client.Object{&corev1.Namespace{}, &corev1.Secret{}} {
		key := client.ObjectKey{Name: th.name}
		if i == 1 {
			key = client.ObjectKey{Namespace: th.name, Name: "ca"}
		}
		if err := target.Client.Get(ctx, key, obj); err != nil {
			t.Fatalf("%s: reading %T %s: %v", target.Name, obj, key, err)
		}
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = data
	}
	return out
}

// untouched checks, on every target, that the namespace and its Secret are
// byte for byte what they were (resourceVersion, labels, annotations and
// contents included), and that nothing of Picchu's runs in the namespace.
func (th *theirs) untouched(t *testing.T) {
	t.Helper()
	for _, target := range env.Targets {
		now := th.read(t, target)
		for i, what := range []string{"namespace", "Secret"} {
			if string(now[i]) != string(th.before[target.Name][i]) {
				t.Errorf("%s: their %s %s changed:\nbefore %s\nafter  %s", target.Name, what, th.name, th.before[target.Name][i], now[i])
			}
		}
		rss := &appsv1.ReplicaSetList{}
		if err := target.Client.List(context.Background(), rss, client.InNamespace(th.name)); err != nil {
			t.Fatal(err)
		}
		if len(rss.Items) > 0 {
			t.Errorf("%s: %d ReplicaSets of Picchu's run in %s", target.Name, len(rss.Items), th.name)
		}
	}
}

// revisionIn is appRevision of app in target instead of production.
func revisionIn(app, target, tag string) *picchuv1alpha1.Revision {
	rev := appRevision(app, tag, env.Fleet)
	rev.Spec.Targets[0].Name = target
	return rev
}

// heldRevision waits until the Revision is Stalled for reason, with a
// message that names each of names, and returns the message.
func heldRevision(t *testing.T, name, reason string, names ...string) string {
	t.Helper()
	c := revisionCondition(t, name, picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, reason, "")
	for _, n := range names {
		if !strings.Contains(c.Message, n) {
			t.Errorf("Stalled message %q does not name %q", c.Message, n)
		}
	}
	return c.Message
}

// deleteAndWait deletes obj from the delivery cluster and waits until it
// and the ReleaseManager rmName (finalizer included) are gone.
func deleteAndWait(t *testing.T, obj client.Object, rmName string) {
	t.Helper()
	ctx := context.Background()
	if err := env.Delivery.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 30*time.Second, rmName+" gone", func() error {
		for _, o := range []client.Object{obj, &picchuv1alpha1.ReleaseManager{ObjectMeta: metav1.ObjectMeta{Name: rmName, Namespace: env.Namespace}}} {
			err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T %s still there (%v)", o, o.GetName(), err)
			}
		}
		return nil
	})
}

// TestReleaseManager_NeverTakesOverANamespaceItDidNotCreate gives every
// target a namespace "payments-production" that a platform team made, with
// a Secret, and applies app "payments": the operator, wired as main wires
// it (its target caches hold only Picchu's objects), holds the build with a
// condition naming the namespace and its cluster, on the ReleaseManager and
// on the Revision, and when the Revision and then the app go, leaves the
// namespace and its Secret as they were, byte for byte.
func TestReleaseManager_NeverTakesOverANamespaceItDidNotCreate(t *testing.T) {
	const app = "payments"
	ns := theirNamespace(t, app+"-production", map[string]string{"team": "payments"})
	config(t, app, "v1")
	rev := appRevision(app, "v1", env.Fleet)
	if err := env.Delivery.Client.Create(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 30*time.Second, "release manager stalled, naming the namespace", func() error {
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: app + "-production"}, rm); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionStalled)
		if c == nil || c.Reason != picchuv1alpha1.ReasonNotOwned || !strings.Contains(c.Message, "Namespace /"+ns.name) ||
			!strings.Contains(c.Message, "cluster "+env.Targets[0].Name) {
			return fmt.Errorf("stalled %+v", c)
		}
		return nil
	})
	heldRevision(t, rev.Name, picchuv1alpha1.ReasonNotOwned, ns.name, "no Picchu app label")
	ns.untouched(t)

	deleteAndWait(t, rev, app+"-production")
	ns.untouched(t)
}

// TestRevision_ProtectedNamespaceIsNeverTouched gives every target an
// istio-system namespace that Istio's installer made, with a Secret, and
// applies app "istio" in target "system" (admission would refuse it; this
// suite runs without webhooks, as when they are down): the Revision is held
// naming the namespace, no ReleaseManager is made, and when the Revision
// goes the namespace is as it was. A ReleaseManager made by hand for it
// touches no cluster either, and deleting it deletes nothing.
func TestRevision_ProtectedNamespaceIsNeverTouched(t *testing.T) {
	ctx := context.Background()
	ns := theirNamespace(t, "istio-system", map[string]string{"istio-injection": "disabled"})
	config(t, "istio", "v1")
	rev := revisionIn("istio", "system", "v1")
	if err := env.Delivery.Client.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	heldRevision(t, rev.Name, picchuv1alpha1.ReasonProtectedNamespace, `"istio-system"`)
	rmKey := client.ObjectKey{Namespace: env.Namespace, Name: "istio-system"}
	if err := env.Delivery.Client.Get(ctx, rmKey, &picchuv1alpha1.ReleaseManager{}); !apierrors.IsNotFound(err) {
		t.Errorf("release manager of a protected namespace: %v, want none", err)
	}
	ns.untouched(t)
	deleteAndWait(t, rev, rmKey.Name)

	rm := &picchuv1alpha1.ReleaseManager{
		ObjectMeta: metav1.ObjectMeta{Name: rmKey.Name, Namespace: rmKey.Namespace},
		Spec:       picchuv1alpha1.ReleaseManagerSpec{App: "istio", Target: "system", Fleet: env.Fleet},
	}
	if err := env.Delivery.Client.Create(ctx, rm); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 20*time.Second, "hand-made release manager stalled", func() error {
		if err := env.Delivery.Client.Get(ctx, rmKey, rm); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionStalled)
		if c == nil || c.Reason != picchuv1alpha1.ReasonProtectedNamespace || !strings.Contains(c.Message, `"istio-system"`) {
			return fmt.Errorf("stalled %+v", c)
		}
		return nil
	})
	if len(rm.Finalizers) != 0 {
		t.Errorf("finalizers %v on a release manager that touches no cluster", rm.Finalizers)
	}
	deleteAndWait(t, rm, rmKey.Name)
	ns.untouched(t)
}

// TestReleaseManager_NeverWritesOverAnotherPicchusObjects gives every target
// a namespace another Picchu made for an app of the same name (its app and
// target labels, and its marker): this Picchu holds the build, naming the
// other, and leaves the namespace alone, deletion included.
func TestReleaseManager_NeverWritesOverAnotherPicchusObjects(t *testing.T) {
	const app = "twin"
	ns := theirNamespace(t, app+"-production", map[string]string{
		picchuv1alpha1.LabelApp: app, picchuv1alpha1.LabelTarget: "production",
		picchuv1alpha1.LabelInstance: "another-picchu", picchuv1alpha1.LabelDeliveryNamespace: env.Namespace,
	})
	config(t, app, "v1")
	rev := appRevision(app, "v1", env.Fleet)
	if err := env.Delivery.Client.Create(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	heldRevision(t, rev.Name, picchuv1alpha1.ReasonNotOwned, ns.name, `another Picchu wrote it (instance "another-picchu"`)
	ns.untouched(t)
	deleteAndWait(t, rev, app+"-production")
	ns.untouched(t)
}

// TestReleaseManager_MarksWhatItWritesAndAdoptsItsOlderObjects gives every
// target a namespace labelled for app "legacy" by an earlier Picchu, which
// marked nothing: the operator adopts it, and every object it writes for
// the app carries its instance (the delivery cluster's kube-system UID, the
// default) and delivery namespace.
func TestReleaseManager_MarksWhatItWritesAndAdoptsItsOlderObjects(t *testing.T) {
	ctx := context.Background()
	const app = "legacy"
	theirNamespace(t, app+"-production", map[string]string{picchuv1alpha1.LabelApp: app, picchuv1alpha1.LabelTarget: "production"})
	system := &corev1.Namespace{}
	if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, system); err != nil {
		t.Fatal(err)
	}
	marker := map[string]string{picchuv1alpha1.LabelInstance: string(system.UID), picchuv1alpha1.LabelDeliveryNamespace: env.Namespace}
	config(t, app, "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision(app, "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	buildState(t, 30*time.Second, app, "v1", "released")
	for _, target := range env.Targets {
		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app + "-production"}},
			&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: app + "-production", Name: "v1"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: app + "-production", Name: app}},
		} {
			kit.Eventually(t, 10*time.Second, fmt.Sprintf("%s: %T %s marked", target.Name, obj, obj.GetName()), func() error {
				if err := target.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
					return err
				}
				got := map[string]string{}
				for k := range marker {
					got[k] = obj.GetLabels()[k]
				}
				if !maps.Equal(got, marker) {
					return fmt.Errorf("marker labels %v, want %v", got, marker)
				}
				return nil
			})
		}
	}
}

// TestRevision_AnAddOnsNamespaceIsNeverTaken: app "cert" in target
// "manager" would be deployed in cert-manager, where cert-manager installs
// after a cluster joins the fleet, long after Picchu made the namespace and
// called it the app's. It is protected by default: the Revision is held
// naming the namespace, no ReleaseManager is made, and no cluster has the
// namespace.
func TestRevision_AnAddOnsNamespaceIsNeverTaken(t *testing.T) {
	ctx := context.Background()
	config(t, "cert", "v1")
	rev := revisionIn("cert", "manager", "v1")
	if err := env.Delivery.Client.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	heldRevision(t, rev.Name, picchuv1alpha1.ReasonProtectedNamespace, `"cert-manager"`)
	rmKey := client.ObjectKey{Namespace: env.Namespace, Name: "cert-manager"}
	if err := env.Delivery.Client.Get(ctx, rmKey, &picchuv1alpha1.ReleaseManager{}); !apierrors.IsNotFound(err) {
		t.Errorf("release manager of an add-on's namespace: %v, want none", err)
	}
	for _, target := range env.Targets {
		if err := target.Client.Get(ctx, client.ObjectKey{Name: "cert-manager"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace cert-manager on %s: %v, want none", target.Name, err)
		}
	}
	deleteAndWait(t, rev, rmKey.Name)
}

// policedNamespace is a delivery namespace whose apps the suite's
// --app-namespace-policy keeps to namespaces named after it.
const policedNamespace = "team-a"

// TestRevision_ANamespaceOutsideThePolicyIsNeverTaken: with
// --app-namespace-policy team-a={namespace}-*, a Revision of delivery
// namespace team-a whose app would live in web-production (admission
// refuses it; this suite runs without webhooks) is held, NamespaceNotAllowed,
// naming the namespace and what the policy allows, and gets no
// ReleaseManager; a ReleaseManager made by hand there is Stalled alike. An
// app of team-a in team-a-web-production gets its ReleaseManager.
func TestRevision_ANamespaceOutsideThePolicyIsNeverTaken(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policedNamespace}}
	if err := env.Delivery.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	outside := revisionIn("web", "production", "v1")
	outside.Namespace = policedNamespace
	inside := revisionIn("team-a-web", "production", "v1")
	inside.Namespace = policedNamespace
	for _, rev := range []*picchuv1alpha1.Revision{outside, inside} {
		if err := env.Delivery.Client.Create(ctx, rev); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Delivery.Client.Delete(context.Background(), rev) })
	}
	kit.Eventually(t, 20*time.Second, "web held outside the policy", func() error {
		rev := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(outside), rev); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rev.Status.Conditions, picchuv1alpha1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != picchuv1alpha1.ReasonNamespaceNotAllowed ||
			!strings.Contains(c.Message, `"web-production"`) || !strings.Contains(c.Message, "team-a-*") {
			return fmt.Errorf("stalled %+v", c)
		}
		return nil
	})
	if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: policedNamespace, Name: "web-production"}, &picchuv1alpha1.ReleaseManager{}); !apierrors.IsNotFound(err) {
		t.Errorf("release manager outside the policy: %v, want none", err)
	}
	kit.Eventually(t, 20*time.Second, "team-a-web's release manager", func() error {
		return env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: policedNamespace, Name: "team-a-web-production"}, &picchuv1alpha1.ReleaseManager{})
	})

	rm := &picchuv1alpha1.ReleaseManager{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-production", Namespace: policedNamespace},
		Spec:       picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: "production", Fleet: env.Fleet},
	}
	if err := env.Delivery.Client.Create(ctx, rm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Delivery.Client.Delete(context.Background(), rm) })
	kit.Eventually(t, 20*time.Second, "hand-made release manager stalled", func() error {
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(rm), rm); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionStalled)
		if c == nil || c.Reason != picchuv1alpha1.ReasonNamespaceNotAllowed || !strings.Contains(c.Message, `"shop-production"`) {
			return fmt.Errorf("stalled %+v", c)
		}
		return nil
	})
}

// TestReleaseManager_LeavesANamespaceHoldingWhatItDidNotCreate: an add-on
// installed a ConfigMap into app "shared"'s namespace after Picchu made it.
// When the app goes, Picchu deletes its own objects there (the build's
// ReplicaSet, the Service) and leaves the namespace and the ConfigMap, with
// a NamespaceLeft event naming the ConfigMap and the cluster.
func TestReleaseManager_LeavesANamespaceHoldingWhatItDidNotCreate(t *testing.T) {
	ctx := context.Background()
	const app = "shared"
	ns := app + "-production"
	config(t, app, "v1")
	rev := appRevision(app, "v1", env.Fleet)
	if err := env.Delivery.Client.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		replicaSet(t, target, app, "v1")
		kit.Eventually(t, 30*time.Second, target.Name+": the app's Service", func() error {
			return target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, &corev1.Service{})
		})
		addon := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addon-settings", Labels: map[string]string{"team": "platform"}},
			Data: map[string]string{"level": "debug"}}
		if err := target.Client.Create(ctx, addon); err != nil {
			t.Fatal(err)
		}
	}
	deleteAndWait(t, rev, ns)
	for _, target := range env.Targets {
		live := &corev1.Namespace{}
		if err := target.Client.Get(ctx, client.ObjectKey{Name: ns}, live); err != nil || !live.DeletionTimestamp.IsZero() {
			t.Errorf("%s: namespace %s holding an add-on's ConfigMap: %v, deleted at %v; want it left", target.Name, ns, err, live.DeletionTimestamp)
		}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "addon-settings"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("%s: the add-on's ConfigMap: %v", target.Name, err)
		}
		for _, obj := range []client.Object{&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "v1"}}, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: app}}} {
			kit.Eventually(t, 10*time.Second, fmt.Sprintf("%s: %T %s deleted", target.Name, obj, obj.GetName()), func() error {
				err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.GetName()}, obj)
				if apierrors.IsNotFound(err) || err == nil && !obj.GetDeletionTimestamp().IsZero() {
					return nil
				}
				return fmt.Errorf("still there: %v", err)
			})
		}
	}
	kit.Eventually(t, 10*time.Second, "a NamespaceLeft event per cluster", func() error {
		events := &eventsv1.EventList{}
		if err := env.Delivery.Client.List(ctx, events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, target := range env.Targets {
			if !slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
				return e.Reason == "NamespaceLeft" && e.Regarding.Name == ns && strings.Contains(e.Note, "ConfigMap/addon-settings") &&
					strings.Contains(e.Note, "cluster "+target.Name)
			}) {
				var seen []string
				for _, e := range events.Items {
					if e.Regarding.Name == ns {
						seen = append(seen, e.Reason+": "+e.Note)
					}
				}
				return fmt.Errorf("no NamespaceLeft event for %s naming ConfigMap/addon-settings; %s's events: %q", target.Name, ns, seen)
			}
		}
		return nil
	})
}

package clustersecrets

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/clustersecrets"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// specOf is a ClusterSecrets' spec copying the Secrets labelled copy=<label>
// to namespace on the selectable clusters.
func specOf(label, namespace string) picchuv1alpha1.ClusterSecretsSpec {
	return picchuv1alpha1.ClusterSecretsSpec{
		Source: picchuv1alpha1.SecretSource{Namespace: env.Namespace, LabelSelector: "copy=" + label},
		Target: picchuv1alpha1.SecretTarget{
			Namespace:     namespace,
			LabelSelector: selectable + "=yes",
			Labels:        map[string]string{"team": "platform"},
			Annotations:   map[string]string{"note": "copied by picchu"},
		},
	}
}

// landed waits until every target in targets has the copy of src in
// namespace, as the spec specOf makes says: same name, type and data, the
// spec's labels and annotations with the ownership marks of owner.
func landed(t *testing.T, targets []*harness.Target, owner, namespace string, src *corev1.Secret) {
	t.Helper()
	wantLabels := map[string]string{"team": "platform"}
	maps.Copy(wantLabels, ownerLabel(owner))
	wantAnnotations := map[string]string{"note": "copied by picchu", clustersecrets.AnnotationOwner: env.Namespace + "/" + owner}
	for _, target := range targets {
		kit.Eventually(t, timeout, fmt.Sprintf("%s/%s on %s", namespace, src.Name, target.Name), func() error {
			c, err := copyOn(context.Background(), target, namespace, src.Name)
			if err != nil {
				return err
			}
			if c.Type != src.Type {
				return fmt.Errorf("type %s, want %s", c.Type, src.Type)
			}
			if !maps.EqualFunc(c.Data, src.Data, bytes.Equal) {
				return fmt.Errorf("data differs (keys %v)", slices.Sorted(maps.Keys(c.Data)))
			}
			if !maps.Equal(c.Labels, wantLabels) {
				return fmt.Errorf("labels %v, want %v", c.Labels, wantLabels)
			}
			if !maps.Equal(c.Annotations, wantAnnotations) {
				return fmt.Errorf("annotations %v, want %v", c.Annotations, wantAnnotations)
			}
			return nil
		})
	}
}

func TestClusterSecrets_CopiesToEverySelectedEnabledCluster(t *testing.T) {
	const ns = "shared-copies"
	db := source(t, "copies-db", map[string]string{"copy": "copies", "origin": "delivery"}, corev1.SecretTypeOpaque,
		map[string]string{"password": "copies-s3cr3t"})
	tls := source(t, "copies-tls", map[string]string{"copy": "copies"}, corev1.SecretTypeTLS,
		map[string]string{corev1.TLSCertKey: "cert", corev1.TLSPrivateKeyKey: "key"})
	source(t, "copies-unlabelled", nil, corev1.SecretTypeOpaque, map[string]string{"x": "y"})
	create(t, "copies", specOf("copies", ns))

	landed(t, enabled(), "copies", ns, db)
	landed(t, enabled(), "copies", ns, tls)
	cs := condition(t, "copies", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced,
		"2 Secrets copied to target-0, target-1")
	if !slices.Equal(cs.Status.Secrets, []string{"copies-db", "copies-tls"}) {
		t.Errorf("status.secrets %v", cs.Status.Secrets)
	}
	if len(cs.Finalizers) != 1 || cs.Finalizers[0] != clustersecrets.Finalizer {
		t.Errorf("finalizers %v", cs.Finalizers)
	}
	ctx := context.Background()
	for _, target := range enabled() {
		if _, err := copyOn(ctx, target, ns, "copies-unlabelled"); !apierrors.IsNotFound(err) {
			t.Errorf("%s: an unselected Secret: %v", target.Name, err)
		}
		n := &corev1.Namespace{}
		if err := target.Client.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			t.Fatal(err)
		}
		if n.Labels[clustersecrets.LabelOwner] == "" || n.Annotations[clustersecrets.AnnotationOwner] != env.Namespace+"/copies" {
			t.Errorf("%s: namespace %s is not marked as created by Picchu: %v %v", target.Name, ns, n.Labels, n.Annotations)
		}
	}
	// target-2 is selected by its labels, and disabled.
	if err := env.Targets[2].Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the disabled cluster got the namespace: %v", err)
	}

	// The steady state: a run that finds every copy in place writes nothing
	// to any target. A credentials Secret the selector selects changes the
	// status (it is named as withheld), and only the status.
	before := targetWrites.count()
	source(t, "copies-credentials", map[string]string{"copy": "copies", access.LabelCredentials: "true"}, corev1.SecretTypeOpaque,
		map[string]string{"token": "never-copied"})
	condition(t, "copies", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced,
		"never copied, as they hold credentials: copies-credentials (labelled "+access.LabelCredentials+")")
	if after := targetWrites.count(); after != before {
		t.Errorf("%d writes to target clusters in a run with nothing to copy", after-before)
	}
	// A bootstrap token joins nodes to the delivery cluster: never copied.
	source(t, "bootstrap-token-abcdef", map[string]string{"copy": "copies"}, corev1.SecretTypeBootstrapToken,
		map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef"})
	condition(t, "copies", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced,
		"bootstrap-token-abcdef (a bootstrap token")
	for _, target := range env.Targets {
		for _, name := range []string{"copies-credentials", "bootstrap-token-abcdef"} {
			if _, err := copyOn(ctx, target, ns, name); !apierrors.IsNotFound(err) {
				t.Errorf("%s: credentials %s copied: %v", target.Name, name, err)
			}
		}
	}
}

// TestClusterSecrets_AProtectedTargetNamespaceIsStalled: a ClusterSecrets
// that reaches the API server with its webhook off, and copies into a
// protected namespace, is Stalled naming it, and writes nothing there.
func TestClusterSecrets_AProtectedTargetNamespaceIsStalled(t *testing.T) {
	ctx := context.Background()
	src := source(t, "protected-db", map[string]string{"copy": "protected"}, corev1.SecretTypeOpaque, map[string]string{"password": "p"})
	create(t, "protected", specOf("protected", "kube-system"))
	condition(t, "protected", picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, picchuv1alpha1.ReasonProtectedNamespace,
		`spec.target.namespace: kube-system is protected ("kube-*")`)
	for _, target := range env.Targets {
		if _, err := copyOn(ctx, target, "kube-system", src.Name); !apierrors.IsNotFound(err) {
			t.Errorf("%s: copied into kube-system: %v", target.Name, err)
		}
	}
}

func TestClusterSecrets_ARotatedSecretReachesEveryClusterWithinSeconds(t *testing.T) {
	const ns = "shared-rotation"
	db := source(t, "rotation-db", map[string]string{"copy": "rotation"}, corev1.SecretTypeOpaque,
		map[string]string{"password": "rotation-v1"})
	create(t, "rotation", specOf("rotation", ns))
	landed(t, enabled(), "rotation", ns, db)
	condition(t, "rotation", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced)

	ctx := context.Background()
	for round := range 3 {
		value := fmt.Sprintf("rotation-v%d", round+2)
		db.Data = map[string][]byte{"password": []byte(value), "rotated": []byte("yes")}
		start := time.Now()
		if err := env.Delivery.Client.Update(ctx, db); err != nil {
			t.Fatal(err)
		}
		err := kit.Poll(ctx, 10*time.Millisecond, 10*time.Second, "the rotated secret on every cluster", func(ctx context.Context) error {
			for _, target := range enabled() {
				c, err := copyOn(ctx, target, ns, db.Name)
				if err != nil {
					return err
				}
				if string(c.Data["password"]) != value || string(c.Data["rotated"]) != "yes" {
					return fmt.Errorf("%s has the old value", target.Name)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rotation %d reached target-0 and target-1 in %s", round+1, time.Since(start).Round(time.Millisecond))
	}
}

func TestClusterSecrets_PutsBackACopyChangedOnATarget(t *testing.T) {
	const ns = "shared-drift"
	db := source(t, "drift-db", map[string]string{"copy": "drift"}, corev1.SecretTypeOpaque, map[string]string{"a": "1"})
	create(t, "drift", specOf("drift", ns))
	landed(t, enabled(), "drift", ns, db)
	ctx := context.Background()

	// Deleted on target-0, its data and labels changed on target-1.
	deleted, err := copyOn(ctx, env.Targets[0], ns, db.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Targets[0].Client.Delete(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	changed, err := copyOn(ctx, env.Targets[1], ns, db.Name)
	if err != nil {
		t.Fatal(err)
	}
	changed.Data["a"] = []byte("tampered")
	changed.Labels["extra"] = "x"
	if err := env.Targets[1].Client.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	landed(t, enabled(), "drift", ns, db)

	// Its ownership label removed: it leaves the cache of copies, and is
	// still recognised as Picchu's by its annotation.
	unlabelled, err := copyOn(ctx, env.Targets[0], ns, db.Name)
	if err != nil {
		t.Fatal(err)
	}
	delete(unlabelled.Labels, clustersecrets.LabelOwner)
	if err := env.Targets[0].Client.Update(ctx, unlabelled); err != nil {
		t.Fatal(err)
	}
	landed(t, enabled(), "drift", ns, db)
	condition(t, "drift", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced)
}

func TestClusterSecrets_RemovesWhatIsNoLongerSelected(t *testing.T) {
	const ns = "shared-unselected"
	db := source(t, "unselected-db", map[string]string{"copy": "unselected"}, corev1.SecretTypeOpaque, map[string]string{"a": "1"})
	tls := source(t, "unselected-tls", map[string]string{"copy": "unselected"}, corev1.SecretTypeTLS,
		map[string]string{corev1.TLSCertKey: "cert", corev1.TLSPrivateKeyKey: "key"})
	gen := source(t, "unselected-gen", map[string]string{"copy": "unselected"}, corev1.SecretTypeOpaque, map[string]string{"b": "2"})
	create(t, "unselected", specOf("unselected", ns))
	for _, s := range []*corev1.Secret{db, tls, gen} {
		landed(t, enabled(), "unselected", ns, s)
	}
	ctx := context.Background()

	// A source relabelled out of the selector.
	tls.Labels = nil
	if err := env.Delivery.Client.Update(ctx, tls); err != nil {
		t.Fatal(err)
	}
	gone(t, enabled(), ns, tls.Name)
	// A source deleted.
	if err := env.Delivery.Client.Delete(ctx, gen); err != nil {
		t.Fatal(err)
	}
	gone(t, enabled(), ns, gen.Name)
	cs := condition(t, "unselected", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced, "1 Secret copied")
	if !slices.Equal(cs.Status.Secrets, []string{db.Name}) {
		t.Errorf("status.secrets %v", cs.Status.Secrets)
	}
	landed(t, enabled(), "unselected", ns, db)

	// A field selector, applied in memory: only db.
	source(t, "unselected-other", map[string]string{"copy": "unselected"}, corev1.SecretTypeOpaque, map[string]string{"c": "3"})
	update(t, "unselected", func(s *picchuv1alpha1.ClusterSecretsSpec) { s.Source.FieldSelector = "metadata.name=" + db.Name })
	condition(t, "unselected", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced, "1 Secret copied")
	gone(t, enabled(), ns, "unselected-other")
	landed(t, enabled(), "unselected", ns, db)

	// A cluster no longer selected loses its copies; the other keeps them.
	update(t, "unselected", func(s *picchuv1alpha1.ClusterSecretsSpec) { s.Target.FieldSelector = "metadata.name!=target-1" })
	gone(t, env.Targets[1:2], ns, db.Name)
	condition(t, "unselected", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced,
		"1 Secret copied to target-0")
	landed(t, env.Targets[:1], "unselected", ns, db)

	// The target namespace moved: the copies move with it.
	update(t, "unselected", func(s *picchuv1alpha1.ClusterSecretsSpec) { s.Target.Namespace = ns + "-moved" })
	landed(t, env.Targets[:1], "unselected", ns+"-moved", db)
	gone(t, env.Targets[:1], ns, db.Name)
}

func TestClusterSecrets_DeletingItRemovesTheCopies(t *testing.T) {
	const ns = "shared-deletion"
	db := source(t, "deletion-db", map[string]string{"copy": "deletion"}, corev1.SecretTypeOpaque, map[string]string{"a": "1"})
	cs := create(t, "deletion", specOf("deletion", ns))
	landed(t, enabled(), "deletion", ns, db)
	// A copy another ClusterSecrets made in the same namespace stays.
	other := source(t, "deletion-other", map[string]string{"copy": "deletion-other"}, corev1.SecretTypeOpaque, map[string]string{"b": "2"})
	create(t, "deletion-other", specOf("deletion-other", ns))
	landed(t, enabled(), "deletion-other", ns, other)

	remove(t, cs)
	gone(t, enabled(), ns, db.Name)
	ctx := context.Background()
	for _, target := range enabled() {
		if _, err := copyOn(ctx, target, ns, other.Name); err != nil {
			t.Errorf("%s: another ClusterSecrets' copy: %v", target.Name, err)
		}
		// The namespace Picchu created stays: others may have put things in it.
		if err := target.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err != nil {
			t.Errorf("%s: namespace %s: %v", target.Name, ns, err)
		}
	}
	notes := strings.Join(events(t, "deletion"), "\n")
	if !strings.Contains(notes, "deleted "+ns+"/"+db.Name) {
		t.Errorf("no event says the copies were removed:\n%s", notes)
	}
}

func TestClusterSecrets_NeverAdoptsOrDeletesWhatItDidNotCreate(t *testing.T) {
	const ns = "shared-foreign"
	ctx := context.Background()
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "foreign-db", Namespace: ns}, Data: map[string][]byte{"mine": []byte("yes")}}
	target := env.Targets[0]
	if err := target.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := target.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	db := source(t, "foreign-db", map[string]string{"copy": "foreign"}, corev1.SecretTypeOpaque, map[string]string{"a": "1"})
	cs := create(t, "foreign", specOf("foreign", ns))
	landed(t, env.Targets[1:2], "foreign", ns, db)
	condition(t, "foreign", picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, picchuv1alpha1.ReasonNotOwned,
		"target-0: Secret "+ns+"/foreign-db exists and was not created by this ClusterSecrets")
	condition(t, "foreign", picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonNotOwned)

	remove(t, cs)
	gone(t, env.Targets[1:2], ns, db.Name)
	got, err := copyOn(ctx, target, ns, foreign.Name)
	if err != nil {
		t.Fatalf("the Secret Picchu did not create: %v", err)
	}
	if string(got.Data["mine"]) != "yes" || len(got.Labels) > 0 || len(got.Annotations) > 0 {
		t.Errorf("the Secret Picchu did not create was changed: labels %v, annotations %v", got.Labels, got.Annotations)
	}
	n := &corev1.Namespace{}
	if err := target.Client.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	if n.Labels[clustersecrets.LabelOwner] != "" || n.Annotations[clustersecrets.AnnotationOwner] != "" {
		t.Errorf("the namespace Picchu did not create was adopted: %v %v", n.Labels, n.Annotations)
	}
}

func TestClusterSecrets_ASpecItCannotActOnIsStalled(t *testing.T) {
	const ns = "shared-stalled"
	db := source(t, "stalled-db", map[string]string{"copy": "stalled"}, corev1.SecretTypeOpaque, map[string]string{"a": "1"})
	create(t, "stalled", specOf("stalled", ns))
	landed(t, enabled(), "stalled", ns, db)

	// The schema takes any string; with the webhooks off, so does the API.
	tests := []struct {
		name, field string
		change      func(*picchuv1alpha1.ClusterSecretsSpec)
		reason      string
	}{
		{"a label selector that does not parse", "spec.source.labelSelector",
			func(s *picchuv1alpha1.ClusterSecretsSpec) { s.Source.LabelSelector = "app in (a" }, picchuv1alpha1.ReasonInvalidSpec},
		{"a field selector without an operator", "spec.target.fieldSelector",
			func(s *picchuv1alpha1.ClusterSecretsSpec) { s.Target.FieldSelector = "metadata.name" }, picchuv1alpha1.ReasonInvalidSpec},
		{"a field no one selects Secrets by", "spec.source.fieldSelector",
			func(s *picchuv1alpha1.ClusterSecretsSpec) { s.Source.FieldSelector = "data.password=x" }, picchuv1alpha1.ReasonInvalidSpec},
		{"a source in another namespace", "spec.source.namespace: kube-system",
			func(s *picchuv1alpha1.ClusterSecretsSpec) { s.Source.Namespace = "kube-system" }, picchuv1alpha1.ReasonSourceNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			update(t, "stalled", func(s *picchuv1alpha1.ClusterSecretsSpec) {
				*s = specOf("stalled", ns)
				tt.change(s)
			})
			condition(t, "stalled", picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, tt.reason, tt.field)
			condition(t, "stalled", picchuv1alpha1.ConditionReady, metav1.ConditionFalse, tt.reason, tt.field)
			// Nothing is removed on a spec Picchu cannot read.
			landed(t, enabled(), "stalled", ns, db)
		})
	}
	update(t, "stalled", func(s *picchuv1alpha1.ClusterSecretsSpec) { *s = specOf("stalled", ns) })
	cs := condition(t, "stalled", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced)
	for _, c := range cs.Status.Conditions {
		if c.Type == picchuv1alpha1.ConditionStalled {
			t.Errorf("Stalled stays: %+v", c)
		}
	}
}

func TestClusterSecrets_AnUnreachableClusterIsNamedAndTheOthersGoOn(t *testing.T) {
	const ns = "shared-unreachable"
	db := source(t, "unreachable-db", map[string]string{"copy": "unreachable"}, corev1.SecretTypeOpaque, map[string]string{"v": "1"})
	create(t, "unreachable", specOf("unreachable", ns))
	landed(t, enabled(), "unreachable", ns, db)

	away := env.Targets[1]
	if err := away.Proxy.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = away.Proxy.Start()
		}
	})
	condition(t, "unreachable", picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonClustersUnavailable,
		"not synced on target-1: ")
	cs := condition(t, "unreachable", picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, picchuv1alpha1.ReasonClustersUnavailable)
	if msg := readyOf(t, cs.Name); strings.Contains(msg, "target-0") {
		t.Errorf("the reachable cluster is named: %s", msg)
	}

	// The reachable cluster still gets a rotation.
	db.Data = map[string][]byte{"v": []byte("2")}
	if err := env.Delivery.Client.Update(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	landed(t, env.Targets[:1], "unreachable", ns, db)

	// Back: it catches up.
	if err := away.Proxy.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	landed(t, enabled(), "unreachable", ns, db)
	condition(t, "unreachable", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced)
}

// TestClusterSecrets_NoValueLeaksIntoStatusOrEvents has a cluster refuse a
// copy through a ValidatingAdmissionPolicy whose message quotes the
// Secret's value: the refusal shows in the status, naming the cluster,
// and the value nowhere in the status or the events.
func TestClusterSecrets_NoValueLeaksIntoStatusOrEvents(t *testing.T) {
	const ns = "shared-leak"
	const value = "leak-0xC0FFEE-hunter2"
	encoded := base64.StdEncoding.EncodeToString([]byte(value))
	ctx := context.Background()
	refusing := env.Targets[0]
	kit.AdmissionPolicy(t, refusing.Client, "quote-leaky-secrets", admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
	}, admissionregistrationv1.Validation{
		Expression:        "object.metadata.name != 'leaky'",
		MessageExpression: "'refused: the token is ' + object.data['token']",
		Reason:            ptr.To(metav1.StatusReasonInvalid),
	})
	// The policy holds once the API server has loaded it.
	kit.Eventually(t, timeout, "the policy refuses a probe, quoting it", func() error {
		probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "leaky", Namespace: "default"}, Data: map[string][]byte{"token": []byte(value)}}
		err := refusing.Client.Create(ctx, probe)
		if err == nil {
			_ = refusing.Client.Delete(ctx, probe)
			return errors.New("created")
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), encoded) {
			return fmt.Errorf("refused otherwise than as invalid, quoting the value: %v", err)
		}
		return nil
	})

	leaky := source(t, "leaky", map[string]string{"copy": "leak"}, corev1.SecretTypeOpaque, map[string]string{"token": value})
	create(t, "leak", specOf("leak", ns))
	landed(t, env.Targets[1:2], "leak", ns, leaky)
	cs := condition(t, "leak", picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonClustersUnavailable,
		"not synced on target-0: creating Secret "+ns+"/leaky: ")
	// The warning event of the failure is recorded with the status.
	kit.Eventually(t, timeout, "the warning event", func() error {
		for _, n := range events(t, "leak") {
			if strings.HasPrefix(n, picchuv1alpha1.ReasonClustersUnavailable+":") {
				return nil
			}
		}
		return fmt.Errorf("events %v", events(t, "leak"))
	})

	status, err := json.Marshal(cs.Status)
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"status": string(status), "events": strings.Join(events(t, "leak"), "\n")} {
		if strings.Contains(text, value) || strings.Contains(text, encoded) {
			t.Errorf("the %s quote the Secret's value:\n%s", what, text)
		}
	}
	if msg := readyOf(t, "leak"); !strings.Contains(msg, "leaky: Invalid (HTTP 422") || strings.Contains(msg, "target-1") {
		t.Errorf("the refusal is not told as the reason and code of target-0's answer: %s", msg)
	}
}

// TestClusterSecrets_ASourceInAnotherNamespaceIsRefusedUnlessAllowed has
// a ClusterSecrets copy the Secrets of another namespace the operator
// reads: by default it is Stalled, SourceNotAllowed naming the field and
// the namespace, and writes nothing to any cluster; with the namespace
// allowed, the copies land; allowed no more, it is refused again and the
// copies it made stay, until it is deleted.
func TestClusterSecrets_ASourceInAnotherNamespaceIsRefusedUnlessAllowed(t *testing.T) {
	const ns = "shared-elsewhere"
	ctx := context.Background()
	db := sourceIn(t, elsewhere, "elsewhere-db", map[string]string{"copy": "elsewhere"}, corev1.SecretTypeOpaque,
		map[string]string{"password": "from-elsewhere"})
	restarted := false
	// Registered before the ClusterSecrets, so run after it is removed.
	t.Cleanup(func() {
		if restarted {
			running.Restart(t)
		}
	})
	spec := specOf("elsewhere", ns)
	spec.Source.Namespace = elsewhere
	before := targetWrites.count()
	cs := create(t, "elsewhere", spec)
	refused := []string{"spec.source.namespace: " + elsewhere + " is not this ClusterSecrets' namespace (" + env.Namespace + ")",
		"--allow-cross-namespace-sources"}
	condition(t, "elsewhere", picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, picchuv1alpha1.ReasonSourceNotAllowed, refused...)
	got := condition(t, "elsewhere", picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonSourceNotAllowed, refused...)
	if len(got.Status.Secrets) > 0 {
		t.Errorf("status.secrets %v of a refused ClusterSecrets", got.Status.Secrets)
	}
	if n := targetWrites.count() - before; n > 0 {
		t.Errorf("%d writes to target clusters for a refused ClusterSecrets", n)
	}
	for _, target := range enabled() {
		if _, err := copyOn(ctx, target, ns, db.Name); !apierrors.IsNotFound(err) {
			t.Errorf("%s: a refused source copied: %v", target.Name, err)
		}
	}

	restarted = true
	running.Restart(t, func(o *operator.Options) { o.CrossNamespaceSources = []string{elsewhere} })
	landed(t, enabled(), "elsewhere", ns, db)
	condition(t, "elsewhere", picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced,
		"1 Secret copied to target-0, target-1")

	running.Restart(t)
	restarted = false
	condition(t, "elsewhere", picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonSourceNotAllowed, refused...)
	// The copies made while it was allowed stay, until it is deleted.
	landed(t, enabled(), "elsewhere", ns, db)
	remove(t, cs)
	gone(t, enabled(), ns, db.Name)
}

// TestClusterSecrets_ASourceTheOperatorDoesNotReadIsStalled has a
// ClusterSecrets of a namespace whose Secrets the operator does not read
// copy from its own namespace: SourceNotWatched, naming the namespace.
func TestClusterSecrets_ASourceTheOperatorDoesNotReadIsStalled(t *testing.T) {
	ctx := context.Background()
	cs := &picchuv1alpha1.ClusterSecrets{
		ObjectMeta: metav1.ObjectMeta{Name: "unwatched", Namespace: unwatched},
		Spec: picchuv1alpha1.ClusterSecretsSpec{
			Source: picchuv1alpha1.SecretSource{Namespace: unwatched},
			Target: picchuv1alpha1.SecretTarget{Namespace: "shared-unwatched"},
		},
	}
	if err := env.Delivery.Client.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remove(t, cs) })
	kit.Eventually(t, timeout, "unwatched Stalled (SourceNotWatched)", func() error {
		got := &picchuv1alpha1.ClusterSecrets{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(cs), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, picchuv1alpha1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != picchuv1alpha1.ReasonSourceNotWatched ||
			!strings.Contains(c.Message, "namespace "+unwatched) {
			return fmt.Errorf("conditions %+v", got.Status.Conditions)
		}
		return nil
	})
}

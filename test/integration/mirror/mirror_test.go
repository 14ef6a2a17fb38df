package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/mirror"
	"github.com/medium/picchu/test/kit"
)

// The Mirror of the tests, and the labels of its additional config.
const (
	drMirror   = "dr"
	appLabel   = "app.example/name"
	tagLabel   = "app.example/version"
	extraLabel = "mirror-extra"
)

// build describes a Revision of an app for these tests.
type build struct {
	app, tag string
	// commit orders builds: the n-th commit of the day.
	commit int
	// delay is the ramp's step delay (1 s when 0).
	delay time.Duration
	// config labels the ConfigMaps, Secrets and ExternalSecrets its
	// configSelector selects; none when empty.
	config string
	// externalTest enables the production target's external test.
	externalTest bool
	// disableMirroring is spec.disableMirroring.
	disableMirroring bool
}

// revision is a Revision released to 100 % over 10, 20, 40, 80 % a delay
// apart, with one replica, schedule "always".
func (b build) revision() *picchuv1alpha1.Revision {
	delay := b.delay
	if delay == 0 {
		delay = time.Second
	}
	one := int32(1)
	rev := env.Apps().Revision(b.app, b.tag,
		kit.Labels(map[string]string{
			picchuv1alpha1.LabelApp: b.app,
			// Bookkeeping of a target this build does not have: kept
			// at home, left out of the copy.
			picchuv1alpha1.LabelTargetDeletablePrefix + "staging": "true",
			"team": "platform",
		}),
		kit.With(func(rev *picchuv1alpha1.Revision) {
			rev.Annotations = map[string]string{
				picchuv1alpha1.AnnotationGitCommitterTimestamp: time.Date(2026, 11, 2, 9, b.commit, 0, 0, time.UTC).Format(time.RFC3339),
				picchuv1alpha1.AnnotationControlBy:             "alice",
			}
			rev.Spec.DisableMirroring = b.disableMirroring
		}),
		kit.Scale(picchuv1alpha1.ScaleInfo{Min: &one, Default: 1, Max: 2}),
		kit.Geometric(10, 2, delay),
		kit.Target(func(t *picchuv1alpha1.RevisionTarget) {
			t.ExternalTest = picchuv1alpha1.ExternalTest{Enabled: b.externalTest}
		}))
	if b.config != "" {
		rev.Spec.Targets[0].ConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"config": b.config}}
	}
	return rev
}

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Delivery.Client.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// drMirrorObject is the Mirror to the cluster "mirror", which also copies
// the ConfigMaps and Secrets labelled mirror-extra=yes with the build's
// app and tag under app.example/name and app.example/version.
func drMirrorObject() *picchuv1alpha1.Mirror {
	return &picchuv1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Name: drMirror, Namespace: env.Namespace},
		Spec: picchuv1alpha1.MirrorSpec{
			ClusterName: mirrorCluster,
			AdditionalConfigSelectors: []picchuv1alpha1.AdditionalConfigSelector{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{extraLabel: "yes"}},
				AppLabelName:  appLabel, TagLabelName: tagLabel,
			}},
		},
	}
}

// ensureDRMirror creates the Mirror "dr" unless a test before did.
func ensureDRMirror(t *testing.T) {
	t.Helper()
	err := env.Delivery.Client.Create(context.Background(), drMirrorObject())
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// state waits until app's build tag is in state at home.
func state(t testing.TB, timeout time.Duration, app, tag, want string) picchuv1alpha1.ReleaseManagerRevisionStatus {
	t.Helper()
	_, st := env.Apps().WaitState(t, timeout, app, tag, want)
	return st
}

// deployed waits until app's build tag counts replicas at home.
func deployed(t testing.TB, app, tag string) {
	t.Helper()
	kit.Eventually(t, 30*time.Second, fmt.Sprintf("%s %s deployed", app, tag), func() error {
		rm, err := releaseManager(context.Background(), app)
		if err != nil {
			return err
		}
		for _, st := range rm.Status.Revisions {
			if st.Tag == tag && st.Scale.Current+st.Scale.Desired > 0 {
				return nil
			}
		}
		return fmt.Errorf("no replicas yet: %+v", rm.Status.Revisions)
	})
}

// onMirror waits until the mirror holds obj's kind, namespace and name,
// and reads it into obj.
func onMirror(t testing.TB, timeout time.Duration, obj client.Object) {
	t.Helper()
	kit.Eventually(t, timeout, fmt.Sprintf("%T %s on the mirror", obj, obj.GetName()), func() error {
		return secondClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	})
}

// absentFromMirror fails the test when the mirror holds obj.
func absentFromMirror(t testing.TB, obj client.Object) {
	t.Helper()
	err := secondClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if !apierrors.IsNotFound(err) {
		t.Errorf("%T %s on the mirror: %v, want not found", obj, obj.GetName(), err)
	}
}

// goneFromMirror waits until the mirror no longer holds obj.
func goneFromMirror(t testing.TB, obj client.Object) {
	t.Helper()
	kit.Eventually(t, 30*time.Second, fmt.Sprintf("%T %s gone from the mirror", obj, obj.GetName()), func() error {
		err := secondClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// mirrorReady waits until the Mirror's Ready condition has status and its
// message contains each of want, and returns it.
func mirrorReady(t testing.TB, timeout time.Duration, name string, status metav1.ConditionStatus, want ...string) *metav1.Condition {
	t.Helper()
	var ready *metav1.Condition
	kit.Eventually(t, timeout, fmt.Sprintf("mirror %s Ready %s with %q", name, status, want), func() error {
		m := &picchuv1alpha1.Mirror{}
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: name}, m); err != nil {
			return err
		}
		ready = meta.FindStatusCondition(m.Status.Conditions, picchuv1alpha1.ConditionReady)
		if ready == nil || ready.Status != status {
			return fmt.Errorf("Ready %+v", ready)
		}
		for _, w := range want {
			if !strings.Contains(ready.Message, w) {
				return fmt.Errorf("Ready %+v, without %q", ready, w)
			}
		}
		return nil
	})
	return ready
}

// quietRun touches an object the Mirrors of the namespace watch, waits
// until the Mirror controller has run again, and returns what it sent the
// mirror meanwhile.
func quietRun(t *testing.T) []string {
	t.Helper()
	_, before := requests.since(0)
	runs := reconciles(t, "mirror")
	poke := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "poke", Namespace: env.Namespace}}
	ctx := context.Background()
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(poke), poke); apierrors.IsNotFound(err) {
		create(t, poke)
	} else if err != nil {
		t.Fatal(err)
	} else {
		poke.Data = map[string]string{"at": time.Now().String()}
		if err := env.Delivery.Client.Update(ctx, poke); err != nil {
			t.Fatal(err)
		}
	}
	kit.Eventually(t, 10*time.Second, "a run of the mirror controller", func() error {
		if n := reconciles(t, "mirror"); n <= runs {
			return fmt.Errorf("%v runs", n)
		}
		return nil
	})
	sent, _ := requests.since(before)
	return sent
}

// TestMirror_CopiesADeployedBuildWithItsConfig copies a build once it is
// deployed at home, with the ConfigMaps and Secrets of its configSelector
// and of the Mirror's additionalConfigSelector: its external test
// disabled on the mirror (and still enabled at home), its bookkeeping
// left out, credentials and ExternalSecrets (the mirror does not serve
// them) not copied, each said in the Mirror's Ready condition. Once
// copied, a run sends the mirror nothing.
func TestMirror_CopiesADeployedBuildWithItsConfig(t *testing.T) {
	ctx := context.Background()
	labels := map[string]string{"config": "echo"}
	es := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "echo-vault", "namespace": env.Namespace, "labels": map[string]any{"config": "echo"}},
		"spec":     map[string]any{"refreshInterval": "1h", "target": map[string]any{"name": "echo-vault"}},
	}}
	create(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "echo-env", Namespace: env.Namespace, Labels: labels},
			Data: map[string]string{"MODE": "mirrored"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "echo-keys", Namespace: env.Namespace, Labels: labels},
			Data: map[string][]byte{"TOKEN": []byte("t0k3n")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "echo-admin", Namespace: env.Namespace,
			Labels: map[string]string{"config": "echo", "picchu.medium.engineering/credentials": "true"}},
			Data: map[string][]byte{"KEY": []byte("k")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "echo-v1-extra", Namespace: env.Namespace,
			Labels: map[string]string{extraLabel: "yes", appLabel: "echo", tagLabel: "v1"}},
			Data: map[string]string{"EXTRA": "v1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "echo-v2-extra", Namespace: env.Namespace,
			Labels: map[string]string{extraLabel: "yes", appLabel: "echo", tagLabel: "v2"}},
			Data: map[string]string{"EXTRA": "v2"}},
		es,
	)
	ensureDRMirror(t)
	create(t, build{app: "echo", tag: "v1", commit: 1, config: "echo", externalTest: true}.revision())

	copied := &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "echo-v1", Namespace: env.Namespace}}
	onMirror(t, 60*time.Second, copied)
	for _, target := range copied.Spec.Targets {
		if target.ExternalTest.Enabled {
			t.Errorf("target %s of the copy has its external test enabled", target.Name)
		}
	}
	if copied.Spec.App.Image != "registry.example/echo:v1" || len(copied.Spec.Targets) != 1 {
		t.Errorf("copy's spec %+v", copied.Spec)
	}
	if len(copied.Status.Targets) != 0 || copied.Status.Summary != "" {
		t.Errorf("copy's status %+v: no one runs Picchu on the mirror, it is copied", copied.Status)
	}
	wantLabels := map[string]string{picchuv1alpha1.LabelApp: "echo", "team": "platform", mirror.LabelMirrored: "true"}
	if !maps.Equal(copied.Labels, wantLabels) {
		t.Errorf("copy's labels %v, want %v", copied.Labels, wantLabels)
	}
	if _, ok := copied.Annotations[picchuv1alpha1.AnnotationControlBy]; ok || copied.Annotations[mirror.AnnotationMirror] != env.Namespace+"/"+drMirror ||
		copied.Annotations[picchuv1alpha1.AnnotationGitCommitterTimestamp] == "" {
		t.Errorf("copy's annotations %v", copied.Annotations)
	}
	home := &picchuv1alpha1.Revision{}
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(copied), home); err != nil {
		t.Fatal(err)
	}
	if !home.Spec.Targets[0].ExternalTest.Enabled {
		t.Error("the external test was disabled at home")
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "echo-env", Namespace: env.Namespace}}
	onMirror(t, 10*time.Second, cm)
	if cm.Data["MODE"] != "mirrored" || cm.Labels["config"] != "echo" {
		t.Errorf("config map copy %+v", cm)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "echo-keys", Namespace: env.Namespace}}
	onMirror(t, 10*time.Second, secret)
	if string(secret.Data["TOKEN"]) != "t0k3n" {
		t.Errorf("secret copy %+v", secret)
	}
	extra := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "echo-v1-extra", Namespace: env.Namespace}}
	onMirror(t, 10*time.Second, extra)
	if extra.Data["EXTRA"] != "v1" {
		t.Errorf("additional config map copy %+v", extra)
	}
	absentFromMirror(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "echo-v2-extra", Namespace: env.Namespace}})
	absentFromMirror(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "echo-admin", Namespace: env.Namespace}})
	mirrorReady(t, 10*time.Second, drMirror, metav1.ConditionTrue,
		"copied to cluster mirror",
		"ExternalSecrets not copied: cluster mirror does not serve externalsecrets.external-secrets.io",
		"secret "+env.Namespace+"/echo-admin not copied: labelled picchu.medium.engineering/credentials")

	// Steady state: a run sends the mirror nothing.
	if sent := quietRun(t); len(sent) > 0 {
		t.Errorf("a run with nothing to copy sent the mirror %q", sent)
	}
	// A change at home is copied, and only it is written.
	_, before := requests.since(0)
	cm = &corev1.ConfigMap{}
	if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "echo-env"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["MODE"] = "changed"
	if err := env.Delivery.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 10*time.Second, "the change copied", func() error {
		got := &corev1.ConfigMap{}
		if err := secondClient.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			return err
		}
		if got.Data["MODE"] != "changed" {
			return fmt.Errorf("data %v", got.Data)
		}
		return nil
	})
	sent, _ := requests.since(before)
	for _, r := range sent {
		if !strings.Contains(r, "/configmaps/echo-env") {
			t.Errorf("copying one changed config map sent %q", sent)
			break
		}
	}
	t.Logf("copying one changed config map sent %q", sent)
}

// TestMirror_DisableMirroringIsNotCopied deploys a build with
// disableMirroring and one without: only the latter reaches the mirror.
func TestMirror_DisableMirroringIsNotCopied(t *testing.T) {
	ensureDRMirror(t)
	create(t,
		build{app: "quiet", tag: "v1", commit: 1, disableMirroring: true}.revision(),
		build{app: "loud", tag: "v1", commit: 1}.revision())
	deployed(t, "quiet", "v1")
	onMirror(t, 60*time.Second, &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "loud-v1", Namespace: env.Namespace}})
	mirrorReady(t, 10*time.Second, drMirror, metav1.ConditionTrue, "with disableMirroring")
	quietRun(t)
	absentFromMirror(t, &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "quiet-v1", Namespace: env.Namespace}})
}

// TestMirror_UnreachableMirrorLeavesTheReleaseAlone releases a build with
// 1 s steps while a Mirror of its namespace names a cluster nothing
// answers for: its ramp takes its delays as with no mirror (within 1.05 ×
// them + 2 s, the release engine's goal), the Mirror says Unreachable,
// the failures are counted, and the other Mirror copies the build.
func TestMirror_UnreachableMirrorLeavesTheReleaseAlone(t *testing.T) {
	const app = "steady"
	const delay = time.Second
	const ideal = 4 * delay // 10 → 20 → 40 → 80 → 100 %
	ensureDRMirror(t)
	// The same release before the unreachable mirror exists, for comparison.
	baseline := releaseTime(t, "calm", delay)
	t.Logf("baseline, only a reachable mirror: released in %v: %.3f × the %v of delays",
		baseline.Round(time.Millisecond), float64(baseline)/float64(ideal), ideal)

	downClusterObj, err := registerDown(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	down := &picchuv1alpha1.Mirror{
		ObjectMeta: metav1.ObjectMeta{Name: "unreachable", Namespace: env.Namespace},
		Spec:       picchuv1alpha1.MirrorSpec{ClusterName: downCluster},
	}
	create(t, down)
	t.Cleanup(func() {
		for _, obj := range []client.Object{down, downClusterObj} {
			if err := env.Delivery.Client.Delete(context.Background(), obj); err != nil {
				t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
			}
		}
	})

	create(t, build{app: app, tag: "v1", commit: 1, delay: delay}.revision())
	state(t, 60*time.Second, app, "v1", "released")
	kit.Eventually(t, 30*time.Second, "a failure to copy counted", func() error {
		if n := mirrorFailures(t, app, downCluster); n == 0 {
			return errors.New("none counted")
		}
		return nil
	})
	ready := mirrorReady(t, 30*time.Second, down.Name, metav1.ConditionFalse)
	if ready.Reason != picchuv1alpha1.ReasonUnreachable || !strings.Contains(ready.Message, downCluster) {
		t.Errorf("Ready %+v, want Unreachable naming cluster %s", ready, downCluster)
	}

	steps := watchSteps(t, app, "v2")
	failed := mirrorFailures(t, app, downCluster)
	create(t, build{app: app, tag: "v2", commit: 2, delay: delay}.revision())
	st := state(t, 60*time.Second, app, "v2", "released")
	if st.ReleaseStartTimestamp == nil || st.State.LastUpdated == nil {
		t.Fatalf("release stamps missing: %+v", st)
	}
	took := st.State.LastUpdated.Sub(st.ReleaseStartTimestamp.Time)
	budget := time.Duration(1.05*float64(ideal)) + 2*time.Second
	t.Logf("released in %v: %.3f × the %v of delays, %v over them (budget %v)",
		took.Round(time.Millisecond), float64(took)/float64(ideal), ideal, (took - ideal).Round(time.Millisecond), budget)
	if took > budget {
		t.Errorf("released in %v, more than 1.05 × %v + 2 s", took, ideal)
	}
	kit.CheckSteps(t, steps.get(), st.ReleaseStartTimestamp.Time, []string{"10", "20", "40", "80", "100"}, delay)
	if n := mirrorFailures(t, app, downCluster); n <= failed {
		t.Errorf("no failure counted for v2 (%v before, %v after)", failed, n)
	}
	ready = mirrorReady(t, 5*time.Second, down.Name, metav1.ConditionFalse, "cluster "+downCluster)
	t.Logf("the unreachable Mirror: Ready %s %s: %s", ready.Status, ready.Reason, ready.Message)
	onMirror(t, 30*time.Second, &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: app + "-v2", Namespace: env.Namespace}})
	m := &picchuv1alpha1.Mirror{}
	if err := env.Delivery.Client.Get(context.Background(), client.ObjectKeyFromObject(down), m); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, picchuv1alpha1.ConditionReconciling); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Reconciling %+v, want True: the mirror is retried", c)
	}
}

// releaseTime releases v1 then v2 of app with step delay, and returns the
// time v2's ramp took, from the stamps the operator recorded.
func releaseTime(t *testing.T, app string, delay time.Duration) time.Duration {
	t.Helper()
	create(t, build{app: app, tag: "v1", commit: 1, delay: delay}.revision())
	state(t, 60*time.Second, app, "v1", "released")
	create(t, build{app: app, tag: "v2", commit: 2, delay: delay}.revision())
	st := state(t, 60*time.Second, app, "v2", "released")
	if st.ReleaseStartTimestamp == nil || st.State.LastUpdated == nil {
		t.Fatalf("release stamps missing: %+v", st)
	}
	return st.State.LastUpdated.Sub(st.ReleaseStartTimestamp.Time)
}

// TestMirror_CopiesFollowTheirSources deletes a build's Revision and its
// config at home: their copies go from the mirror; an object of the same
// namespace the Mirror did not write stays.
func TestMirror_CopiesFollowTheirSources(t *testing.T) {
	ctx := context.Background()
	ensureDRMirror(t)
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone-foreign", Namespace: env.Namespace}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone-env", Namespace: env.Namespace,
		Labels: map[string]string{"config": "gone"}}, Data: map[string]string{"A": "b"}}
	rev := build{app: "gone", tag: "v1", commit: 1, config: "gone"}.revision()
	create(t, cm, rev)
	onMirror(t, 60*time.Second, &picchuv1alpha1.Revision{ObjectMeta: rev.ObjectMeta})
	onMirror(t, 10*time.Second, &corev1.ConfigMap{ObjectMeta: cm.ObjectMeta})
	if err := secondClient.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	if err := env.Delivery.Client.Delete(ctx, rev); err != nil {
		t.Fatal(err)
	}
	goneFromMirror(t, &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: rev.Name, Namespace: rev.Namespace}})
	if err := env.Delivery.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	goneFromMirror(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace}})
	if err := secondClient.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
		t.Errorf("an object the Mirror did not write: %v", err)
	}
}

// TestMirror_LeavesAnObjectItDidNotWrite finds on the mirror a ConfigMap
// of the name of a build's config that the Mirror did not write: it is
// left as it is, the Mirror says NotOwned, and once it is deleted there
// the copy is made.
func TestMirror_LeavesAnObjectItDidNotWrite(t *testing.T) {
	ctx := context.Background()
	ensureDRMirror(t)
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "clash-env", Namespace: env.Namespace},
		Data: map[string]string{"OWNER": "the mirror's team"}}
	if err := secondClient.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	create(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "clash-env", Namespace: env.Namespace,
			Labels: map[string]string{"config": "clash"}}, Data: map[string]string{"OWNER": "home"}},
		build{app: "clash", tag: "v1", commit: 1, config: "clash"}.revision())
	ready := mirrorReady(t, 60*time.Second, drMirror, metav1.ConditionFalse, "revision clash-v1", "clash-env")
	if ready.Reason != picchuv1alpha1.ReasonNotOwned {
		t.Errorf("Ready %+v, want NotOwned", ready)
	}
	got := &corev1.ConfigMap{}
	if err := secondClient.Get(ctx, client.ObjectKeyFromObject(theirs), got); err != nil || got.Data["OWNER"] != "the mirror's team" {
		t.Errorf("the mirror's own config map: %+v, %v", got.Data, err)
	}
	absentFromMirror(t, &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "clash-v1", Namespace: env.Namespace}})

	if err := secondClient.Delete(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	onMirror(t, 30*time.Second, &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "clash-v1", Namespace: env.Namespace}})
	kit.Eventually(t, 10*time.Second, "the copy made", func() error {
		if err := secondClient.Get(ctx, client.ObjectKeyFromObject(theirs), got); err != nil {
			return err
		}
		if got.Data["OWNER"] != "home" {
			return fmt.Errorf("data %v", got.Data)
		}
		return nil
	})
	mirrorReady(t, 10*time.Second, drMirror, metav1.ConditionTrue)
}

// TestMirror_ExternalSecretsOnceTheMirrorServesThem installs the
// ExternalSecret CRD on the mirror: the build's ExternalSecret is copied
// within the recheck period, and the note leaves the Mirror's condition.
func TestMirror_ExternalSecretsOnceTheMirrorServesThem(t *testing.T) {
	ensureDRMirror(t)
	deployed(t, "echo", "v1")
	if _, err := envtest.InstallCRDs(secondConfig, envtest.CRDInstallOptions{
		CRDs: []*apiextensionsv1.CustomResourceDefinition{externalSecretCRD()},
	}); err != nil {
		t.Fatal(err)
	}
	es := &unstructured.Unstructured{}
	es.SetAPIVersion("external-secrets.io/v1")
	es.SetKind("ExternalSecret")
	es.SetNamespace(env.Namespace)
	es.SetName("echo-vault")
	onMirror(t, 2*mirror.DefaultKindRecheck+30*time.Second, es)
	if got, _, _ := unstructured.NestedString(es.Object, "spec", "refreshInterval"); got != "1h" || es.GetLabels()["config"] != "echo" {
		t.Errorf("external secret copy %v", es.Object)
	}
	kit.Eventually(t, 10*time.Second, "the note gone from the Mirror's Ready condition", func() error {
		ready := mirrorReady(t, time.Second, drMirror, metav1.ConditionTrue)
		if strings.Contains(ready.Message, "ExternalSecrets not copied") {
			return fmt.Errorf("Ready %+v still says ExternalSecrets are not copied", ready)
		}
		return nil
	})
}

// stepLog follows one build's traffic steps in its ReleaseManager's
// status, as the operator stamped them.
type stepLog struct {
	once  sync.Once
	stop  func() []stamp
	steps []stamp
}

type stamp = kit.Stamp

// watchSteps polls app's ReleaseManager every 20 ms until the test ends,
// recording tag's distinct (percent, stamp).
func watchSteps(t *testing.T, app, tag string) *stepLog {
	l := &stepLog{}
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan []stamp, 1)
	go func() {
		var steps []stamp
		defer func() { results <- steps }()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			// Once stopped, it reads once more: the step a test just saw
			// its build reach, in the same write as its state, is recorded.
			stopped := ctx.Err() != nil
			read, cancelRead := context.WithTimeout(context.Background(), 5*time.Second)
			rm, err := releaseManager(read, app)
			cancelRead()
			if err == nil {
				for _, st := range rm.Status.Revisions {
					if st.Tag != tag || st.LastUpdated == nil {
						continue
					}
					s := stamp{Value: fmt.Sprint(st.CurrentPercent), At: st.LastUpdated.Time}
					if n := len(steps); n == 0 || steps[n-1] != s {
						steps = append(steps, s)
					}
				}
			}
			if stopped {
				return
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	l.stop = func() []stamp { cancel(); return <-results }
	t.Cleanup(func() { l.get() })
	return l
}

// get stops the watch, once, and returns the steps seen.
func (l *stepLog) get() []stamp {
	l.once.Do(func() { l.steps = l.stop() })
	return l.steps
}

// TestMirror_LeavesAnotherPicchusCopiesAlone finds on the mirror a copy
// that a Mirror of the same name, run by another Picchu on another home
// cluster, wrote of a build this home does not have: this Picchu's Mirror,
// once it has listed the mirror again (after a restart), neither deletes it
// as garbage nor writes over it.
func TestMirror_LeavesAnotherPicchusCopiesAlone(t *testing.T) {
	ctx := context.Background()
	ensureDRMirror(t)
	theirs := build{app: "twin", tag: "v1", commit: 1}.revision()
	theirs.Labels = map[string]string{picchuv1alpha1.LabelApp: "twin", mirror.LabelMirrored: "true"}
	theirs.Annotations = map[string]string{
		mirror.AnnotationMirror: env.Namespace + "/" + drMirror, mirror.AnnotationMirrorInstance: "another-home",
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.Namespace}}
	if err := secondClient.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	if err := secondClient.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	before := theirs.ResourceVersion
	// A restarted operator lists the mirror for garbage at its first run.
	running.Restart(t)
	create(t, build{app: "twinhome", tag: "v1", commit: 2}.revision())
	deployed(t, "twinhome", "v1")
	onMirror(t, 60*time.Second, &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "twinhome-v1", Namespace: env.Namespace}})
	mirrorReady(t, 30*time.Second, drMirror, metav1.ConditionTrue)
	got := &picchuv1alpha1.Revision{}
	if err := secondClient.Get(ctx, client.ObjectKeyFromObject(theirs), got); err != nil {
		t.Fatalf("the other Picchu's copy: %v, want it left alone", err)
	}
	if got.ResourceVersion != before || !got.DeletionTimestamp.IsZero() {
		t.Errorf("the other Picchu's copy was written (resourceVersion %s, was %s; deleting %v)", got.ResourceVersion, before, got.DeletionTimestamp)
	}
}

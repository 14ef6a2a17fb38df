package mirror_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/kit"
)

// TestMirror_ASourceInAnotherNamespaceIsRefusedUnlessAllowed gives the
// Mirror an additionalConfigSelector in another namespace the operator
// reads: by default the Mirror is Stalled, SourceNotAllowed naming the
// field and the namespace, and sends the mirror nothing, not even a build
// deployed since; with the namespace allowed, the build and the config
// there are copied; allowed no more, it is refused again, and what it
// copied stays on the mirror.
func TestMirror_ASourceInAnotherNamespaceIsRefusedUnlessAllowed(t *testing.T) {
	ctx := context.Background()
	ensureDRMirror(t)
	extra := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "far-v1-extra", Namespace: elsewhere,
			Labels: map[string]string{extraLabel: "yes", appLabel: "far", tagLabel: "v1"}},
		Data: map[string][]byte{"KEY": []byte("from elsewhere")},
	}
	create(t, extra)
	restarted := false
	t.Cleanup(func() {
		if restarted {
			running.Restart(t)
		}
		m := &picchuv1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: drMirror}}
		if err := kit.Update(ctx, env.Delivery.Client, m, func(m *picchuv1alpha1.Mirror) {
			m.Spec = drMirrorObject().Spec
		}); err != nil {
			t.Fatal(err)
		}
		mirrorCondition(t, drMirror, picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonMirrored)
	})
	m := &picchuv1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: drMirror}}
	if err := kit.Update(ctx, env.Delivery.Client, m, func(m *picchuv1alpha1.Mirror) {
		m.Spec.AdditionalConfigSelectors = append(m.Spec.AdditionalConfigSelectors, picchuv1alpha1.AdditionalConfigSelector{
			Namespace:     elsewhere,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{extraLabel: "yes"}},
			AppLabelName:  appLabel, TagLabelName: tagLabel,
		})
	}); err != nil {
		t.Fatal(err)
	}
	refused := []string{"spec.additionalConfigSelectors[1].namespace: " + elsewhere, "--allow-cross-namespace-sources"}
	mirrorCondition(t, drMirror, picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, picchuv1alpha1.ReasonSourceNotAllowed, refused...)
	mirrorCondition(t, drMirror, picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonSourceNotAllowed, refused...)

	rev := build{app: "far", tag: "v1", commit: 1}.revision()
	create(t, rev)
	deployed(t, "far", "v1")
	if sent := quietRun(t); len(sent) > 0 {
		t.Errorf("a refused Mirror sent the mirror %q", sent)
	}
	copied := &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: rev.Name, Namespace: rev.Namespace}}
	copiedExtra := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: extra.Name, Namespace: extra.Namespace}}
	absentFromMirror(t, copied)
	absentFromMirror(t, copiedExtra)

	restarted = true
	running.Restart(t, func(o *operator.Options) { o.CrossNamespaceSources = []string{elsewhere} })
	onMirror(t, 60*time.Second, copied)
	onMirror(t, 10*time.Second, copiedExtra)
	if string(copiedExtra.Data["KEY"]) != "from elsewhere" {
		t.Errorf("the copy of %s/%s holds %q", extra.Namespace, extra.Name, copiedExtra.Data)
	}
	mirrorCondition(t, drMirror, picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonMirrored)

	running.Restart(t)
	restarted = false
	mirrorCondition(t, drMirror, picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonSourceNotAllowed, refused...)
	if sent := quietRun(t); len(sent) > 0 {
		t.Errorf("a refused Mirror sent the mirror %q", sent)
	}
	for _, obj := range []client.Object{copied, copiedExtra} {
		if err := secondClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Errorf("a copy made while it was allowed: %v, want it left on the mirror", err)
		}
	}
}

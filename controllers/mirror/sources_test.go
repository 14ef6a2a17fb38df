package mirror

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func TestReconciler_NotAllowed(t *testing.T) {
	mirrorOf := func(namespaces ...string) *picchuv1alpha1.Mirror {
		m := &picchuv1alpha1.Mirror{ObjectMeta: metav1.ObjectMeta{Name: "dr", Namespace: "picchu"}}
		for _, ns := range namespaces {
			m.Spec.AdditionalConfigSelectors = append(m.Spec.AdditionalConfigSelectors,
				picchuv1alpha1.AdditionalConfigSelector{Namespace: ns, AppLabelName: "app", TagLabelName: "tag"})
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		allowed []string
		mirror  *picchuv1alpha1.Mirror
		// want are in the message; none: no refusal.
		want []string
	}{
		{name: "no selector", mirror: mirrorOf()},
		{name: "the Mirror's namespace, left empty", mirror: mirrorOf("")},
		{name: "the Mirror's namespace, named", mirror: mirrorOf("picchu")},
		{name: "another namespace", mirror: mirrorOf("", "payments"),
			want: []string{"spec.additionalConfigSelectors[1].namespace: payments", "not this Mirror's namespace (picchu)", "--allow-cross-namespace-sources"}},
		{name: "another namespace, allowed", allowed: []string{"payments"}, mirror: mirrorOf("payments")},
		{name: "one allowed, one not", allowed: []string{"payments"}, mirror: mirrorOf("payments", "billing"),
			want: []string{"spec.additionalConfigSelectors[1].namespace: billing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&Reconciler{CrossNamespaceSources: tc.allowed}).notAllowed(tc.mirror)
			if (got == "") != (len(tc.want) == 0) {
				t.Fatalf("notAllowed = %q, want a refusal: %v", got, len(tc.want) > 0)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			if strings.Contains(got, "payments") && len(tc.allowed) > 0 {
				t.Errorf("%q names an allowed namespace", got)
			}
		})
	}
}

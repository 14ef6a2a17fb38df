package clustersecrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// leaked is a Secret's value, as an API server or a webhook might echo it.
const leaked = "hunter2-0xDEADBEEF"

// TestWriter_ErrorsNeverQuoteTheSecret runs the writer against a cluster
// that refuses every write with an answer quoting what it was sent: its
// errors, changes and conflicts, which become conditions and events, must
// not.
func TestWriter_ErrorsNeverQuoteTheSecret(t *testing.T) {
	echo := func(obj client.Object) error {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return nil
		}
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, s.Name, field.ErrorList{
			field.Invalid(field.NewPath("data").Key("value"), string(s.Data["value"]), "refused: "+string(s.Data["value"])),
		})
	}
	live := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "shared", UID: "u1",
			Annotations: map[string]string{AnnotationOwner: "picchu/shared"}},
		Data: map[string][]byte{"value": []byte("old-" + leaked)},
	}
	c := fake.NewClientBuilder().WithObjects(live.DeepCopy(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
				return echo(obj)
			},
			Update: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.UpdateOption) error {
				return echo(obj)
			},
			Delete: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.DeleteOption) error {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, obj.GetName(), errors.New(leaked))
			},
		}).Build()
	want := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shared",
		Annotations: map[string]string{AnnotationOwner: "picchu/shared"}},
		Data: map[string][]byte{"value": []byte(leaked)}}
	updated := live.DeepCopy()
	updated.Data = map[string][]byte{"value": []byte("new-" + leaked)}
	w := &writer{client: c, reader: c, owner: "picchu/shared"}
	errs := w.apply(context.Background(), Actions{
		Create: []*corev1.Secret{want}, Update: []*corev1.Secret{updated}, Delete: []*corev1.Secret{live},
	})
	if len(errs) != 3 {
		t.Fatalf("errors %v, want one per write", errs)
	}
	all := fmt.Sprint(errs, w.changes, w.conflicts)
	if strings.Contains(all, leaked) {
		t.Fatalf("the writer's report quotes the value: %s", all)
	}
	for _, want := range []string{"creating Secret shared/db: Invalid", "updating Secret shared/old: Invalid", "deleting Secret shared/old: Forbidden"} {
		if !strings.Contains(all, want) {
			t.Errorf("%s lacks %q", all, want)
		}
	}
}

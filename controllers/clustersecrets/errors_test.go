package clustersecrets

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
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

// TestDescribe_NeverQuotesWhatTheServerEchoed fails if a value an API
// server or an admission webhook echoed in its answer reaches a message:
// these go into conditions, events and logs.
func TestDescribe_NeverQuotesWhatTheServerEchoed(t *testing.T) {
	gr := schema.GroupResource{Resource: "secrets"}
	encoded := base64.StdEncoding.EncodeToString([]byte(leaked))
	tests := []struct {
		name string
		err  error
		// want are in the message.
		want []string
	}{
		{"Invalid quotes the values it refuses", apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", field.ErrorList{
			field.Invalid(field.NewPath("data").Key("password"), leaked, "must be shorter"),
			field.Invalid(field.NewPath("data").Key("encoded"), encoded, "must be shorter"),
		}), []string{"Invalid", "422", "data[password]", "data[encoded]"}},
		{"an admission policy's message quotes anything", func() error {
			err := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", nil)
			err.ErrStatus.Message = "ValidatingAdmissionPolicy 'no-leaks' denied request: token is " + leaked
			return err
		}(), []string{"Invalid", "422"}},
		{"a webhook's denial", apierrors.NewForbidden(gr, "db", errors.New("admission webhook denied: "+encoded)), []string{"Forbidden", "403"}},
		{"a bad request", apierrors.NewBadRequest("cannot decode " + leaked), []string{"BadRequest", "400"}},
		{"an internal error", apierrors.NewInternalError(errors.New(leaked)), []string{"InternalError", "500"}},
		{"a conflict", apierrors.NewConflict(gr, "db", errors.New(leaked)), []string{"Conflict", "409"}},
		{"a generic answer with the body", apierrors.NewGenericServerResponse(502, "PUT", gr, "db", leaked, 0, true), []string{"502"}},
		{"wrapped", fmt.Errorf("creating Secret shared/db: %w", apierrors.NewBadRequest(leaked)), []string{"BadRequest"}},
		{"a status without a reason", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 418, Message: leaked}}, []string{"Unknown", "418"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, msg := range []string{Describe(tt.err), failed(tt.err, "creating Secret %s", "shared/db").Error()} {
				if strings.Contains(msg, leaked) || strings.Contains(msg, encoded) {
					t.Fatalf("%q quotes the value", msg)
				}
				for _, w := range tt.want {
					if !strings.Contains(msg, w) {
						t.Errorf("%q lacks %q", msg, w)
					}
				}
			}
		})
	}
}

func TestDescribe_KeepsErrorsThatCarryNoAnswer(t *testing.T) {
	refused := &url.Error{Op: "Post", URL: "https://10.0.0.1:6443/api/v1/namespaces/shared/secrets",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	for _, err := range []error{refused, context.DeadlineExceeded, errors.New("POST 10.0.0.1:6443 not sent: circuit breaker open")} {
		if got := Describe(err); got != err.Error() {
			t.Errorf("Describe(%v) = %q", err, got)
		}
	}
	if Describe(nil) != "" {
		t.Error("Describe(nil) is not empty")
	}
	err := failed(apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "shared"), "creating Secret %s", "shared/db")
	if !apierrors.IsNotFound(err) {
		t.Errorf("%v does not unwrap to its cause", err)
	}
}

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

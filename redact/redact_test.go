package redact

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// leaked is a Secret's value, as an API server or a webhook might echo it.
const leaked = "hunter2-0xDEADBEEF"

// TestDescribe_NeverQuotesWhatTheServerEchoed fails if a value an API
// server or an admission webhook echoed in its answer reaches a message:
// these go into conditions, events and logs. Wrap's error, its status
// and the message an errors.As to an APIStatus reads are held to the same.
func TestDescribe_NeverQuotesWhatTheServerEchoed(t *testing.T) {
	gr := schema.GroupResource{Resource: "secrets"}
	encoded := base64.StdEncoding.EncodeToString([]byte(leaked))
	tests := []struct {
		name string
		err  error
		// want are in the message.
		want []string
		// is classifies the wrapped error as the answer.
		is func(error) bool
	}{
		{"Invalid quotes the values it refuses", apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", field.ErrorList{
			field.Invalid(field.NewPath("data").Key("password"), leaked, "must be shorter"),
			field.Invalid(field.NewPath("data").Key("encoded"), encoded, "must be shorter"),
		}), []string{"Invalid", "422", "data[password]", "data[encoded]"}, apierrors.IsInvalid},
		{"an admission policy's message quotes anything", func() error {
			err := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", nil)
			err.ErrStatus.Message = "ValidatingAdmissionPolicy 'no-leaks' denied request: token is " + leaked
			return err
		}(), []string{"Invalid", "422"}, apierrors.IsInvalid},
		{"a webhook's denial", apierrors.NewForbidden(gr, "db", errors.New("admission webhook denied: "+encoded)), []string{"Forbidden", "403"}, apierrors.IsForbidden},
		{"a bad request", apierrors.NewBadRequest("cannot decode " + leaked), []string{"BadRequest", "400"}, apierrors.IsBadRequest},
		{"an internal error", apierrors.NewInternalError(errors.New(leaked)), []string{"InternalError", "500"}, apierrors.IsInternalError},
		{"a conflict", apierrors.NewConflict(gr, "db", errors.New(leaked)), []string{"Conflict", "409"}, apierrors.IsConflict},
		{"a generic answer with the body", apierrors.NewGenericServerResponse(502, "PUT", gr, "db", leaked, 0, true), []string{"502"},
			func(err error) bool {
				return apierrors.ReasonForError(err) == metav1.StatusReasonInternalError || apierrors.IsUnexpectedServerError(err)
			}},
		{"wrapped", fmt.Errorf("creating Secret shared/db: %w", apierrors.NewBadRequest(leaked)), []string{"BadRequest"}, apierrors.IsBadRequest},
		{"a status without a reason", &apierrors.StatusError{ErrStatus: metav1.Status{Code: 418, Message: leaked}}, []string{"Unknown", "418"},
			func(err error) bool { s, ok := err.(apierrors.APIStatus); return ok && s.Status().Code == 418 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wrapped := Wrap(tt.err, "creating Secret %s", "shared/db")
			var status apierrors.APIStatus
			if !errors.As(wrapped, &status) {
				t.Fatalf("%v is no APIStatus", wrapped)
			}
			var original *apierrors.StatusError
			if errors.As(wrapped, &original) {
				t.Errorf("the original answer can be dug out of %v", wrapped)
			}
			if !tt.is(wrapped) {
				t.Errorf("%v is not classified as the answer (%s)", wrapped, apierrors.ReasonForError(wrapped))
			}
			s := status.Status()
			msgs := []string{Describe(tt.err), wrapped.Error(), s.Message, fmt.Sprintf("%+v", s)}
			for _, msg := range msgs {
				if strings.Contains(msg, leaked) || strings.Contains(msg, encoded) {
					t.Fatalf("%q quotes the value", msg)
				}
				for _, w := range tt.want {
					if !strings.Contains(msg, w) {
						t.Errorf("%q lacks %q", msg, w)
					}
				}
			}
			if !strings.HasPrefix(wrapped.Error(), "creating Secret shared/db: ") {
				t.Errorf("%q does not say what was done", wrapped.Error())
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
		wrapped := Wrap(err, "creating Secret %s", "shared/db")
		if !errors.Is(wrapped, err) || wrapped.Error() != "creating Secret shared/db: "+err.Error() {
			t.Errorf("Wrap(%v) = %v, which does not unwrap to it", err, wrapped)
		}
	}
	if Describe(nil) != "" || Wrap(nil, "x") != nil {
		t.Error("nil is described or wrapped as something")
	}
	err := Wrap(apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "shared"), "creating Secret %s", "shared/db")
	if !apierrors.IsNotFound(err) {
		t.Errorf("%v is not classified as not found", err)
	}
}

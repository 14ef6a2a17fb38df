package redact

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Withheld ends every description of an API server's answer.
const Withheld = "(the server's message is withheld: it may quote the Secret)"

// Describe says what went wrong in err without anything an API server or
// an admission webhook may have echoed of the object sent. Of an API
// server's answer it keeps only the reason, the HTTP code and the names of
// the fields at fault; errors that never carry an answer (a connection
// refused, a deadline, an open circuit breaker) are kept as they are.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	return describe(status.Status())
}

// describe is Describe of an API server's answer.
func describe(s metav1.Status) string {
	reason := string(s.Reason)
	if reason == "" {
		reason = "Unknown"
	}
	out := fmt.Sprintf("%s (HTTP %d", reason, s.Code)
	if text := http.StatusText(int(s.Code)); text != "" && text != reason {
		out += " " + text
	}
	out += ")"
	if fields := faultyFields(s); len(fields) > 0 {
		out += " in " + strings.Join(fields, ", ")
	}
	return out + " " + Withheld
}

// faultyFields are the names of the fields an answer finds at fault, each once.
func faultyFields(s metav1.Status) []string {
	if s.Details == nil {
		return nil
	}
	var fields []string
	for _, c := range s.Details.Causes {
		if c.Field != "" && !slices.Contains(fields, c.Field) {
			fields = append(fields, c.Field)
		}
	}
	return fields
}

// Wrap returns err, from doing what format and args say to a Secret, so
// that it tells nothing the API server answered but what Describe keeps;
// nil stays nil. An error that carries no answer is wrapped as it is (it
// unwraps to err, for errors.Is). One that does is an *APIError.
func Wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	op := fmt.Sprintf(format, args...)
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return &APIError{op: op, status: withoutMessages(status.Status())}
}

// APIError is an API server's answer to a request about a Secret, with
// every message withheld. It is an apierrors.APIStatus, so that
// apierrors.IsInvalid, IsForbidden and the others classify it as the
// answer, and code that reads the answer's message (errors.As to an
// APIStatus) reads the redacted one. It does not unwrap to the answer:
// nothing can dig the original message out of it.
type APIError struct {
	op     string
	status metav1.Status
}

func (e *APIError) Error() string { return e.op + ": " + describe(e.status) }

// Status is the answer without its messages; its Message is Error.
func (e *APIError) Status() metav1.Status {
	s := e.status
	s.Message = e.Error()
	return s
}

// withoutMessages is s with every text the server wrote left out: its
// message, and the message of each cause. The reason, code, kind, name and
// the fields at fault stay.
func withoutMessages(s metav1.Status) metav1.Status {
	out := metav1.Status{Status: metav1.StatusFailure, Reason: s.Reason, Code: s.Code}
	if d := s.Details; d != nil {
		out.Details = &metav1.StatusDetails{
			Name: d.Name, Group: d.Group, Kind: d.Kind, UID: d.UID, RetryAfterSeconds: d.RetryAfterSeconds,
		}
		for _, c := range d.Causes {
			out.Details.Causes = append(out.Details.Causes, metav1.StatusCause{Type: c.Type, Field: c.Field})
		}
	}
	return out
}

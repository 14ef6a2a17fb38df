package clustersecrets

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Describe says what went wrong in err without anything an API server or
// an admission webhook may have echoed of the object sent: an "Invalid"
// answer quotes the values it refuses, a webhook's or an admission
// policy's message can quote anything, and the object sent here is a
// Secret. Of an API server's answer it keeps only the reason, the HTTP
// code and the names of the fields at fault; errors that never carry an
// answer (a connection refused, a deadline, an open circuit breaker) are
// kept as they are.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	s := status.Status()
	reason := string(s.Reason)
	if reason == "" {
		reason = "Unknown"
	}
	out := fmt.Sprintf("%s (HTTP %d", reason, s.Code)
	if text := http.StatusText(int(s.Code)); text != "" && text != reason {
		out += " " + text
	}
	out += ")"
	if s.Details != nil {
		var fields []string
		for _, c := range s.Details.Causes {
			if c.Field != "" && !slices.Contains(fields, c.Field) {
				fields = append(fields, c.Field)
			}
		}
		if len(fields) > 0 {
			out += " in " + strings.Join(fields, ", ")
		}
	}
	return out + " (the server's message is withheld: it may quote the Secret)"
}

// opError is an operation on a target cluster that failed, which says
// what was done and, through Describe, why, and nothing of the values
// sent. It unwraps to the cause, for errors.Is and apierrors.
type opError struct {
	op    string
	cause error
}

func (e *opError) Error() string { return e.op + ": " + Describe(e.cause) }
func (e *opError) Unwrap() error { return e.cause }

// failed wraps err, from doing op, as an opError; nil stays nil.
func failed(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &opError{op: fmt.Sprintf(format, args...), cause: err}
}

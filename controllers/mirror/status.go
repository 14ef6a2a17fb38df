package mirror

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Failure is a build the run could not copy, or, with Build empty, the
// whole mirror.
type Failure struct {
	// Build is the Revision's name.
	Build string
	// App is the build's app (the metric's label).
	App string
	// Reason is one of the Reason constants.
	Reason string
	// Message says what failed, where.
	Message string
}

// Outcome is what one run did for a Mirror.
type Outcome struct {
	// Cluster is the mirror Cluster's name.
	Cluster string
	// Copied are the builds whose copy, config included, the mirror holds.
	Copied int
	// Disabled and Pending count the builds not copied because of
	// disableMirroring, and because they are not deployed.
	Disabled, Pending int
	// Deleted counts the copies deleted because their source was.
	Deleted int
	// Failures are what could not be copied or deleted.
	Failures []Failure
	// Notes are what was left out on purpose, such as a kind the mirror
	// does not serve.
	Notes []string
}

// Classify says what an error of a request to the mirror means: NotOwned
// for an object the Mirror did not write, Rejected for the answers that the same request will get again (invalid,
// forbidden, unauthorized, too large, a conflict on create), Unreachable
// for everything else (no answer, a timeout, a server error, an open
// circuit breaker), which is retried.
func Classify(err error) string {
	var notOwned *NotOwnedError
	switch {
	case errors.As(err, &notOwned):
		return picchuv1alpha1.ReasonNotOwned
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err),
		apierrors.IsUnauthorized(err), apierrors.IsRequestEntityTooLargeError(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsAlreadyExists(err):
		return picchuv1alpha1.ReasonRejected
	}
	return picchuv1alpha1.ReasonUnreachable
}

// stalls are the reasons a person must act on.
var stalls = map[string]bool{
	picchuv1alpha1.ReasonClusterNotFound: true, picchuv1alpha1.ReasonRejected: true, picchuv1alpha1.ReasonNotOwned: true, picchuv1alpha1.ReasonConfigUnreadable: true, picchuv1alpha1.ReasonSourceNotAllowed: true,
}

// SetConditions sets a Mirror's observedGeneration and its Ready,
// Reconciling and Stalled conditions from a run's outcome. Ready is True
// when nothing failed; otherwise False with the first failure's reason
// (the whole mirror's first) and a message naming every failed build.
// Reconciling is True while a failure is retried on its own
// (Unreachable, ClusterNotConnected); Stalled while one needs a person.
// Messages hold no time or count that moves on its own, so a steady
// mirror's status is written once.
func SetConditions(m *picchuv1alpha1.Mirror, o Outcome) {
	m.Status.ObservedGeneration = m.Generation
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: m.Generation,
		})
	}
	if len(o.Failures) == 0 {
		set(picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonMirrored, summary(o))
		meta.RemoveStatusCondition(&m.Status.Conditions, picchuv1alpha1.ConditionReconciling)
		meta.RemoveStatusCondition(&m.Status.Conditions, picchuv1alpha1.ConditionStalled)
		return
	}
	failures := slices.Clone(o.Failures)
	// The whole mirror's failure first, then by build.
	slices.SortStableFunc(failures, func(a, b Failure) int {
		if (a.Build == "") != (b.Build == "") {
			if a.Build == "" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Build, b.Build)
	})
	msg := failureMessage(o, failures)
	reason := failures[0].Reason
	set(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	stalled := slices.ContainsFunc(failures, func(f Failure) bool { return stalls[f.Reason] })
	retried := slices.ContainsFunc(failures, func(f Failure) bool { return !stalls[f.Reason] })
	if retried {
		r := reason
		if stalls[r] {
			r = failures[slices.IndexFunc(failures, func(f Failure) bool { return !stalls[f.Reason] })].Reason
		}
		set(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, r, msg)
	} else {
		meta.RemoveStatusCondition(&m.Status.Conditions, picchuv1alpha1.ConditionReconciling)
	}
	if stalled {
		r := failures[slices.IndexFunc(failures, func(f Failure) bool { return stalls[f.Reason] })].Reason
		set(picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, r, msg)
	} else {
		meta.RemoveStatusCondition(&m.Status.Conditions, picchuv1alpha1.ConditionStalled)
	}
}

// summary is the Ready message of a mirror where nothing failed.
func summary(o Outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s copied to cluster %s", builds(o.Copied), o.Cluster)
	var left []string
	if o.Pending > 0 {
		left = append(left, fmt.Sprintf("%d not deployed", o.Pending))
	}
	if o.Disabled > 0 {
		left = append(left, fmt.Sprintf("%d with disableMirroring", o.Disabled))
	}
	if len(left) > 0 {
		fmt.Fprintf(&b, " (not copied: %s)", strings.Join(left, ", "))
	}
	for _, n := range o.Notes {
		b.WriteString("; " + n)
	}
	return b.String()
}

func failureMessage(o Outcome, failures []Failure) string {
	var parts []string
	for _, f := range failures {
		if f.Build == "" {
			parts = append(parts, f.Message)
		} else {
			parts = append(parts, fmt.Sprintf("revision %s: %s", f.Build, f.Message))
		}
	}
	msg := strings.Join(parts, "; ")
	if o.Copied > 0 {
		msg += fmt.Sprintf("; %s copied to cluster %s", builds(o.Copied), o.Cluster)
	}
	for _, n := range o.Notes {
		msg += "; " + n
	}
	const max = 32 * 1024 // the API's limit on a condition message
	if len(msg) > max {
		msg = msg[:max-3] + "..."
	}
	return msg
}

func builds(n int) string {
	if n == 1 {
		return "1 build"
	}
	return fmt.Sprintf("%d builds", n)
}

// Retry is how long after a run whose failures count consecutive runs that
// failed the Mirror is worked on again: a second, doubling each time, at
// most five minutes.
func Retry(failures int) time.Duration {
	const first, most = time.Second, 5 * time.Minute
	if failures <= 1 {
		return first
	}
	if failures > 10 {
		return most
	}
	return min(first<<(failures-1), most)
}

package clustersecrets

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// maxMessage bounds a condition's message (the API allows 32768 bytes).
const maxMessage = 4096

// ClusterResult is how one cluster went in a run.
type ClusterResult struct {
	Cluster string
	// Problem says why the cluster's copies are not as wanted ("" when they
	// are): it is unreachable, not ready, or a request failed. It names no
	// value of any Secret (see redact.Describe).
	Problem string
	// Conflicts are the copies whose names are held by objects this
	// ClusterSecrets did not create.
	Conflicts []string
}

// Outcome is what a run found, for the conditions.
type Outcome struct {
	// Problems are the spec's fields Picchu cannot act on.
	Problems []Problem
	// NotWatched is the source namespace when the operator does not read
	// its Secrets.
	NotWatched string
	// NotAllowed is the source namespace when it is another namespace than
	// the ClusterSecrets' own that the operator does not allow copies
	// from; Home is then the ClusterSecrets' namespace.
	NotAllowed, Home string
	// Protected is the target namespace when it is protected
	// (--protected-namespaces and the defaults), and Pattern the protected
	// name or prefix that names it: nothing is copied there.
	Protected, Pattern string
	// Deleting: the run removed copies of a ClusterSecrets being deleted.
	Deleting bool
	// Secrets are the names of the Secrets copied.
	Secrets []string
	// Withheld are the Secrets selected that hold credentials, never copied.
	Withheld []Withheld
	// Clusters are the selected clusters (every enabled one when
	// deleting), sorted by name.
	Clusters []ClusterResult
}

// Refused says whether the spec is not acted on at all: nothing is
// copied or removed until it, or the operator, changes.
func (o Outcome) Refused() bool {
	return len(o.Problems) > 0 || o.NotAllowed != "" || o.NotWatched != "" || o.Protected != ""
}

// Clean says whether the run left nothing to retry.
func (o Outcome) Clean() bool {
	if o.Refused() {
		return false
	}
	for _, c := range o.Clusters {
		if c.Problem != "" || len(c.Conflicts) > 0 {
			return false
		}
	}
	return true
}

// SetConditions sets Ready, Reconciling and Stalled, in the kstatus style,
// from the outcome of a run on the object of generation generation:
//
//   - a spec Picchu cannot act on: Stalled (InvalidSpec, naming the fields,
//     SourceNotAllowed, ProtectedNamespace or SourceNotWatched), Ready
//     False;
//   - copies another object's name holds: Stalled (NotOwned, naming the
//     cluster and the Secret, and the clusters not synced if any), Ready
//     False;
//   - a selected cluster not brought in line: Ready False and Reconciling
//     (ClustersUnavailable, naming each cluster and why), the others being
//     in line all the same;
//   - being deleted: Ready False and Reconciling (Deleting, naming the
//     clusters whose copies are not removed yet);
//   - otherwise Ready True (Synced).
func SetConditions(conds *[]metav1.Condition, generation int64, o Outcome) {
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(conds, metav1.Condition{
			Type: t, Status: status, Reason: reason, Message: truncate(msg), ObservedGeneration: generation,
		})
	}
	var unavailable, conflicts []string
	for _, c := range o.Clusters {
		if c.Problem != "" {
			unavailable = append(unavailable, c.Cluster+": "+c.Problem)
		}
		for _, conflict := range c.Conflicts {
			conflicts = append(conflicts, c.Cluster+": "+conflict)
		}
	}

	stalled, msg := stall(o, conflicts, unavailable)
	if stalled == "" {
		meta.RemoveStatusCondition(conds, picchuv1alpha1.ConditionStalled)
	} else {
		set(picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, stalled, msg)
		set(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, stalled, msg)
	}

	switch {
	case o.Deleting:
		msg := "copies removed from every enabled cluster"
		if len(unavailable) > 0 {
			msg = "removing the copies; not removed yet from " + strings.Join(unavailable, "; ") +
				" (a Cluster disabled or deleted is given up on)"
		}
		set(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, picchuv1alpha1.ReasonDeleting, msg)
		set(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonDeleting, msg)
	case stalled != "":
		// A person must act (kstatus: Failed), though the clusters that
		// can be brought in line are, and those that cannot are retried.
		meta.RemoveStatusCondition(conds, picchuv1alpha1.ConditionReconciling)
	case len(unavailable) > 0:
		msg := "not synced on " + strings.Join(unavailable, "; ")
		set(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, picchuv1alpha1.ReasonClustersUnavailable, msg)
		set(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonClustersUnavailable, msg)
	default:
		meta.RemoveStatusCondition(conds, picchuv1alpha1.ConditionReconciling)
		set(picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSynced, synced(o))
	}
}

// stall is why a run's outcome o leaves the ClusterSecrets stalled, and
// what to tell of it, or "" when it is not (or is being deleted): a spec
// Picchu cannot act on, or copies another object's name holds
// (conflicts, told with the clusters not synced).
func stall(o Outcome, conflicts, unavailable []string) (reason, msg string) {
	switch {
	case o.Deleting:
	case len(o.Problems) > 0:
		parts := make([]string, len(o.Problems))
		for i, p := range o.Problems {
			parts[i] = p.String()
		}
		return picchuv1alpha1.ReasonInvalidSpec, strings.Join(parts, "; ") + "; nothing is copied or removed until the spec is fixed"
	case o.NotAllowed != "":
		return picchuv1alpha1.ReasonSourceNotAllowed, fmt.Sprintf("spec.source.namespace: %s is not this ClusterSecrets' namespace (%s), and the operator "+
			"does not allow copying Secrets from it (--allow-cross-namespace-sources); nothing is copied or removed "+
			"until the source is this namespace or the operator allows %s (the copies made before stay as they are)",
			o.NotAllowed, o.Home, o.NotAllowed)
	case o.Protected != "":
		return picchuv1alpha1.ReasonProtectedNamespace, fmt.Sprintf("spec.target.namespace: %s is protected (%q): Picchu never writes "+
			"Secrets into it on a target cluster; nothing is copied or removed until the target is another namespace "+
			"(the copies made before stay as they are)", o.Protected, o.Pattern)
	case o.NotWatched != "":
		return picchuv1alpha1.ReasonSourceNotWatched, fmt.Sprintf("the operator does not read the Secrets of namespace %s (add it to --namespaces, "+
			"with a Role to read its Secrets); nothing is copied or removed until it does", o.NotWatched)
	case len(conflicts) > 0:
		msg := strings.Join(conflicts, "; ")
		if len(unavailable) > 0 {
			msg += "; and not synced on " + strings.Join(unavailable, "; ")
		}
		return picchuv1alpha1.ReasonNotOwned, msg
	}
	return "", ""
}

// synced is the Ready message of a run that left every cluster in line.
func synced(o Outcome) string {
	names := make([]string, len(o.Clusters))
	for i, c := range o.Clusters {
		names[i] = c.Cluster
	}
	var msg string
	switch {
	case len(names) == 0:
		msg = "no enabled Cluster is selected: nothing to copy"
	case len(o.Secrets) == 0:
		msg = "no Secret is selected: nothing copied to " + strings.Join(names, ", ")
	case len(o.Secrets) == 1:
		msg = "1 Secret copied to " + strings.Join(names, ", ")
	default:
		msg = fmt.Sprintf("%d Secrets copied to %s", len(o.Secrets), strings.Join(names, ", "))
	}
	if len(o.Withheld) > 0 {
		msg += "; " + withheldMessage(o.Withheld)
	}
	return msg
}

// withheldMessage names the Secrets withheld and why.
func withheldMessage(withheld []Withheld) string {
	parts := make([]string, len(withheld))
	for i, w := range withheld {
		parts[i] = fmt.Sprintf("%s (%s)", w.Name, w.Why)
	}
	return "selected but never copied, as they hold credentials: " + strings.Join(parts, ", ")
}

func truncate(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	return strings.ToValidUTF8(msg[:maxMessage-3], "") + "..."
}

// RetryAfter is how long to wait before trying again after failures runs
// in a row that left something to retry: a second, doubling, at most five
// minutes.
func RetryAfter(failures int) time.Duration {
	const first, most = time.Second, 5 * time.Minute
	if failures < 1 {
		failures = 1
	}
	if failures > 16 {
		return most
	}
	return min(first<<(failures-1), most)
}

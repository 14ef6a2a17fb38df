package releasemanager

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/access"
)

// ReasonCredentialsNotCopied is the reason of the warning event on a
// Revision whose configSelector selects a Secret that holds credentials.
const ReasonCredentialsNotCopied = "CredentialsNotCopied"

// withoutCredentials drops from the Secrets a build's configSelector selects
// those that hold credentials, which are never copied to target clusters,
// and reports each on the Revision with a warning event.
func (r *Reconciler) withoutCredentials(ctx context.Context, inc *incarnation, secrets []corev1.Secret) ([]corev1.Secret, error) {
	if len(secrets) == 0 {
		return secrets, nil
	}
	ns := inc.revision.Namespace
	clusters := &picchuv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing clusters of namespace %s, whose secrets configSelector never copies: %w", ns, err)
	}
	isCluster := map[string]bool{}
	for _, cl := range clusters.Items {
		isCluster[cl.Name] = true
	}
	var kept []corev1.Secret
	for i := range secrets {
		s := &secrets[i]
		why := access.Credentials(s, isCluster)
		if why == "" {
			kept = append(kept, *s)
			continue
		}
		if r.Recorder != nil {
			// The Secret is the related object: events of the same
			// regarding object, reason and related object are one series.
			r.Recorder.Eventf(inc.revision, s, corev1.EventTypeWarning, ReasonCredentialsNotCopied, "Copy",
				"configSelector of target %s selects secret %s, %s: it is not copied", inc.target.Name, s.Name, why)
		}
	}
	return kept, nil
}

package kit

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/access"
)

// FieldManager applies what the tests and the local fleet set up.
const FieldManager = "picchu-test"

// Registration is a target cluster as a user registers it on the delivery
// cluster.
type Registration struct {
	// Namespace holds the Cluster and its Secret.
	Namespace string
	// Name of the Cluster and its Secret.
	Name string
	// Fleet is the Cluster's fleet label.
	Fleet string
	// Server is the target API server's address, https://host:port.
	Server string
	// CAData is the PEM of the CA that signed the server's certificate.
	CAData []byte
	// User is the administrator's credentials, stored in the Secret.
	User *clientcmdapi.AuthInfo
}

// RegisterTarget registers a target cluster on the delivery cluster c as a
// user does: the namespace, a Secret holding the user's credentials (key
// auth-info, a kubeconfig user as JSON) and a Cluster labelled with the
// fleet, pointing at the server with its CA. Registering again updates
// them. It returns the Cluster as stored.
func RegisterTarget(ctx context.Context, c client.Client, r Registration) (*picchuv1alpha1.Cluster, error) {
	authInfo, err := access.AuthInfoJSON(r.User)
	if err != nil {
		return nil, fmt.Errorf("registering cluster %s: %w", r.Name, err)
	}
	cluster := &picchuv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{
			Name: r.Name, Namespace: r.Namespace,
			Labels: map[string]string{picchuv1alpha1.LabelFleet: r.Fleet},
		},
		Spec: picchuv1alpha1.ClusterSpec{
			Enabled: true,
			Config:  &picchuv1alpha1.ClusterConfig{Server: r.Server, CertificateAuthorityData: r.CAData},
		},
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace},
			Data:       map[string][]byte{access.AuthInfoKey: authInfo},
		},
		cluster,
	} {
		if err := Apply(ctx, c, obj); err != nil {
			return nil, fmt.Errorf("registering cluster %s: %w", r.Name, err)
		}
	}
	stored := &picchuv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), stored); err != nil {
		return nil, fmt.Errorf("registering cluster %s: reading it back: %w", r.Name, err)
	}
	return stored, nil
}

// Apply server-side applies obj, a typed object of c's scheme, as
// FieldManager, taking over fields others set.
func Apply(ctx context.Context, c client.Client, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return fmt.Errorf("applying %T %s: %w", obj, obj.GetName(), err)
	}
	data, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: data}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

package v1alpha1

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// WebhookOptions are the operator's settings the webhooks check against.
// They are no API object: they hold a function, and have no deep copy.
// +kubebuilder:object:generate=false
type WebhookOptions struct {
	// ProtectedNamespaces are the namespaces no app may be deployed in
	// (AppProtectedNamespaces), and SecretProtectedNamespaces those no
	// ClusterSecrets may write into (SecretProtectedNamespaces).
	ProtectedNamespaces, SecretProtectedNamespaces []string
	// AppNamespacePolicy says which namespaces the apps of each delivery
	// namespace may use (--app-namespace-policy).
	AppNamespacePolicy AppNamespacePolicy
	// SLIQueryCheck, when set, says why the baseline comparison cannot
	// count an SLI query per raw series (nil when it can): the Revision
	// webhook warns about each such totalQuery and errorQuery of an
	// enabled SLO with canary.baseline (Revision.SLIQueryWarnings). The
	// operator sets it from its PromQL parser (package prometheus,
	// CheckCountable); this package parses no PromQL.
	SLIQueryCheck func(query string) error
	// TargetCheck, when set, returns the errors of a target of app, each
	// naming its field under path, that the Revision webhook refuses
	// beside Validate's: the operator sets it to manifests.CheckTenancy,
	// which refuses monitoring objects that could reach another team's
	// verdicts (it parses PromQL, which this package does not).
	TargetCheck func(app string, t *RevisionTarget, path *field.Path) field.ErrorList
}

// SetupWebhooksWithManager registers the admission webhooks of every kind
// that has one: Revision (defaulting, and validation, which also rejects an
// "<app>-<target>" name another app has or a protected namespace, and a
// host the fleet's Clusters do not allow, and warns about SLI queries
// o.SLIQueryCheck refuses), Cluster and
// ClusterSecrets (validation).
func SetupWebhooksWithManager(mgr ctrl.Manager, o WebhookOptions) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &Revision{}).
		WithDefaulter(revisionDefaulter{}).
		WithValidator(revisionValidator{reader: mgr.GetAPIReader(), protected: o.ProtectedNamespaces, policy: o.AppNamespacePolicy,
			sliCheck: o.SLIQueryCheck, targetCheck: o.TargetCheck}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &Cluster{}).
		WithValidator(validator[*Cluster]{}).
		Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &ClusterSecrets{}).
		WithValidator(clusterSecretsValidator{protected: o.SecretProtectedNamespaces}).
		Complete()
}

// +kubebuilder:webhook:path=/mutate-picchu-medium-engineering-v1alpha1-revision,mutating=true,failurePolicy=fail,sideEffects=None,groups=picchu.medium.engineering,resources=revisions,verbs=create;update,versions=v1alpha1,name=mrevision.picchu.medium.engineering,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-picchu-medium-engineering-v1alpha1-revision,mutating=false,failurePolicy=fail,sideEffects=None,groups=picchu.medium.engineering,resources=revisions,verbs=create;update,versions=v1alpha1,name=vrevision.picchu.medium.engineering,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-picchu-medium-engineering-v1alpha1-cluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=picchu.medium.engineering,resources=clusters,verbs=create;update,versions=v1alpha1,name=vcluster.picchu.medium.engineering,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-picchu-medium-engineering-v1alpha1-clustersecrets,mutating=false,failurePolicy=fail,sideEffects=None,groups=picchu.medium.engineering,resources=clustersecrets,verbs=create;update,versions=v1alpha1,name=vclustersecrets.picchu.medium.engineering,admissionReviewVersions=v1

type revisionDefaulter struct{}

func (revisionDefaulter) Default(ctx context.Context, r *Revision) error {
	r.DefaultLabels()
	r.DefaultRouting()
	r.DefaultScale()
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil // not served through a webhook: nobody to name
	}
	var old *Revision
	if len(req.OldObject.Raw) > 0 {
		old = &Revision{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return fmt.Errorf("decoding the revision before the update: %w", err)
		}
	}
	r.StampControlBy(old, req.UserInfo.Username)
	r.StampRollbackAt(old, time.Now())
	return nil
}

// selfValidating is a kind whose Validate method checks what its schema cannot.
type selfValidating interface {
	runtime.Object
	Validate() (warnings []string, err error)
}

// validator serves a kind's Validate method as its validating webhook.
type validator[T selfValidating] struct{}

func (validator[T]) ValidateCreate(_ context.Context, obj T) (admission.Warnings, error) {
	return obj.Validate()
}

func (validator[T]) ValidateUpdate(_ context.Context, _, obj T) (admission.Warnings, error) {
	return obj.Validate()
}

func (validator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

// Validate checks that the CA data, when set, holds PEM certificates, that
// devRouteTagTemplate renders a header name (for a sample app), and that
// freeze windows name known time zones.
func (c *Cluster) Validate() (warnings []string, err error) {
	var errs field.ErrorList
	if c.Spec.Config != nil && len(c.Spec.Config.CertificateAuthorityData) > 0 &&
		!x509.NewCertPool().AppendCertsFromPEM(c.Spec.Config.CertificateAuthorityData) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "config", "certificate-authority-data"), "<bytes>",
			"holds no PEM certificate"))
	}
	if _, err := c.DevRouteHeader("app", "target", "fleet"); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "devRouteTagTemplate"), c.Spec.DevRouteTagTemplate, err.Error()))
	}
	for i, w := range c.Spec.Freezes {
		if w.Weekly == nil || w.Weekly.TimeZone == "" {
			continue
		}
		if _, err := time.LoadLocation(w.Weekly.TimeZone); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "freezes").Index(i).Child("weekly", "timeZone"), w.Weekly.TimeZone,
				"not a time zone of the IANA database"))
		}
	}
	if len(errs) == 0 {
		return nil, nil
	}
	return nil, apierrors.NewInvalid(GroupVersion.WithKind("Cluster").GroupKind(), c.Name, errs)
}

// clusterSecretsValidator serves ClusterSecrets' validating webhook:
// Validate, and a target namespace that is not protected.
type clusterSecretsValidator struct {
	protected []string
}

func (v clusterSecretsValidator) ValidateCreate(_ context.Context, c *ClusterSecrets) (admission.Warnings, error) {
	return c.ValidateProtected(v.protected)
}

func (v clusterSecretsValidator) ValidateUpdate(_ context.Context, _, c *ClusterSecrets) (admission.Warnings, error) {
	return c.ValidateProtected(v.protected)
}

func (clusterSecretsValidator) ValidateDelete(context.Context, *ClusterSecrets) (admission.Warnings, error) {
	return nil, nil
}

// ValidateProtected is Validate, which also refuses a target namespace
// among protected (ProtectedNamespaces): Picchu never writes Secrets into
// the namespaces of Kubernetes, the mesh and the cluster's add-ons.
func (c *ClusterSecrets) ValidateProtected(protected []string) (warnings []string, err error) {
	errs := c.validate()
	if p, ok := ProtectedNamespace(c.Spec.Target.Namespace, protected); ok {
		errs = append(errs, field.Invalid(field.NewPath("spec", "target", "namespace"), c.Spec.Target.Namespace,
			fmt.Sprintf("is protected (%q): Picchu never writes Secrets into it on a target cluster", p)))
	}
	if len(errs) == 0 {
		return nil, nil
	}
	return nil, apierrors.NewInvalid(GroupVersion.WithKind("ClusterSecrets").GroupKind(), c.Name, errs)
}

// Validate checks that the label and field selectors parse.
func (c *ClusterSecrets) Validate() (warnings []string, err error) {
	if errs := c.validate(); len(errs) > 0 {
		return nil, apierrors.NewInvalid(GroupVersion.WithKind("ClusterSecrets").GroupKind(), c.Name, errs)
	}
	return nil, nil
}

// validate is what Validate refuses.
func (c *ClusterSecrets) validate() field.ErrorList {
	var errs field.ErrorList
	check := func(path *field.Path, labelSelector, fieldSelector string) {
		if _, err := labels.Parse(labelSelector); err != nil {
			errs = append(errs, field.Invalid(path.Child("labelSelector"), labelSelector, err.Error()))
		}
		if _, err := fields.ParseSelector(fieldSelector); err != nil {
			errs = append(errs, field.Invalid(path.Child("fieldSelector"), fieldSelector, err.Error()))
		}
	}
	spec := field.NewPath("spec")
	check(spec.Child("source"), c.Spec.Source.LabelSelector, c.Spec.Source.FieldSelector)
	check(spec.Child("target"), c.Spec.Target.LabelSelector, c.Spec.Target.FieldSelector)
	return errs
}

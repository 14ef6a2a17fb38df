package v1alpha1

import (
	"context"
	"crypto/x509"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// SetupWebhooksWithManager registers the admission webhooks of every kind
// that has one: Revision (defaulting and validation), Cluster and
// ClusterSecrets (validation).
func SetupWebhooksWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &Revision{}).
		WithDefaulter(revisionWebhook{}).
		WithValidator(revisionWebhook{}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &Cluster{}).
		WithValidator(clusterWebhook{}).
		Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &ClusterSecrets{}).
		WithValidator(clusterSecretsWebhook{}).
		Complete()
}

// +kubebuilder:webhook:path=/mutate-picchu-medium-engineering-v1alpha1-revision,mutating=true,failurePolicy=fail,sideEffects=None,groups=picchu.medium.engineering,resources=revisions,verbs=create;update,versions=v1alpha1,name=mrevision.picchu.medium.engineering,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-picchu-medium-engineering-v1alpha1-revision,mutating=false,failurePolicy=fail,sideEffects=None,groups=picchu.medium.engineering,resources=revisions,verbs=create;update,versions=v1alpha1,name=vrevision.picchu.medium.engineering,admissionReviewVersions=v1

type revisionWebhook struct{}

func (revisionWebhook) Default(_ context.Context, r *Revision) error {
	r.DefaultRouting()
	return nil
}

func (revisionWebhook) ValidateCreate(_ context.Context, r *Revision) (admission.Warnings, error) {
	return r.Validate()
}

func (revisionWebhook) ValidateUpdate(_ context.Context, _, r *Revision) (admission.Warnings, error) {
	return r.Validate()
}

func (revisionWebhook) ValidateDelete(context.Context, *Revision) (admission.Warnings, error) {
	return nil, nil
}

// +kubebuilder:webhook:path=/validate-picchu-medium-engineering-v1alpha1-cluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=picchu.medium.engineering,resources=clusters,verbs=create;update,versions=v1alpha1,name=vcluster.picchu.medium.engineering,admissionReviewVersions=v1

type clusterWebhook struct{}

func (clusterWebhook) ValidateCreate(_ context.Context, c *Cluster) (admission.Warnings, error) {
	return nil, c.Validate()
}

func (clusterWebhook) ValidateUpdate(_ context.Context, _, c *Cluster) (admission.Warnings, error) {
	return nil, c.Validate()
}

func (clusterWebhook) ValidateDelete(context.Context, *Cluster) (admission.Warnings, error) {
	return nil, nil
}

// Validate checks that the CA data, when set, holds PEM certificates.
func (c *Cluster) Validate() error {
	if c.Spec.Config == nil || len(c.Spec.Config.CertificateAuthorityData) == 0 {
		return nil
	}
	if x509.NewCertPool().AppendCertsFromPEM(c.Spec.Config.CertificateAuthorityData) {
		return nil
	}
	return apierrors.NewInvalid(GroupVersion.WithKind("Cluster").GroupKind(), c.Name, field.ErrorList{
		field.Invalid(field.NewPath("spec", "config", "certificate-authority-data"), "<bytes>",
			"holds no PEM certificate"),
	})
}

// +kubebuilder:webhook:path=/validate-picchu-medium-engineering-v1alpha1-clustersecrets,mutating=false,failurePolicy=fail,sideEffects=None,groups=picchu.medium.engineering,resources=clustersecrets,verbs=create;update,versions=v1alpha1,name=vclustersecrets.picchu.medium.engineering,admissionReviewVersions=v1

type clusterSecretsWebhook struct{}

func (clusterSecretsWebhook) ValidateCreate(_ context.Context, c *ClusterSecrets) (admission.Warnings, error) {
	return nil, c.Validate()
}

func (clusterSecretsWebhook) ValidateUpdate(_ context.Context, _, c *ClusterSecrets) (admission.Warnings, error) {
	return nil, c.Validate()
}

func (clusterSecretsWebhook) ValidateDelete(context.Context, *ClusterSecrets) (admission.Warnings, error) {
	return nil, nil
}

// Validate checks that the label and field selectors parse.
func (c *ClusterSecrets) Validate() error {
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
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(GroupVersion.WithKind("ClusterSecrets").GroupKind(), c.Name, errs)
}

package kubevalidation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Admission runs the delivery API server's create path for Revisions.
type Admission struct {
	structural *structuralschema.Structural
	strategy   interface {
		Validate(context.Context, runtime.Object) field.ErrorList
	}
}

// NewAdmission reads the Revision CRD from crdPath and prepares its schema
// as the API server does.
func NewAdmission(crdPath string) (*Admission, error) {
	data, err := os.ReadFile(crdPath)
	if err != nil {
		return nil, fmt.Errorf("reading the Revision CRD: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("decoding the Revision CRD %s: %w", crdPath, err)
	}
	gvk := picchuv1alpha1.GroupVersion.WithKind("Revision")
	for _, v := range crd.Spec.Versions {
		if v.Name != gvk.Version || v.Schema == nil {
			continue
		}
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("converting the %s schema: %w", v.Name, err)
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("the %s schema is not structural: %w", v.Name, err)
		}
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return nil, fmt.Errorf("pruning the %s schema's defaults: %w", v.Name, err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("building the %s schema's validator: %w", v.Name, err)
		}
		strategy := customresource.NewStrategy(unstructuredscheme.NewUnstructuredObjectTyper(), true, gvk,
			validator, nil, s, &apiextensions.CustomResourceSubresourceStatus{}, nil, nil)
		return &Admission{structural: s, strategy: strategy}, nil
	}
	return nil, fmt.Errorf("%s has no schema for version %s", crdPath, gvk.Version)
}

// Create admits a Revision sent as JSON, as the API server with Picchu's
// webhooks would, and returns it as stored, or why it was rejected.
func (a *Admission) Create(data []byte) (*picchuv1alpha1.Revision, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	a.decode(u)

	// The mutating webhook, which decodes the object into the Go types.
	r := &picchuv1alpha1.Revision{}
	if err := decodeJSON(u, r); err != nil {
		return nil, fmt.Errorf("mutating webhook: %w", err)
	}
	// What revisionDefaulter.Default does (api/v1alpha1/webhook.go).
	r.DefaultRouting()
	r.DefaultScale()
	mutated, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("mutating webhook: encoding: %w", err)
	}
	u = &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(mutated); err != nil {
		return nil, fmt.Errorf("mutating webhook: decoding its patch: %w", err)
	}
	// The API server decodes the patched object as it decoded the request.
	a.decode(u)

	// The validating webhook, and the schema with its list types and CEL
	// rules and the embedded metadata. The API server runs the schema first;
	// the object is admitted when both accept it, so the cheaper runs first.
	stored := &picchuv1alpha1.Revision{}
	if err := decodeJSON(u, stored); err != nil {
		return nil, fmt.Errorf("validating webhook: %w", err)
	}
	if _, err := stored.Validate(); err != nil {
		return nil, err
	}
	ctx := genericapirequest.WithNamespace(context.Background(), u.GetNamespace())
	if errs := a.strategy.Validate(ctx, u); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return stored, nil
}

// decode does to a decoded object what the API server's decoder does:
// unknown fields and nulls go, the schema's defaults come.
func (a *Admission) decode(u *unstructured.Unstructured) {
	structuralpruning.PruneWithOptions(u.Object, a.structural, true, structuralschema.UnknownFieldPathOptions{})
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, a.structural)
	structuraldefaulting.Default(u.Object, a.structural)
}

// decodeJSON decodes u into r as webhooks and clients do: from its JSON.
func decodeJSON(u *unstructured.Unstructured, r *picchuv1alpha1.Revision) error {
	data, err := u.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	if err := json.Unmarshal(data, r); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}

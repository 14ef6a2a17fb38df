package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every Picchu kind.
	GroupVersion = schema.GroupVersion{Group: "picchu.medium.engineering", Version: "v1alpha1"}

	// SchemeBuilder registers the Picchu kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Picchu kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

package v1alpha1

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks what the CRD schema cannot express. It expects routing
// defaults to be filled (DefaultRouting) and returns an Invalid error naming
// every bad field, plus warnings for settings that are allowed but likely
// wrong.
func (r *Revision) Validate() (warnings []string, err error) {
	if len(r.undecoded.problems) > 0 {
		// Only a schema that lets a value through that the Go types cannot
		// hold gets here (see DecodeError).
		return nil, apierrors.NewInvalid(GroupVersion.WithKind("Revision").GroupKind(), r.Name, r.undecoded.problems)
	}
	var errs field.ErrorList
	targets := field.NewPath("spec", "targets")
	for i := range r.Spec.Targets {
		w, e := r.Spec.Targets[i].validate(targets.Index(i))
		warnings = append(warnings, w...)
		errs = append(errs, e...)
	}
	if len(errs) == 0 {
		return warnings, nil
	}
	return warnings, apierrors.NewInvalid(GroupVersion.WithKind("Revision").GroupKind(), r.Name, errs)
}

func (t *RevisionTarget) validate(path *field.Path) (warnings []string, errs field.ErrorList) {
	errs = append(errs, t.validateIngressPorts(path)...)
	errs = append(errs, t.validateSLONames(path.Child("serviceLevelObjectives"))...)
	errs = append(errs, t.validatePod(path)...)
	if t.ConfigSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(t.ConfigSelector); err != nil {
			errs = append(errs, field.Invalid(path.Child("configSelector"), t.ConfigSelector, err.Error()))
		}
	}
	errs = append(errs, t.Release.validateWaves(path.Child("release", "waves"))...)
	if t.Scale.Min != nil && *t.Scale.Min > t.Scale.Max {
		warnings = append(warnings, fmt.Sprintf("%s: min (%d) is above max (%d); the autoscaler will run max replicas",
			path.Child("scale"), *t.Scale.Min, t.Scale.Max))
	}
	if t.Canary.Percent > t.Release.Max {
		warnings = append(warnings, fmt.Sprintf("%s: canary percent (%d) is above release max (%d); the canary is capped at max",
			path.Child("canary", "percent"), t.Canary.Percent, t.Release.Max))
	}
	return warnings, errs
}

// validateIngressPorts checks that every ingress that has ports has one
// default port, and that at most one port per ingress is flagged default.
func (t *RevisionTarget) validateIngressPorts(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, ingress := range []Ingress{IngressPrivate, IngressPublic} {
		var exposed, flagged []string
		for i := range t.Ports {
			if t.Ports[i].ExposedOn(ingress) {
				exposed = append(exposed, t.Ports[i].Name)
				if t.Ports[i].Default {
					flagged = append(flagged, t.Ports[i].Name)
				}
			}
		}
		if len(flagged) > 1 {
			errs = append(errs, field.Invalid(path.Child("ports"), strings.Join(flagged, ", "),
				fmt.Sprintf("only one port exposed on the %s ingress may be flagged default", ingress)))
			continue
		}
		if len(exposed) > 0 && t.DefaultIngressPort(ingress) == "" {
			errs = append(errs, field.Required(path.Child("defaultIngressPorts").Key(string(ingress)),
				fmt.Sprintf("the %s ingress has ports %s: name its default port here, flag one port default, or name one %q",
					ingress, strings.Join(exposed, ", "), DefaultPortName)))
		}
	}
	return errs
}

// validateSLONames checks that enabled SLOs have unique, non-empty names:
// the names become recording-rule and alert names.
func (t *RevisionTarget) validateSLONames(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, slo := range t.ServiceLevelObjectives {
		if !slo.Enabled {
			continue
		}
		switch {
		case slo.Name == "":
			errs = append(errs, field.Required(path.Index(i).Child("name"), "an enabled SLO needs a name"))
		case seen[slo.Name]:
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), slo.Name))
		}
		seen[slo.Name] = true
	}
	return errs
}

// validateWaves checks that each wave's selector parses and that no two
// waves share a name.
func (r *ReleaseInfo) validateWaves(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range r.Waves {
		w := &r.Waves[i]
		if _, err := metav1.LabelSelectorAsSelector(&w.Selector); err != nil {
			errs = append(errs, field.Invalid(path.Index(i).Child("selector"), w.Selector, err.Error()))
		}
		if w.Name != "" && names[w.Name] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), w.Name))
		}
		names[w.Name] = true
		if w.Bake != nil && w.Bake.Duration < 0 {
			errs = append(errs, field.Invalid(path.Index(i).Child("bake"), w.Bake.Duration.String(), "must not be negative"))
		}
	}
	return errs
}

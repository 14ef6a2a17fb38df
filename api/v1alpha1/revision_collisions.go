package v1alpha1

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Collision is a target of a Revision whose "<app>-<target>" name is taken
// by another app: app "a-b" in target "c" and app "a" in target "b-c" would
// share a ReleaseManager and a namespace on every cluster.
type Collision struct {
	// Index is the position of the target in the Revision's spec.targets.
	Index int
	// Name is the shared name; App and Target are the other app's.
	Name, App, Target string
}

// Collisions lists the targets of rev whose ReleaseManager name another
// app's target of others already has. Revisions of the same app never
// collide.
func Collisions(rev *Revision, others []Revision) []Collision {
	taken := map[string][2]string{}
	for i := range others {
		o := &others[i]
		if o.Spec.App.Name == rev.Spec.App.Name || (o.Namespace == rev.Namespace && o.Name == rev.Name) {
			continue
		}
		for _, t := range o.Spec.Targets {
			taken[ReleaseManagerName(o.Spec.App.Name, t.Name)] = [2]string{o.Spec.App.Name, t.Name}
		}
	}
	var out []Collision
	for i, t := range rev.Spec.Targets {
		name := ReleaseManagerName(rev.Spec.App.Name, t.Name)
		if other, ok := taken[name]; ok {
			out = append(out, Collision{Index: i, Name: name, App: other[0], Target: other[1]})
		}
	}
	return out
}

// revisionValidator checks a Revision's fields (Revision.Validate), the
// times of the control requests a change makes (Revision.ValidateControl),
// that its "<app>-<target>" names are not protected namespaces, that
// they are not another app's, and that its ports' hosts are ones its
// fleets' Clusters allow (validateHosts); it warns about the SLI queries sliCheck
// refuses (Revision.SLIQueryWarnings). reader reads the API server, not a cache that
// may lag behind a Revision just created.
type revisionValidator struct {
	reader    client.Reader
	protected []string
	// policy says which namespaces the apps of each delivery namespace
	// may use (WebhookOptions.AppNamespacePolicy).
	policy AppNamespacePolicy
	// sliCheck says why the baseline comparison cannot count an SLI query
	// per raw series (WebhookOptions.SLIQueryCheck); nil checks nothing.
	sliCheck func(query string) error
	// targetCheck refuses what a target writes that could reach another
	// team's verdicts (WebhookOptions.TargetCheck); nil checks nothing.
	targetCheck func(app string, t *RevisionTarget, path *field.Path) field.ErrorList
}

func (v revisionValidator) ValidateCreate(ctx context.Context, rev *Revision) (admission.Warnings, error) {
	if err := validControl(rev, nil); err != nil {
		return nil, err
	}
	return v.validate(ctx, rev)
}

func (v revisionValidator) ValidateUpdate(ctx context.Context, old, rev *Revision) (admission.Warnings, error) {
	if err := validControl(rev, old); err != nil {
		return nil, err
	}
	return v.validate(ctx, rev)
}

// validControl refuses the promote and rollback requests rev's change
// makes with times ahead of this webhook's clock (Revision.ValidateControl).
func validControl(rev, old *Revision) error {
	if errs := rev.ValidateControl(old, time.Now()); len(errs) > 0 {
		return apierrors.NewInvalid(GroupVersion.WithKind("Revision").GroupKind(), rev.Name, errs)
	}
	return nil
}

func (revisionValidator) ValidateDelete(context.Context, *Revision) (admission.Warnings, error) {
	return nil, nil
}

func (v revisionValidator) validate(ctx context.Context, rev *Revision) (admission.Warnings, error) {
	warnings, err := rev.Validate()
	warnings = append(warnings, rev.SLIQueryWarnings(v.sliCheck)...)
	if err != nil {
		return warnings, err
	}
	if err := rev.checkTargets(v.targetCheck); err != nil {
		return warnings, err
	}
	if err := rev.validateNamespaces(v.protected, v.policy); err != nil {
		return warnings, err
	}
	if v.reader == nil {
		return warnings, nil
	}
	if err := v.validateHosts(ctx, rev); err != nil {
		return warnings, err
	}
	// Only an app whose name is rev's "<app>-<target>" cut at a "-" can
	// collide with it: ask the API server for those apps' Revisions alone.
	var others []Revision
	for _, app := range collidingApps(rev) {
		list := &RevisionList{}
		if err := v.reader.List(ctx, list, client.InNamespace(rev.Namespace), client.MatchingFields{RevisionAppField: app}); err != nil {
			return warnings, apierrors.NewInternalError(fmt.Errorf("listing revisions of app %q to check name collisions: %w", app, err))
		}
		others = append(others, list.Items...)
	}
	collisions := Collisions(rev, others)
	if len(collisions) == 0 {
		return warnings, nil
	}
	var errs field.ErrorList
	for _, c := range collisions {
		errs = append(errs, field.Invalid(field.NewPath("spec", "targets").Index(c.Index).Child("name"), rev.Spec.Targets[c.Index].Name,
			fmt.Sprintf("app %q in this target would be named %q, which app %q in target %q already is (its ReleaseManager and its namespace on every cluster); rename the app or the target",
				rev.Spec.App.Name, c.Name, c.App, c.Target)))
	}
	return warnings, apierrors.NewInvalid(GroupVersion.WithKind("Revision").GroupKind(), rev.Name, errs)
}

// collidingApps lists the apps other than rev's that could have a target
// named like one of rev's: "<app>-<target>" cut at each "-".
func collidingApps(rev *Revision) []string {
	seen := map[string]bool{rev.Spec.App.Name: true}
	var out []string
	for _, t := range rev.Spec.Targets {
		name := ReleaseManagerName(rev.Spec.App.Name, t.Name)
		for i := range len(name) {
			if name[i] != '-' || seen[name[:i]] || i == 0 {
				continue
			}
			seen[name[:i]] = true
			out = append(out, name[:i])
		}
	}
	return out
}

// validateNamespaces refuses targets whose "<app>-<target>" namespace is
// one of protected, or one policy does not allow rev's delivery namespace,
// naming the target's name.
func (rev *Revision) validateNamespaces(protected []string, policy AppNamespacePolicy) error {
	var errs field.ErrorList
	for i, t := range rev.Spec.Targets {
		if _, err := NamespaceRefused(rev.Namespace, rev.Spec.App.Name, t.Name, protected, policy); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "targets").Index(i).Child("name"), t.Name, err.Error()))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(GroupVersion.WithKind("Revision").GroupKind(), rev.Name, errs)
}

// validateHosts refuses the ports' hosts that a Cluster of the target's
// fleet, in rev's namespace, may not route (RevisionTarget.HostErrors). A
// fleet with no Clusters yet refuses nothing here: the controller checks
// each cluster as it plans its routes.
func (v revisionValidator) validateHosts(ctx context.Context, rev *Revision) error {
	fleets := map[string][]Cluster{}
	var errs field.ErrorList
	for i := range rev.Spec.Targets {
		t := &rev.Spec.Targets[i]
		if !slices.ContainsFunc(t.Ports, func(p PortInfo) bool { return len(p.Hosts) > 0 }) {
			continue
		}
		clusters, listed := fleets[t.Fleet]
		if !listed {
			list := &ClusterList{}
			if err := v.reader.List(ctx, list, client.InNamespace(rev.Namespace), client.MatchingLabels{LabelFleet: t.Fleet}); err != nil {
				return apierrors.NewInternalError(fmt.Errorf("listing the clusters of fleet %q to check the ports' hosts: %w", t.Fleet, err))
			}
			clusters = list.Items
			fleets[t.Fleet] = clusters
		}
		errs = append(errs, t.HostErrors(clusters, field.NewPath("spec", "targets").Index(i))...)
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(GroupVersion.WithKind("Revision").GroupKind(), rev.Name, errs)
}

// checkTargets returns check's errors of every target as one Invalid
// error; nil when check is nil or finds nothing.
func (rev *Revision) checkTargets(check func(app string, t *RevisionTarget, path *field.Path) field.ErrorList) error {
	if check == nil {
		return nil
	}
	var errs field.ErrorList
	for i := range rev.Spec.Targets {
		errs = append(errs, check(rev.Spec.App.Name, &rev.Spec.Targets[i], field.NewPath("spec", "targets").Index(i))...)
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(GroupVersion.WithKind("Revision").GroupKind(), rev.Name, errs)
}

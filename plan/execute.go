package plan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

// replicaSetKind is the kind of a build's ReplicaSet.
var replicaSetKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Errors are the errors of one cluster's Plan, told apart: each build's
// steps are taken on their own, so that one build the cluster rejects
// holds that build, not the app's routing or its other builds (a rollback
// above all).
type Errors struct {
	// App is the error of the app's own steps: its namespace and access,
	// routes, waypoint, monitoring.
	App error
	// Builds are the errors of the builds' steps, by tag.
	Builds map[string]error
}

func (e *Errors) Error() string { return errors.Join(e.Unwrap()...).Error() }

// Unwrap returns the app's error, then the builds' by tag.
func (e *Errors) Unwrap() []error {
	out := make([]error, 0, 1+len(e.Builds))
	if e.App != nil {
		out = append(out, e.App)
	}
	for _, tag := range slices.Sorted(maps.Keys(e.Builds)) {
		out = append(out, e.Builds[tag])
	}
	return out
}

// orNil is e, or nil when nothing failed.
func (e *Errors) orNil() error {
	if e.App == nil && len(e.Builds) == 0 {
		return nil
	}
	return e
}

// BuildErrors returns the errors of a cluster's Plan that belong to
// builds, by tag, and whether they are all of it: false when the app's own
// steps failed, or the Plan as a whole (a deadline, say).
func BuildErrors(err error) (map[string]error, bool) {
	var e *Errors
	if !errors.As(err, &e) {
		return nil, false
	}
	return e.Builds, e.App == nil
}

// Outcome is what carrying out a Plan learnt of the cluster, beyond errors.
type Outcome struct {
	// ExternalSecretsUnserved says the cluster does not serve
	// ExternalSecrets, and a build had some to copy there.
	ExternalSecretsUnserved bool
	// LegacyRemoved are the leftovers of the original's that Legacy prune
	// steps deleted, each as "Kind namespace/name".
	LegacyRemoved []string
}

// Execute carries out p on c: the app's steps, each build's, then the
// routes, the waypoint and the monitoring. A build whose steps fail stops
// neither the others nor the routes. Its error is an *Errors. It is one
// run of c (applier.WithRun): what it writes, it does not ask about again.
func Execute(ctx context.Context, c *applier.Cluster, p *Cluster) (Outcome, error) {
	ctx = applier.WithRun(ctx)
	var out Outcome
	errs := &Errors{Builds: map[string]error{}}
	c.Warm(ctx, p.kinds(c.Client.Scheme()))
	if err := run(ctx, c, p.App, nil); err != nil {
		errs.App = err
		return out, errs
	}
	for _, b := range p.Builds {
		if err := executeBuild(ctx, c, b, &out); err != nil {
			errs.Builds[b.Tag] = err
		}
	}
	for _, steps := range [][]Step{p.Routes, p.Waypoint, p.Monitoring} {
		st := &buildState{served: true}
		err := run(ctx, c, steps, st)
		out.LegacyRemoved = append(out.LegacyRemoved, st.legacy...)
		if err != nil {
			errs.App = err
			return out, errs
		}
	}
	return out, errs.orNil()
}

// kinds are the kinds of the objects p's steps apply, delete or select,
// each once, in the order met. An object whose kind scheme does not know is
// left out (its step fails with that).
func (p *Cluster) kinds(scheme *runtime.Scheme) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	add := func(gvk schema.GroupVersionKind) {
		if !gvk.Empty() && !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	steps := slices.Concat(p.App, p.Routes, p.Waypoint, p.Monitoring)
	for _, b := range p.Builds {
		steps = append(steps, b.Steps...)
	}
	for _, s := range steps {
		for _, obj := range append([]client.Object{s.Object, s.Unserved}, s.Objects...) {
			if obj == nil || reflect.ValueOf(obj).IsNil() {
				continue
			}
			if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
				add(gvk)
			}
		}
		for _, gvk := range s.Kinds {
			add(gvk)
		}
	}
	return out
}

// executeBuild takes a build's steps, its error naming the build.
func executeBuild(ctx context.Context, c *applier.Cluster, b Build, out *Outcome) error {
	err := b.Hold
	if err == nil {
		st := &buildState{served: true}
		err = run(ctx, c, b.Steps, st)
		if st.unserved && out != nil {
			out.ExternalSecretsUnserved = true
		}
	}
	if err == nil {
		return nil
	}
	switch b.Action {
	case Retire:
		return fmt.Errorf("retiring build %s: %w", b.Tag, err)
	case Delete:
		return fmt.Errorf("deleting build %s: %w", b.Tag, err)
	}
	return fmt.Errorf("build %s: %w", b.Tag, err)
}

// buildState is what a build's steps read on the cluster, for the
// conditional steps after them.
type buildState struct {
	// served says the cluster serves ExternalSecrets, or was not asked;
	// unserved that a build with some found it does not.
	served, unserved bool
	// autoscaled says the live ReplicaSet names an autoscaler.
	autoscaled bool
	// legacy are the objects Legacy prune steps deleted.
	legacy []string
}

// run takes steps in order and stops at the first error.
func run(ctx context.Context, c *applier.Cluster, steps []Step, st *buildState) error {
	if st == nil {
		st = &buildState{served: true}
	}
	for i := range steps {
		s := &steps[i]
		if s.IfAutoscaled && !st.autoscaled {
			continue
		}
		if err := step(ctx, c, s, st); err != nil {
			return err
		}
	}
	return nil
}

// step takes one step.
func step(ctx context.Context, c *applier.Cluster, s *Step, st *buildState) error {
	switch s.Op {
	case Apply:
		return apply(ctx, c, s)
	case Remove:
		return c.Delete(ctx, s.Object)
	case RemoveAll:
		return c.DeleteAllOf(ctx, s.Namespace, s.Selector, s.Kinds...)
	case Prune:
		removed, err := prune(ctx, c, s.Namespace, s.Selector, s.Kinds[0], s.Keep)
		if s.Legacy {
			for _, name := range removed {
				st.legacy = append(st.legacy, s.Kinds[0].Kind+" "+s.Namespace+"/"+name)
			}
		}
		return err
	case Fail:
		return s.Err
	case ApplyCreating:
		return applyCreating(ctx, c, s.Object)
	case ExternalSecrets:
		return externalSecrets(ctx, c, s, st)
	case ScaleReplicaSet:
		return scale(ctx, c, s, st)
	}
	return fmt.Errorf("unknown plan step %q", s.Op)
}

// apply applies a step's object, as its NeedsKind and Optional say.
func apply(ctx context.Context, c *applier.Cluster, s *Step) error {
	err := c.Apply(ctx, s.Object)
	switch {
	case err == nil:
		return nil
	case s.Optional && isNoKind(err):
		return nil
	case s.NeedsKind != "" && isNoKind(err):
		return fmt.Errorf("%s, but the cluster does not serve %s: %w", s.NeedsKind, s.Object.GetObjectKind().GroupVersionKind().Kind, err)
	}
	return err
}

// applyCreating applies obj, creating its namespace first when the
// cluster does not have it. The namespace is created when missing, and
// never applied over nor deleted: it is shared, and not Picchu's.
func applyCreating(ctx context.Context, c *applier.Cluster, obj client.Object) error {
	err := c.Apply(ctx, obj)
	if !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.GetNamespace()}}); err != nil {
		return fmt.Errorf("creating the service levels namespace: %w", err)
	}
	return c.Apply(ctx, obj)
}

// externalSecrets applies a build's ExternalSecret copies and prunes the
// others. A cluster that does not serve them gets none: st records it.
func externalSecrets(ctx context.Context, c *applier.Cluster, s *Step, st *buildState) error {
	err := func() error {
		for _, obj := range s.Objects {
			if err := c.Apply(ctx, obj); err != nil {
				return err
			}
		}
		_, err := prune(ctx, c, s.Namespace, s.Selector, s.Kinds[0], s.Keep)
		return err
	}()
	switch {
	case err != nil && isNoKind(err):
		st.served = false
		st.unserved = st.unserved || len(s.Makes) > 0
		return nil
	case err != nil:
		return fmt.Errorf("external secrets: %w", err)
	}
	return nil
}

// scale reads a build's live ReplicaSet and writes it and its replicas as
// the step's Replicas say.
func scale(ctx context.Context, c *applier.Cluster, s *Step, st *buildState) error {
	rs := s.Object
	if !st.served && s.Unserved != nil {
		rs = s.Unserved
	}
	// Typed, as the observation reads ReplicaSets: one informer for both.
	live := &appsv1.ReplicaSet{}
	err := c.Client.Get(ctx, client.ObjectKeyFromObject(rs), live)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading ReplicaSet %s/%s: %w", rs.GetNamespace(), rs.GetName(), err)
	}
	exists := err == nil
	st.autoscaled = live.GetAnnotations()[manifests.AnnotationAutoscaler] != ""
	r := s.Replicas
	setReplicas := func(n int32) error {
		return c.ApplyReplicas(ctx, replicaSetKind, rs.GetNamespace(), rs.GetName(), n)
	}
	switch {
	case r.Set && exists:
		if err := setReplicas(r.To); err != nil {
			return err
		}
	case !exists && r.SkipAbsent:
		return nil
	case !exists:
		if err := c.CreateScaled(ctx, rs, r.CreateAt); err != nil {
			return err
		}
	default:
		if err := c.TakeOverReplicas(ctx, replicaSetKind, live, replicasOf(live)); err != nil {
			return err
		}
	}
	if err := c.Apply(ctx, rs); err != nil {
		return err
	}
	if !r.Set && exists && r.StartAt > 0 && replicasOf(live) == 0 {
		return setReplicas(r.StartAt)
	}
	return nil
}

// replicasOf is a live ReplicaSet's spec.replicas (1 when unset, as the
// API server defaults it).
func replicasOf(live *appsv1.ReplicaSet) int32 {
	if live.Spec.Replicas == nil {
		return 1
	}
	return *live.Spec.Replicas
}

// prune deletes the objects of kind in ns that carry the selector's labels
// and whose names keep does not hold, and returns the names it deleted. A
// kind the cluster does not serve has nothing to prune.
func prune(ctx context.Context, c *applier.Cluster, ns string, selector map[string]string, kind schema.GroupVersionKind, keep []string) ([]string, error) {
	items, err := c.ListMetadata(ctx, kind, ns, selector)
	if err != nil {
		if isNoKind(err) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	for i := range items {
		if !slices.Contains(keep, items[i].GetName()) {
			deleted, err := c.Deleted(ctx, &items[i])
			if err != nil {
				return removed, err
			}
			if deleted {
				removed = append(removed, items[i].GetName())
			}
		}
	}
	return removed, nil
}

// isNoKind says an error means the cluster does not serve a kind.
func isNoKind(err error) bool { return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) }

package story

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
	"github.com/medium/picchu/test/e2e/fleet"
)

// Target is the Revision target of the samples: builds run in namespace
// <app>-production on every cluster of its fleet.
const Target = "production"

// releaseRoute is the name of the weighted release route of the samples'
// "http" port in Picchu's VirtualServices.
const releaseRoute = "01_release-http"

// Snapshot is what the fleet shows of an app at one moment.
type Snapshot struct {
	At time.Time
	// Builds are the app's builds as its ReleaseManager records them, oldest first.
	Builds []Build
	// Clusters are the targets, in the fleet's order.
	Clusters []Cluster
	// Err says why the delivery cluster could not be read, if it could not.
	Err error
}

// Build is one build of the app.
type Build struct {
	Tag string
	// State is the ReleaseManager's state of the build in the target.
	State string
	// Percent is the traffic Picchu gives it, as recorded.
	Percent int32
	// Failed says the Revision is marked failed.
	Failed bool
	// FailedReason is the Revision's failed-reason annotation.
	FailedReason string
}

// Cluster is what one target cluster shows of the app.
type Cluster struct {
	Name string
	// Weights are the release route's weights by tag (zeros left out).
	Weights map[string]int32
	// Pods counts, by tag, the pods wanted by the tag's ReplicaSet and those Running and Ready.
	Pods map[string]Pods
	// Err says why the cluster could not be read, if it could not.
	Err error
}

// Pods are the pods of one build on one cluster.
type Pods struct {
	Desired, Running int32
}

// Build returns the build with tag, or the zero Build.
func (s Snapshot) Build(tag string) Build {
	for _, b := range s.Builds {
		if b.Tag == tag {
			return b
		}
	}
	return Build{}
}

// Cluster returns the cluster named name, or the zero Cluster.
func (s Snapshot) Cluster(name string) Cluster {
	for _, c := range s.Clusters {
		if c.Name == name {
			return c
		}
	}
	return Cluster{}
}

// Routes formats a cluster's weights as "tag=percent ...", sorted by tag.
func (c Cluster) Routes() string {
	var parts []string
	for _, tag := range slices.Sorted(maps.Keys(c.Weights)) {
		parts = append(parts, fmt.Sprintf("%s=%d", tag, c.Weights[tag]))
	}
	return strings.Join(parts, " ")
}

// Observe reads app's state from the fleet: the ReleaseManager and
// Revisions on the delivery cluster, the HTTPRoute or VirtualService, ReplicaSets and
// pods on every target. A cluster that cannot be read is reported in its Err.
func Observe(ctx context.Context, f *fleet.Fleet, app string) Snapshot {
	s := Snapshot{At: time.Now()}
	s.Builds, s.Err = builds(ctx, f, app)
	for _, t := range f.Targets {
		s.Clusters = append(s.Clusters, ObserveCluster(ctx, t, app))
	}
	return s
}

// ObserveCluster reads app's routing and pods on one target cluster.
func ObserveCluster(ctx context.Context, t *fleet.Cluster, app string) Cluster {
	c := Cluster{Name: t.Name}
	c.Weights, c.Pods, c.Err = observeTarget(ctx, t.Client, app)
	return c
}

func builds(ctx context.Context, f *fleet.Fleet, app string) ([]Build, error) {
	c := f.Delivery.Client
	revs := &picchuv1alpha1.RevisionList{}
	if err := c.List(ctx, revs, client.InNamespace(f.Namespace), client.MatchingFields{picchuv1alpha1.RevisionAppField: app}); err != nil {
		return nil, fmt.Errorf("listing revisions of %s: %w", app, err)
	}
	failed := map[string]Build{}
	for _, r := range revs.Items {
		failed[r.Spec.App.Tag] = Build{Failed: r.Spec.Failed, FailedReason: r.Annotations[picchuv1alpha1.AnnotationFailedReason]}
	}
	rm := &picchuv1alpha1.ReleaseManager{}
	err := c.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: app + "-" + Target}, rm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the release manager of %s: %w", app, err)
	}
	var out []Build
	for _, st := range rm.Status.Revisions {
		b := failed[st.Tag]
		b.Tag, b.State, b.Percent = st.Tag, st.State.Current, int32(st.CurrentPercent)
		out = append(out, b)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Tag < out[j].Tag })
	return out, nil
}

// observeTarget reads app's routes on a target cluster and its builds'
// pods there, as one snapshot: the routes are read again after the pods,
// and the whole read again (up to 5 times) when they moved meanwhile. Two
// reads are not atomic: a run that moves a build's last traffic away and
// the next one that retires its pods can both land between them, which
// would read as traffic to a build without pods. A ReplicaSet scaled down
// before its routes moved still shows: the routes read the same on both
// sides of the pods.
func observeTarget(ctx context.Context, c client.Client, app string) (map[string]int32, map[string]Pods, error) {
	for attempt := 1; ; attempt++ {
		weights, err := routeWeights(ctx, c, app)
		if err != nil {
			return nil, nil, err
		}
		pods, err := podsOf(ctx, c, app)
		if err != nil {
			return nil, nil, err
		}
		after, err := routeWeights(ctx, c, app)
		if err != nil {
			return nil, nil, err
		}
		if maps.Equal(weights, after) || attempt == 5 {
			return weights, pods, nil
		}
	}
}

// routeWeights reads the weights of app's builds on a target cluster, by
// tag: from its HTTPRoute when it has one, else its VirtualService.
func routeWeights(ctx context.Context, c client.Client, app string) (map[string]int32, error) {
	ns := app + "-" + Target
	weights, routed, err := gatewayWeights(ctx, c, app)
	if err != nil {
		return nil, err
	}
	vs := &istionetworking.VirtualService{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, vs); {
	case routed || apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading the VirtualService of %s: %w", app, err)
	default:
		for _, route := range vs.Spec.Http {
			if route.Name != releaseRoute {
				continue
			}
			for _, d := range route.Route {
				if d.Weight > 0 {
					weights[d.Destination.Subset] = d.Weight
				}
			}
		}
	}
	return weights, nil
}

// podsOf reads, by tag, the replicas app's ReplicaSets ask for on a target
// cluster and the pods of each that run and are ready.
func podsOf(ctx context.Context, c client.Client, app string) (map[string]Pods, error) {
	ns := app + "-" + Target
	pods := map[string]Pods{}
	rss := &appsv1.ReplicaSetList{}
	if err := c.List(ctx, rss, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the ReplicaSets of %s: %w", app, err)
	}
	for _, rs := range rss.Items {
		tag := rs.Labels[picchuv1alpha1.LabelTag]
		p := pods[tag]
		if rs.Spec.Replicas != nil {
			p.Desired += *rs.Spec.Replicas
		}
		pods[tag] = p
	}
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", app, err)
	}
	for _, pod := range list.Items {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil || !podReady(&pod) {
			continue
		}
		tag := pod.Labels[picchuv1alpha1.LabelTag]
		p := pods[tag]
		p.Running++
		pods[tag] = p
	}
	return pods, nil
}

// ObserveGatewayRoute says whether app is routed on c by the Gateway API
// alone: its HTTPRoute for the "http" port there, and neither a
// VirtualService nor a DestinationRule left.
func ObserveGatewayRoute(ctx context.Context, c *fleet.Cluster, app string) error {
	if _, routed, err := gatewayWeights(ctx, c.Client, app); err != nil || !routed {
		return fmt.Errorf("no HTTPRoute %s-http for %s: %v", app, app, err)
	}
	ns := app + "-" + Target
	for _, obj := range []client.Object{&istionetworking.VirtualService{}, &istionetworking.DestinationRule{}} {
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, obj); !apierrors.IsNotFound(err) {
			return fmt.Errorf("%T %s/%s still there, or unreadable: %v", obj, ns, app, err)
		}
	}
	return nil
}

// gatewayWeights reads the weights of app's release rule in its HTTPRoute
// for the "http" port (the rule without header matches), by the tag of
// each build Service it weighs, and whether the app has that route.
func gatewayWeights(ctx context.Context, c client.Client, app string) (map[string]int32, bool, error) {
	ns := app + "-" + Target
	weights := map[string]int32{}
	route := &gatewayv1.HTTPRoute{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: app + "-http"}, route); {
	case apierrors.IsNotFound(err):
		return weights, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("reading the HTTPRoute of %s: %w", app, err)
	}
	services := &corev1.ServiceList{}
	if err := c.List(ctx, services, client.InNamespace(ns), client.HasLabels{manifests.LabelBuildService}); err != nil {
		return nil, false, fmt.Errorf("listing the build Services of %s: %w", app, err)
	}
	tags := map[string]string{}
	for _, svc := range services.Items {
		tags[svc.Name] = svc.Labels[picchuv1alpha1.LabelTag]
	}
	for _, rule := range route.Spec.Rules {
		if len(rule.Matches) == 0 || len(rule.Matches[0].Headers) > 0 {
			continue
		}
		for _, ref := range rule.BackendRefs {
			if tag, ok := tags[string(ref.Name)]; ok && ref.Weight != nil && *ref.Weight > 0 {
				weights[tag] = *ref.Weight
			}
		}
		break
	}
	return weights, true, nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

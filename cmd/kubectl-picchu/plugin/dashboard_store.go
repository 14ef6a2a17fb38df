package plugin

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// store is what every page of the dashboard reads: one informer per kind
// (Revisions, ReleaseManagers) over the namespaces the user may list, fed
// by one watch each whatever the number of pages open, and the weights
// each ReleaseManager's releasing build had as its changes arrived.
type store struct {
	reader cache.Cache
	// namespace is the one namespace read, or "" for every namespace.
	namespace string
	hub       *hub

	// events says whether the store watches the Events of Picchu's
	// objects; noEvents says why it does not.
	events   bool
	noEvents string

	mu sync.Mutex
	// weights are the releasing build's percents by ReleaseManager
	// (namespace/name), oldest first, at most sparkPoints.
	weights map[string][]weight
	// clusters are each build's percents in each cluster, as the
	// ReleaseManager recorded them with the time each cluster took them,
	// by ReleaseManager then build and cluster (clusterKey), oldest first,
	// at most chartPoints.
	clusters map[string]map[clusterKey][]weight
	now      func() time.Time
}

// clusterKey names a build in a cluster.
type clusterKey struct{ tag, cluster string }

// chartPoints is how many of a cluster's weights the app page charts.
const chartPoints = 120

// weight is a releasing build's percent at a time.
type weight struct {
	at      time.Time
	tag     string
	percent int32
}

// sparkPoints is how many weights a sparkline shows.
const sparkPoints = 60

// readableNamespaces is "" when the user may list and watch Revisions and
// ReleaseManagers in every namespace (a SelfSubjectAccessReview for each),
// and fallback, the kubeconfig's namespace (or --namespace), when the
// user may in that one. When the user may in neither, the dashboard would
// wait forever for lists the API server refuses: it says so instead.
func readableNamespaces(ctx context.Context, cs kubernetes.Interface, fallback string) (string, error) {
	if ok, err := mayWatchPicchu(ctx, cs, ""); err != nil || ok {
		return "", err
	}
	ok, err := mayWatchPicchu(ctx, cs, fallback)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("you may not list and watch revisions and releasemanagers in every namespace, nor in namespace %q: "+
			"pass --namespace with one you may read (kubectl auth can-i watch revisions.%s -n NAMESPACE)", fallback, picchuv1alpha1.GroupVersion.Group)
	}
	return fallback, nil
}

// mayWatchPicchu says whether the user may list and watch Revisions and
// ReleaseManagers in namespace ("" for every namespace).
func mayWatchPicchu(ctx context.Context, cs kubernetes.Interface, namespace string) (bool, error) {
	for _, resource := range []string{"revisions", "releasemanagers"} {
		if ok, err := mayWatch(ctx, cs, namespace, picchuv1alpha1.GroupVersion.Group, resource); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// mayWatch says whether the user may list and watch resource of group in
// namespace ("" for every namespace), as the API server answers
// SelfSubjectAccessReviews.
func mayWatch(ctx context.Context, cs kubernetes.Interface, namespace, group, resource string) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Group: group, Resource: resource, Verb: verb,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("asking whether you may %s %s in %s: %w", verb, resource, namespaceOrEvery(namespace), err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// namespaceOrEvery names namespace, or every namespace for "".
func namespaceOrEvery(namespace string) string {
	if namespace == "" {
		return "every namespace"
	}
	return "namespace " + namespace
}

// newStore starts the informers of the namespace ("" for all), and of the
// Events of Picchu's objects when the user may watch them, and waits for
// their first list.
func newStore(ctx context.Context, s *session, cs kubernetes.Interface, namespace string, now func() time.Time) (*store, error) {
	st := &store{namespace: namespace, hub: newHub(), weights: map[string][]weight{},
		clusters: map[string]map[clusterKey][]weight{}, now: now}
	var err error
	if st.events, err = mayWatch(ctx, cs, namespace, "", "events"); err != nil {
		return nil, err
	}
	if !st.events {
		st.noEvents = "you may not list and watch events in " + namespaceOrEvery(namespace)
	}
	// The page shows no managed fields: the cache keeps none, which are
	// much of each object's size at a thousand apps.
	opts := cache.Options{Scheme: s.scheme, DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{
		// Only the Events of Picchu's objects, selected by the API server.
		&corev1.Event{}: {Field: fields.OneTermEqualSelector("involvedObject.apiVersion", picchuv1alpha1.GroupVersion.String())},
	}}
	if namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	if st.reader, err = cache.New(s.config, opts); err != nil {
		return nil, fmt.Errorf("building the dashboard's cache of %s: %w", s.config.Host, err)
	}
	kinds := []client.Object{&picchuv1alpha1.Revision{}, &picchuv1alpha1.ReleaseManager{}}
	if st.events {
		kinds = append(kinds, &corev1.Event{})
	}
	for _, obj := range kinds {
		informer, err := st.reader.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { st.observe(o) },
			UpdateFunc: func(_, o any) { st.observe(o) },
			DeleteFunc: func(o any) { st.forget(o) },
		}); err != nil {
			return nil, fmt.Errorf("following %T: %w", obj, err)
		}
	}
	go func() { _ = st.reader.Start(ctx) }()
	if !st.reader.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("listing Revisions, ReleaseManagers and Events of %s: %w", s.config.Host, ctx.Err())
	}
	return st, nil
}

// observe records a releasing build's weight, and tells every open page
// that something changed.
func (st *store) observe(o any) {
	if rm, ok := o.(*picchuv1alpha1.ReleaseManager); ok {
		if rm.Status.Releasing != nil {
			st.record(rm.Namespace+"/"+rm.Name, weight{at: st.now(), tag: rm.Status.Releasing.Tag, percent: rm.Status.Releasing.Percent})
		}
		st.recordClusters(rm)
	}
	st.hub.changed()
}

// forget drops what record kept of a ReleaseManager that went, and tells
// every open page.
func (st *store) forget(o any) {
	if gone, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = gone.Obj
	}
	if rm, ok := o.(*picchuv1alpha1.ReleaseManager); ok {
		st.mu.Lock()
		delete(st.weights, rm.Namespace+"/"+rm.Name)
		delete(st.clusters, rm.Namespace+"/"+rm.Name)
		st.mu.Unlock()
	}
	st.hub.changed()
}

func (st *store) record(key string, w weight) {
	st.mu.Lock()
	defer st.mu.Unlock()
	ws := st.weights[key]
	if n := len(ws); n > 0 && ws[n-1].tag == w.tag && ws[n-1].percent == w.percent {
		return
	}
	if len(ws) == sparkPoints {
		ws = slices.Delete(ws, 0, 1)
	}
	st.weights[key] = append(ws, w)
}

// recordClusters keeps each cluster's percent of each build of rm, at the
// time the cluster took it, when it differs from the last one kept, and
// drops what it kept of builds rm no longer records.
func (st *store) recordClusters(rm *picchuv1alpha1.ReleaseManager) {
	st.mu.Lock()
	defer st.mu.Unlock()
	key := rm.Namespace + "/" + rm.Name
	if st.clusters == nil {
		st.clusters = map[string]map[clusterKey][]weight{}
	}
	kept := st.clusters[key]
	if kept == nil {
		kept = map[clusterKey][]weight{}
		st.clusters[key] = kept
	}
	seen := map[clusterKey]bool{}
	for _, rs := range rm.Status.Revisions {
		for _, c := range rs.Clusters {
			k := clusterKey{tag: rs.Tag, cluster: c.Name}
			seen[k] = true
			at := st.now()
			if c.LastUpdated != nil {
				at = c.LastUpdated.Time
			}
			ws := kept[k]
			if n := len(ws); n > 0 && (ws[n-1].percent == c.Percent || !at.After(ws[n-1].at)) {
				continue
			}
			if len(ws) == chartPoints {
				ws = slices.Delete(ws, 0, 1)
			}
			kept[k] = append(ws, weight{at: at, tag: rs.Tag, percent: c.Percent})
		}
	}
	for k := range kept {
		if !seen[k] {
			delete(kept, k)
		}
	}
}

// clusterHistory is what recordClusters kept of build tag of the
// ReleaseManager key, by cluster.
func (st *store) clusterHistory(key, tag string) map[string][]weight {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string][]weight{}
	for k, ws := range st.clusters[key] {
		if k.tag == tag {
			out[k.cluster] = slices.Clone(ws)
		}
	}
	return out
}

// eventsOf are the Events of a's Revisions (in namespace) and ReleaseManagers, newest
// first, at most limit.
func (st *store) eventsOf(ctx context.Context, namespace string, a *app, limit int) ([]corev1.Event, error) {
	if !st.events {
		return nil, nil
	}
	list := &corev1.EventList{}
	if err := st.reader.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("reading the Events from the dashboard's cache: %w", err)
	}
	out := a.eventsAmong(list.Items)
	slices.Reverse(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// history is what record kept of the ReleaseManager key for build tag.
func (st *store) history(key, tag string) []weight {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []weight
	for _, w := range st.weights[key] {
		if w.tag == tag {
			out = append(out, w)
		}
	}
	return out
}

// snapshot reads every Revision and ReleaseManager from the informers.
func (st *store) snapshot(ctx context.Context) ([]picchuv1alpha1.Revision, []picchuv1alpha1.ReleaseManager, error) {
	revs := &picchuv1alpha1.RevisionList{}
	if err := st.reader.List(ctx, revs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("reading the Revisions from the dashboard's cache: %w", err)
	}
	rms := &picchuv1alpha1.ReleaseManagerList{}
	if err := st.reader.List(ctx, rms, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("reading the ReleaseManagers from the dashboard's cache: %w", err)
	}
	return revs.Items, rms.Items, nil
}

// hub tells every open page when the store changed: each page has a channel
// of one, so a burst of changes is one message to a page that has not read
// the last one yet, and a slow page never holds the informers.
type hub struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{subs: map[chan struct{}]struct{}{}} }

// subscribe returns a page's channel and the function that closes it.
func (h *hub) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

func (h *hub) changed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

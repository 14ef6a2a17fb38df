package plugin

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

	mu sync.Mutex
	// weights are the releasing build's percents by ReleaseManager
	// (namespace/name), oldest first, at most sparkPoints.
	weights map[string][]weight
	now     func() time.Time
}

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
// and fallback, the kubeconfig's namespace, otherwise.
func readableNamespaces(ctx context.Context, cs kubernetes.Interface, fallback string) (string, error) {
	for _, resource := range []string{"revisions", "releasemanagers"} {
		for _, verb := range []string{"list", "watch"} {
			review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: picchuv1alpha1.GroupVersion.Group, Resource: resource, Verb: verb,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				return "", fmt.Errorf("asking whether you may %s %s in every namespace: %w", verb, resource, err)
			}
			if !review.Status.Allowed {
				return fallback, nil
			}
		}
	}
	return "", nil
}

// newStore starts the informers of the namespace ("" for all) and waits for
// their first list.
func newStore(ctx context.Context, s *session, scheme *runtime.Scheme, namespace string, now func() time.Time) (*store, error) {
	opts := cache.Options{Scheme: scheme}
	if namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	reader, err := cache.New(s.config, opts)
	if err != nil {
		return nil, fmt.Errorf("building the dashboard's cache of %s: %w", s.config.Host, err)
	}
	st := &store{reader: reader, namespace: namespace, hub: newHub(), weights: map[string][]weight{}, now: now}
	for _, obj := range []client.Object{&picchuv1alpha1.Revision{}, &picchuv1alpha1.ReleaseManager{}} {
		informer, err := reader.GetInformer(ctx, obj)
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
	go func() { _ = reader.Start(ctx) }()
	if !reader.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("listing Revisions and ReleaseManagers of %s: %w", s.config.Host, ctx.Err())
	}
	return st, nil
}

// observe records a releasing build's weight, and tells every open page
// that something changed.
func (st *store) observe(o any) {
	if rm, ok := o.(*picchuv1alpha1.ReleaseManager); ok && rm.Status.Releasing != nil {
		st.record(rm.Namespace+"/"+rm.Name, weight{at: st.now(), tag: rm.Status.Releasing.Tag, percent: rm.Status.Releasing.Percent})
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

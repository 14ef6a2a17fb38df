package applier

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A run is one pass of a plan over one cluster (plan.Execute makes one with
// WithRun). Within it, a Cluster remembers what the API server answered to
// its writes, so that the reads after them do not ask it again:
//
//   - An object the run applied is read as the API server returned it
//     while the cache does not hold it yet (the cache lags behind a write
//     by its watch, and a run reads what it has just written: a ReplicaSet
//     created, then its replicas set, then the object applied).
//   - A namespace the run created holds nothing but what the run wrote
//     there and what the cluster puts in every new namespace
//     (madeWithEveryNamespace): any other object of it that the cache does
//     not hold is missing, and the run writes it without first asking the
//     API server whether someone else's is there. The namespace itself was
//     asked for: the run created it because the API server had none.
//
// A new app's first run on a cluster writes a dozen objects into the
// namespace it has just created; asking the API server about each before
// writing it made half of that run's requests, and a third of the time of
// a fleet's first release (docs/benchmarks.md). Outside a run, and once the
// run is over, every object the cache does not hold is asked for, as before.
type run struct {
	mu sync.Mutex
	// created are the namespaces the run created.
	created map[string]bool
	// wrote are the objects the run applied, by kind, namespace and name,
	// as the API server returned them.
	wrote map[objectRef]*metav1.PartialObjectMetadata
}

// objectRef names an object, whichever field manager wrote it.
type objectRef struct {
	kind            string
	group           string
	namespace, name string
}

func refOf(key objectKey) objectRef {
	return objectRef{kind: key.gvk.Kind, group: key.gvk.Group, namespace: key.namespace, name: key.name}
}

type runKey struct{}

// WithRun returns ctx for one run of a plan on one cluster: the Cluster's
// methods called with it, or a context derived from it, share what the run
// wrote (see run). One run is for one cluster and lasts as long as the
// plan's pass over it.
func WithRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, runKey{}, &run{created: map[string]bool{}, wrote: map[objectRef]*metav1.PartialObjectMetadata{}})
}

func runOf(ctx context.Context) *run {
	r, _ := ctx.Value(runKey{}).(*run)
	return r
}

// madeWithEveryNamespace are the objects Kubernetes' own controllers create
// in every new namespace, by kind and name: a namespace a run created may
// hold them before the cache would, and they are not Picchu's.
var madeWithEveryNamespace = map[objectRef]bool{
	{kind: "ServiceAccount", name: "default"}:     true,
	{kind: "ConfigMap", name: "kube-root-ca.crt"}: true,
}

// isNamespace says key names a namespace.
func isNamespace(key objectKey) bool { return key.gvk.Group == "" && key.gvk.Kind == "Namespace" }

// known says what the run knows of key's object, which the cache does not
// hold: as the run wrote it, or missing (nil) in a namespace the run
// created; ok is false when the run knows nothing of it.
func (r *run) known(key objectKey) (live *metav1.PartialObjectMetadata, ok bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := refOf(key)
	if w, ok := r.wrote[ref]; ok {
		return w.DeepCopy(), true
	}
	if isNamespace(key) || !r.created[key.namespace] {
		return nil, false
	}
	if madeWithEveryNamespace[objectRef{kind: ref.kind, group: ref.group, name: ref.name}] {
		return nil, false
	}
	return nil, true
}

// applied records that the run applied key's object, which the API server
// returned as written, and created it when existed is false.
func (r *run) applied(key objectKey, existed bool, written metav1.Object) {
	if r == nil {
		return
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(key.gvk)
	m.SetNamespace(written.GetNamespace())
	m.SetName(written.GetName())
	m.SetUID(written.GetUID())
	m.SetLabels(written.GetLabels())
	m.SetGeneration(written.GetGeneration())
	m.SetResourceVersion(written.GetResourceVersion())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wrote[refOf(key)] = m
	if !existed && isNamespace(key) {
		r.created[key.name] = true
	}
}

// deleted records that the run deleted key's object.
func (r *run) deleted(key objectKey) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.wrote, refOf(key))
	if isNamespace(key) {
		delete(r.created, key.name)
	}
}

package mirror

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kinds remembers which clusters serve a kind (ExternalSecrets, which a
// cluster serves only with the external-secrets operator's CRDs), so that
// asking costs a discovery request only when the answer may have changed:
// a yes is kept until the cluster's client is replaced, a no is asked again
// after its recheck period.
type kinds struct {
	mu sync.Mutex
	m  map[kindKey]kindAnswer
}

type kindKey struct {
	// cluster is the Cluster's "<namespace>/<name>", "" for home.
	cluster string
	gvk     schema.GroupVersionKind
}

type kindAnswer struct {
	served bool
	at     time.Time
}

// served says whether the cluster whose REST mapper is mapper serves gvk:
// remembered, or asked when nothing is remembered or a no is older than
// recheck. An error is a discovery request that failed.
func (k *kinds) served(cluster string, mapper meta.RESTMapper, gvk schema.GroupVersionKind, recheck time.Duration, now time.Time) (bool, error) {
	key := kindKey{cluster, gvk}
	k.mu.Lock()
	a, ok := k.m[key]
	k.mu.Unlock()
	if ok && (a.served || now.Sub(a.at) < recheck) {
		return a.served, nil
	}
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		k.set(key, false, now)
		return false, nil
	case err != nil:
		return false, &discoveryError{cluster: cluster, gvk: gvk, err: err}
	}
	k.set(key, true, now)
	return true, nil
}

// known returns what is remembered of whether cluster serves gvk, and
// whether anything is.
func (k *kinds) known(cluster string, gvk schema.GroupVersionKind) (served, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	a, ok := k.m[kindKey{cluster, gvk}]
	return a.served, ok
}

// discoveryError is a cluster that could not say whether it serves a kind.
type discoveryError struct {
	cluster string
	gvk     schema.GroupVersionKind
	err     error
}

func (e *discoveryError) Error() string {
	return fmt.Sprintf("asking whether %s serves %s: %v", nameOf(e.cluster), e.gvk, e.err)
}

func (e *discoveryError) Unwrap() error { return e.err }

// notServed records that a request found gvk not served after all.
func (k *kinds) notServed(cluster string, gvk schema.GroupVersionKind, now time.Time) {
	k.set(kindKey{cluster, gvk}, false, now)
}

func (k *kinds) set(key kindKey, served bool, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[kindKey]kindAnswer{}
	}
	k.m[key] = kindAnswer{served: served, at: now}
}

// forget drops what is remembered of cluster.
func (k *kinds) forget(cluster string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key := range k.m {
		if key.cluster == cluster {
			delete(k.m, key)
		}
	}
}

func nameOf(cluster string) string {
	if cluster == "" {
		return "the delivery cluster"
	}
	return "cluster " + cluster
}

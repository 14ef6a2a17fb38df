package releasemanager

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// superseded remembers, per ReleaseManager, what this process's writes
// returned and the versions they replaced. Runs read ReleaseManagers from
// the cache, which shows a replaced version until the write's watch event
// arrives: a run on it would decide from a status already superseded (say,
// route a canary's traffic again after the release moved on). Such a run
// decides from what the last write returned instead, which is what the
// API server holds unless someone else wrote since, and then the run's own
// write fails on the version and the run is done again. Under load the
// watch lags seconds behind the writes: waiting for it would cost every
// state change and ramp step that much. Its methods are safe for
// concurrent use.
type superseded struct {
	mu     sync.Mutex
	writes map[types.NamespacedName]*written
}

// written is what this process wrote of one ReleaseManager since the cache
// last caught up with it.
type written struct {
	replaced map[string]bool
	latest   *picchuv1alpha1.ReleaseManager
}

// wrote records that a write replaced version before of key with after,
// the object the API server returned.
func (s *superseded) wrote(key types.NamespacedName, before string, after *picchuv1alpha1.ReleaseManager) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writes == nil {
		s.writes = map[types.NamespacedName]*written{}
	}
	w := s.writes[key]
	if w == nil {
		w = &written{replaced: map[string]bool{}}
		s.writes[key] = w
	}
	w.replaced[before] = true
	w.latest = after.DeepCopy()
}

// current returns the ReleaseManager a run decides from: cached, as the
// cache shows it, unless that is a version this process's writes replaced;
// then a copy of what the last write returned.
func (s *superseded) current(key types.NamespacedName, cached *picchuv1alpha1.ReleaseManager) *picchuv1alpha1.ReleaseManager {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.writes[key]
	if w == nil {
		return cached
	}
	if w.replaced[cached.ResourceVersion] {
		return w.latest.DeepCopy()
	}
	// The cache shows the last write, or a later one of someone else's:
	// it has caught up.
	delete(s.writes, key)
	return cached
}

// forget drops what is known of key: the ReleaseManager is gone.
func (s *superseded) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.writes, key)
}

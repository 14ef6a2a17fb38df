package releasemanager

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// superseded remembers, per ReleaseManager, the resourceVersion that this
// process's last write replaced. Runs read ReleaseManagers from the cache,
// which shows the replaced version until the write's watch event arrives: a
// run on it would decide from a status already superseded (say, route a
// canary's traffic again after the release moved on). Such a run waits for
// the cache instead. Its methods are safe for concurrent use.
type superseded struct {
	mu       sync.Mutex
	versions map[types.NamespacedName]string
}

// wrote records that a write replaced version before of key.
func (s *superseded) wrote(key types.NamespacedName, before string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.versions == nil {
		s.versions = map[types.NamespacedName]string{}
	}
	s.versions[key] = before
}

// stale says whether version of key is one a write of this process replaced.
func (s *superseded) stale(key types.NamespacedName, version string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	before, ok := s.versions[key]
	return ok && before == version
}

// forget drops what is known of key: the ReleaseManager is gone.
func (s *superseded) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.versions, key)
}

package releasemanager

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func rmAt(version string, percent int32) *picchuv1alpha1.ReleaseManager {
	return &picchuv1alpha1.ReleaseManager{
		ObjectMeta: metav1.ObjectMeta{Namespace: "picchu", Name: "a", ResourceVersion: version},
		Status:     picchuv1alpha1.ReleaseManagerStatus{Releasing: &picchuv1alpha1.ReleasingStatus{Tag: "v2", Percent: percent}},
	}
}

// TestSuperseded_DecidesFromTheLastWriteUntilTheCacheHasIt plays a cache
// that lags two writes behind: runs decide from the last write, not from
// the versions it replaced, until the cache shows it or a later version.
func TestSuperseded_DecidesFromTheLastWriteUntilTheCacheHasIt(t *testing.T) {
	var s superseded
	a, b := types.NamespacedName{Namespace: "picchu", Name: "a"}, types.NamespacedName{Namespace: "picchu", Name: "b"}
	if got := s.current(a, rmAt("1", 10)); got.ResourceVersion != "1" {
		t.Fatalf("before any write, the cached version is current; got %s", got.ResourceVersion)
	}
	s.wrote(a, "1", rmAt("2", 20))
	s.wrote(a, "2", rmAt("3", 40))
	for _, tc := range []struct {
		key     types.NamespacedName
		cached  string
		version string
	}{
		{a, "1", "3"}, // the cache shows what the first write replaced
		{a, "2", "3"}, // and then what the second did
		{b, "1", "1"}, // another ReleaseManager
	} {
		got := s.current(tc.key, rmAt(tc.cached, 10))
		if got.ResourceVersion != tc.version {
			t.Errorf("current(%s) with the cache at %s = version %s, want %s", tc.key, tc.cached, got.ResourceVersion, tc.version)
		}
	}
	// What a run decides from is its own: changing it changes nothing kept.
	got := s.current(a, rmAt("1", 10))
	got.Status.Releasing.Percent = 100
	if again := s.current(a, rmAt("1", 10)); again.Status.Releasing.Percent != 40 {
		t.Errorf("a run's change leaked into the kept write: %d %%", again.Status.Releasing.Percent)
	}
	// The cache caught up: from then on it is current, even if it showed a
	// replaced version again (it cannot go back).
	if got := s.current(a, rmAt("3", 40)); got.ResourceVersion != "3" {
		t.Errorf("caught up: got version %s", got.ResourceVersion)
	}
	if got := s.current(a, rmAt("1", 10)); got.ResourceVersion != "1" {
		t.Errorf("after catching up the cache is current; got version %s", got.ResourceVersion)
	}
	// Someone else's later write: the cache is current.
	s.wrote(a, "3", rmAt("4", 50))
	if got := s.current(a, rmAt("5", 50)); got.ResourceVersion != "5" {
		t.Errorf("a later version by someone else: got %s", got.ResourceVersion)
	}
	s.wrote(a, "5", rmAt("6", 100))
	s.forget(a)
	if got := s.current(a, rmAt("5", 50)); got.ResourceVersion != "5" {
		t.Errorf("a forgotten ReleaseManager: got version %s", got.ResourceVersion)
	}
}

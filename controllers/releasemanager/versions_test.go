package releasemanager

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestSuperseded_OnlyTheReplacedVersionIsStale(t *testing.T) {
	var s superseded
	a, b := types.NamespacedName{Namespace: "picchu", Name: "a"}, types.NamespacedName{Namespace: "picchu", Name: "b"}
	if s.stale(a, "1") {
		t.Errorf("a version is stale before any write")
	}
	s.wrote(a, "1")
	for _, tc := range []struct {
		key     types.NamespacedName
		version string
		stale   bool
	}{
		{a, "1", true},  // the cache still shows what the write replaced
		{a, "2", false}, // the write itself, or anyone's later one
		{b, "1", false}, // another ReleaseManager
	} {
		if got := s.stale(tc.key, tc.version); got != tc.stale {
			t.Errorf("stale(%s, %s) = %v, want %v", tc.key, tc.version, got, tc.stale)
		}
	}
	s.forget(a)
	if s.stale(a, "1") {
		t.Errorf("a forgotten ReleaseManager's version is still stale")
	}
}

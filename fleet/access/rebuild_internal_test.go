package access

import (
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/medium/picchu/fleet/breaker"
)

// TestRebuildDue_BacksOffUpToItsCapAndResetsOnceHealthy checks the backoff
// between rebuilds of a flapping cluster: 10 s after the first, doubling
// up to 5 minutes, a closing before it passes rebuilding nothing; and back
// to 10 s once the cluster stayed healthy for RebuildResetAfter, not before.
func TestRebuildDue_BacksOffUpToItsCapAndResetsOnceHealthy(t *testing.T) {
	r := NewRegistry(nil, logr.Discard(), nil)
	key := types.NamespacedName{Namespace: "picchu", Name: "flapping"}
	at := time.Unix(1_000_000, 0)
	r.rebuilds[key] = &rebuilds{delay: RebuildMinBackoff, closed: at}
	var waits []time.Duration
	for range 8 {
		rebuild, next := r.rebuildDue(key, breaker.Closed, at)
		if !rebuild {
			t.Fatalf("a closing at %s, when due, rebuilt nothing", at)
		}
		waits = append(waits, next.Sub(at))
		if again, _ := r.rebuildDue(key, breaker.Closed, next.Add(-time.Millisecond)); again {
			t.Fatalf("a closing before %s rebuilt", next)
		}
		at = next
	}
	m := time.Minute
	if want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * m, 5 * m, 5 * m}; !slices.Equal(waits, want) {
		t.Errorf("waits between rebuilds %v, want %v", waits, want)
	}

	// Healthy for a little less than RebuildResetAfter: the backoff stays.
	closed := at.Add(-time.Millisecond) // the last closing, above
	r.rebuildDue(key, breaker.Open, closed.Add(RebuildResetAfter-time.Second))
	if rebuild, _ := r.rebuildDue(key, breaker.Closed, closed.Add(RebuildResetAfter)); !rebuild {
		t.Fatal("a closing 10 minutes after the last rebuild, past its 5 minute backoff, rebuilt nothing")
	}
	at = closed.Add(RebuildResetAfter)
	if again, _ := r.rebuildDue(key, breaker.Closed, at.Add(RebuildMaxBackoff-time.Second)); again {
		t.Error("the backoff was reset by a cluster healthy for less than RebuildResetAfter")
	}
	// Healthy for RebuildResetAfter: back to the shortest backoff.
	healthy := at.Add(RebuildMaxBackoff - time.Second) // its last closing
	r.rebuildDue(key, breaker.Open, healthy.Add(RebuildResetAfter))
	at = healthy.Add(RebuildResetAfter + time.Second)
	if rebuild, next := r.rebuildDue(key, breaker.Closed, at); !rebuild || next.Sub(at) != RebuildMinBackoff {
		t.Errorf("after staying healthy: rebuilt %t, next after %s; want a rebuild, the next after %s", rebuild, next.Sub(at), RebuildMinBackoff)
	}

	// A removed cluster is not rebuilt.
	r.forgetHealth(key)
	if rebuild, _ := r.rebuildDue(key, breaker.Closed, at.Add(time.Hour)); rebuild {
		t.Error("a removed cluster is rebuilt")
	}
}

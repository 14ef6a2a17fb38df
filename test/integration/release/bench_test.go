package release_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

var benchApps atomic.Int32

// BenchmarkRelease_OneSecondSteps releases a build over a serving one with
// 1 s steps (10, 20, 40, 80, 100 %: four delays) in two clusters, and
// reports the time from releasing to released divided by the ideal 4 s, as
// the operator stamped them in status ("x-ideal"), and the excess in ms.
func BenchmarkRelease_OneSecondSteps(b *testing.B) {
	const delay = time.Second
	const ideal = 4 * delay
	var ratio, excess float64
	for b.Loop() {
		app := fmt.Sprintf("bench-%d", benchApps.Add(1))
		create(b, build{app: app, tag: "v1", commit: 1, delay: delay})
		state(b, 30*time.Second, app, "v1", "released")
		create(b, build{app: app, tag: "v2", commit: 2, delay: delay})
		st := state(b, 30*time.Second, app, "v2", "released")
		if st.ReleaseStartTimestamp == nil || st.State.LastUpdated == nil {
			b.Fatalf("release stamps missing: %+v", st)
		}
		took := st.State.LastUpdated.Sub(st.ReleaseStartTimestamp.Time)
		if took < ideal {
			b.Fatalf("released in %v, faster than its four 1 s steps", took)
		}
		ratio += float64(took) / float64(ideal)
		excess += float64(took-ideal) / float64(time.Millisecond)
	}
	b.ReportMetric(ratio/float64(b.N), "x-ideal")
	b.ReportMetric(excess/float64(b.N), "ms-over-ideal")
}

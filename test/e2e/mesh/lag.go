package mesh

import (
	"slices"
	"time"
)

// routeLine holds the routes read from one cluster until they take effect,
// lag after they were read, as a proxy applies a route change some time
// after it is written (Istio's push to its sidecars, a Gateway's reload).
// It is a pure value: the time is an input, and nothing else is read.
type routeLine struct {
	lag     time.Duration
	started bool          // routes were read once
	current routes        // in effect
	pending []timedRoutes // read, not yet in effect, oldest first
}

// timedRoutes are routes and when they were read.
type timedRoutes struct {
	at     time.Time
	routes routes
}

// read records r, read at time at, and returns the routes in effect then:
// the last read no later than at less the lag, so that a change takes
// effect at the first reading at least the lag after the one that saw it
// (at once when the lag is 0). The first routes read take effect at once:
// the proxies had them before the mesh first looked, as a mesh started on
// running clusters finds them.
func (l *routeLine) read(at time.Time, r routes) routes {
	if !l.started {
		l.started, l.current = true, r
		return r
	}
	l.pending = append(l.pending, timedRoutes{at: at, routes: r})
	cutoff := at.Add(-l.lag)
	n := 0
	for n < len(l.pending) && !l.pending[n].at.After(cutoff) {
		n++
	}
	if n > 0 {
		l.current = l.pending[n-1].routes
		l.pending = slices.Delete(l.pending, 0, n)
	}
	return l.current
}

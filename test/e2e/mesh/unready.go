package mesh

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// unreadyRequestsDesc is the counter of the requests sent to a build with
// no ready pod.
var unreadyRequestsDesc = prometheus.NewDesc(
	"mesh_requests_to_unready_total",
	"Requests sent to a build (app and tag) on a cluster while it had no ready pod there: a weight in effect, "+
		"and none of its pods in its route's namespace Ready and not terminating.",
	[]string{"destination_cluster", "destination_app", "destination_version"},
	nil,
)

// unreadyCounter counts, for each cluster, app and tag, the requests sent
// to the build while it has no ready pod: every interval the mesh sets the
// rate of those requests (the build's, or 0 once it has a ready pod or no
// traffic), and the counts grow from the clock at that rate, as the
// traffic's own counters (kit.Traffic) do, so that they are the requests
// sent, read at any moment. It is a prometheus.Collector, and safe for
// concurrent use.
type unreadyCounter struct {
	now func() time.Time

	mu    sync.Mutex
	flows map[weightSeries]*unreadyFlow
}

// unreadyFlow is the count of one series up to since, and its rate after.
type unreadyFlow struct {
	since time.Time
	count float64
	rate  float64 // requests per second after since
}

func (f *unreadyFlow) at(now time.Time) float64 {
	return f.count + f.rate*max(now.Sub(f.since).Seconds(), 0)
}

func newUnreadyCounter(now func() time.Time) *unreadyCounter {
	return &unreadyCounter{now: now, flows: map[weightSeries]*unreadyFlow{}}
}

// setRates makes each series of rates count at its rate (requests per
// second) from now on, and every other series at 0.
func (u *unreadyCounter) setRates(rates map[weightSeries]float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	for s, f := range u.flows {
		if _, ok := rates[s]; !ok && f.rate != 0 {
			f.count, f.since, f.rate = f.at(now), now, 0
		}
	}
	for s, rate := range rates {
		f, ok := u.flows[s]
		if !ok {
			if rate <= 0 {
				continue
			}
			f = &unreadyFlow{since: now}
			u.flows[s] = f
		}
		f.count, f.since, f.rate = f.at(now), now, max(rate, 0)
	}
}

// counts returns the count of every series that counted any, as now, by
// cluster, app and tag.
func (u *unreadyCounter) counts() map[string]map[string]map[string]float64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	out := map[string]map[string]map[string]float64{}
	for s, f := range u.flows {
		if out[s.cluster] == nil {
			out[s.cluster] = map[string]map[string]float64{}
		}
		if out[s.cluster][s.app] == nil {
			out[s.cluster][s.app] = map[string]float64{}
		}
		out[s.cluster][s.app][s.tag] = f.at(now)
	}
	return out
}

// Describe sends the one metric an unreadyCounter exports.
func (u *unreadyCounter) Describe(ch chan<- *prometheus.Desc) {
	ch <- unreadyRequestsDesc
}

// Collect sends the count of every series as it is now.
func (u *unreadyCounter) Collect(ch chan<- prometheus.Metric) {
	for cluster, apps := range u.counts() {
		for app, tags := range apps {
			for tag, n := range tags {
				m, err := prometheus.NewConstMetric(unreadyRequestsDesc, prometheus.CounterValue, n, cluster, app, tag)
				if err != nil {
					m = prometheus.NewInvalidMetric(unreadyRequestsDesc,
						fmt.Errorf("exporting the requests to unready %s/%s on %s: %w", app, tag, cluster, err))
				}
				ch <- m
			}
		}
	}
}

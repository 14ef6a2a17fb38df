package mesh

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/medium/picchu/test/kit"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// DefaultRequestsPerSecond is the rate at which each cluster receives
	// requests for each app when Options.RequestsPerSecond is zero.
	DefaultRequestsPerSecond = 100
	// DefaultInterval is how often weights are read and counters advanced
	// when Options.Interval is zero.
	DefaultInterval = 250 * time.Millisecond
	// DefaultLag is how long a route change read takes to reach the
	// traffic when Options.Lag is nil: about what Istio's push to its
	// sidecars or a Gateway's reload takes.
	DefaultLag = time.Second
)

// Options says which clusters a Mesh serves and how.
type Options struct {
	// Clusters are the target clusters by name. Their clients need only
	// know the kinds of operator.NewScheme().
	Clusters map[string]client.Client
	// RequestsPerSecond is the rate at which each cluster receives requests
	// for each app, split between its tags by weight
	// (DefaultRequestsPerSecond when zero).
	RequestsPerSecond float64
	// Interval is how often weights are read and counters advanced, and how
	// often rules are synced (DefaultInterval when zero).
	Interval time.Duration
	// Lag is how long a change of a cluster's routes takes to reach the
	// traffic, as proxies apply routes some time after they are written:
	// the weights read take effect at the first reading at least Lag
	// after the one that saw them (DefaultLag when nil; 0 applies them
	// at once). The first weights read of a cluster take effect at once:
	// its proxies had them before the mesh looked.
	Lag *time.Duration
	// Rules, when set, receives the union of the PrometheusRules of the
	// clusters whenever it changes (see kit.RuleSync).
	Rules kit.RuleLoader
	// Log receives what the mesh has to say: weights that changed, clusters
	// that fail to answer and answer again, rules loaded (log.Printf when nil).
	Log func(format string, args ...any)
}

// Mesh plays users and the Istio mesh of a fleet of clusters. Create it with
// New; its methods are safe for concurrent use.
type Mesh struct {
	clusters []kit.NamedClient // sorted by name
	rps      float64
	interval time.Duration
	rules    kit.RuleLoader
	logf     func(format string, args ...any)
	metrics  *metrics
	traffic  *kit.Traffic
	unready  *unreadyCounter // requests to a build without ready pods
	handler  http.Handler
	running  atomic.Bool

	mu       sync.Mutex
	ratios   map[string]map[string]float64            // error ratios on every cluster, by app and tag
	ratiosIn map[string]map[string]map[string]float64 // error ratios on one cluster, by cluster, app and tag
	quiet    map[string]map[string]bool               // tags no request is sent to, by app
	lines    map[string]*routeLine                    // routes read and not yet in effect, by cluster
	weights  map[string]appWeights                    // weights in effect, by cluster
	routed   map[string]map[string]bool               // apps that had a route, by cluster
	unrouted map[string]map[string]float64            // requests that found no route, by cluster and app
}

// New checks opts and returns a Mesh serving no traffic until Run.
func New(opts Options) (*Mesh, error) {
	if len(opts.Clusters) == 0 {
		return nil, errors.New("creating the mesh: no clusters")
	}
	if math.IsNaN(opts.RequestsPerSecond) || math.IsInf(opts.RequestsPerSecond, 0) || opts.RequestsPerSecond < 0 {
		return nil, fmt.Errorf("creating the mesh: requests per second %v is not a finite number at least 0", opts.RequestsPerSecond)
	}
	if opts.Interval < 0 {
		return nil, fmt.Errorf("creating the mesh: interval %s is negative", opts.Interval)
	}
	lag := DefaultLag
	if opts.Lag != nil {
		lag = *opts.Lag
	}
	if lag < 0 {
		return nil, fmt.Errorf("creating the mesh: lag %s is negative", lag)
	}
	m := &Mesh{
		rps:      opts.RequestsPerSecond,
		interval: opts.Interval,
		rules:    opts.Rules,
		logf:     opts.Log,
		ratios:   map[string]map[string]float64{},
		ratiosIn: map[string]map[string]map[string]float64{},
		quiet:    map[string]map[string]bool{},
		lines:    map[string]*routeLine{},
		weights:  map[string]appWeights{},
		routed:   map[string]map[string]bool{},
		unrouted: map[string]map[string]float64{},
	}
	if m.rps == 0 {
		m.rps = DefaultRequestsPerSecond
	}
	if m.interval == 0 {
		m.interval = DefaultInterval
	}
	if m.logf == nil {
		m.logf = log.Printf
	}
	for name, c := range opts.Clusters {
		if name == "" {
			return nil, errors.New("creating the mesh: a cluster has no name")
		}
		if c == nil {
			return nil, fmt.Errorf("creating the mesh: cluster %s has no client", name)
		}
		m.lines[name] = &routeLine{lag: lag}
	}
	m.clusters = kit.SortedClients(opts.Clusters)
	m.traffic = kit.NewTraffic()
	m.unready = newUnreadyCounter(time.Now)
	var err error
	if m.metrics, err = newMetrics(m.traffic, m.unready); err != nil {
		return nil, fmt.Errorf("creating the mesh: %w", err)
	}
	m.handler = m.newHandler()
	return m, nil
}

// Run serves traffic, and syncs rules when Options.Rules is set, until ctx
// is done; then it returns nil. A cluster that fails to answer is logged and
// serves no traffic until it answers again, as a cluster that is down. Run
// returns an error at once when the Mesh is already running.
func (m *Mesh) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("running the mesh: already running")
	}
	defer m.running.Store(false)
	var wg sync.WaitGroup
	if m.rules != nil {
		// In a loop of its own, so that a slow Prometheus never holds up traffic.
		rules := kit.RuleSync{Clusters: m.clusters, Loader: m.rules, Interval: m.interval, Logf: m.logf}
		wg.Go(func() { rules.Run(ctx) })
	}
	m.serveTraffic(ctx)
	wg.Wait()
	return nil
}

// serveTraffic reads the weights every interval and sends each cluster's
// requests at them until ctx is done; then no cluster receives any, and the
// weights last read stay.
func (m *Mesh) serveTraffic(ctx context.Context) {
	report := kit.NewReporter(m.logf, "listing VirtualServices")
	pods := kit.NewReporter(m.logf, "listing the pods of builds")
	m.step(ctx, report, pods)
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			m.mu.Lock()
			m.setRatesLocked(nil)
			m.unready.setRates(nil)
			m.mu.Unlock()
			return
		case <-tick.C:
			m.step(ctx, report, pods)
		}
	}
}

// step reads the routes and pods of every cluster and sends requests from
// now on at the weights in effect (those read at least the lag before). A
// cluster whose routes fail to answer receives none until they answer
// (report says so). The requests sent to a build with no ready pod are
// counted from now on, on each cluster whose pods answered (pods says
// which do not).
func (m *Mesh) step(ctx context.Context, report, pods *kit.Reporter) {
	results := kit.ReadAll(ctx, m.clusters, kit.ReadTimeout(m.interval), readCluster)
	// Every answer was read by now: a change they saw was written before.
	now := time.Now()
	if ctx.Err() != nil {
		// Stopping: the reads were cut short.
		return
	}
	for _, r := range results {
		switch {
		case r.Err != nil:
			report.Failed(r.Cluster, r.Err)
		case r.Value.readyErr != nil:
			report.OK(r.Cluster)
			pods.Failed(r.Cluster, r.Value.readyErr)
		default:
			report.OK(r.Cluster)
			pods.OK(r.Cluster)
		}
	}
	m.mu.Lock()
	inEffect := map[string]routes{}
	ready := map[string]readyBuilds{}
	for _, r := range results {
		if r.Err == nil {
			inEffect[r.Cluster] = m.lines[r.Cluster].read(now, r.Value.routes)
		}
		if r.Err == nil && r.Value.readyErr == nil {
			ready[r.Cluster] = r.Value.ready
		}
	}
	weights := make(map[string]appWeights, len(inEffect))
	for cluster, r := range inEffect {
		weights[cluster] = r.weights
	}
	previous := m.weights
	m.setRatesLocked(weights)
	m.weights = weights
	unrouted := m.unroutedLocked(weights)
	requests := m.rps * m.interval.Seconds()
	for _, u := range unrouted {
		if m.unrouted[u.cluster] == nil {
			m.unrouted[u.cluster] = map[string]float64{}
		}
		m.unrouted[u.cluster][u.app] += requests
	}
	m.unready.setRates(m.unreadyRatesLocked(inEffect, ready))
	m.mu.Unlock()
	for _, u := range unrouted {
		m.metrics.unrouted.WithLabelValues(u.cluster, u.app).Add(requests)
	}

	m.logChanges(previous, weights)
	m.metrics.setWeights(weights)
}

// unreadyRatesLocked returns the rate, in requests per second, at which
// the routes in effect send requests to each build with no ready pod on
// its cluster: a tag with weight, not quiet, none of whose pods in its
// route's namespace is ready. A cluster whose pods were not read (not in
// ready) counts none. Call it with mu held.
func (m *Mesh) unreadyRatesLocked(inEffect map[string]routes, ready map[string]readyBuilds) map[weightSeries]float64 {
	rates := map[weightSeries]float64{}
	for cluster, r := range inEffect {
		if _, read := ready[cluster]; !read {
			continue
		}
		for app, tags := range r.weights {
			for tag, weight := range tags {
				if weight <= 0 || m.quiet[app][tag] || ready[cluster][build{r.namespaces[app], app, tag}] {
					continue
				}
				rates[weightSeries{cluster, app, tag}] = m.rps * float64(weight) / 100
			}
		}
	}
	return rates
}

// setRatesLocked makes each cluster, app and tag of weights receive the
// requests of its weight, split by the error ratios, and those of the
// weights last read (m.weights) that are not in weights none. Call it with
// mu held.
func (m *Mesh) setRatesLocked(weights map[string]appWeights) {
	for cluster, apps := range m.weights {
		for app, tags := range apps {
			for tag := range tags {
				if _, ok := weights[cluster][app][tag]; !ok {
					m.traffic.SetIn(cluster, app, tag, 0, 0)
				}
			}
		}
	}
	for cluster, apps := range weights {
		for app, tags := range apps {
			for tag, weight := range tags {
				rate := max(m.rps*float64(weight)/100, 0)
				if m.quiet[app][tag] {
					rate = 0
				}
				m.traffic.SetIn(cluster, app, tag, rate, m.ratioLocked(cluster, app, tag))
			}
		}
	}
}

// unroutedLocked returns, of the clusters read, the apps that had a route
// there and have none now: their users' requests of this interval find no
// route (a VirtualService and an HTTPRoute both gone, or weighing nothing).
// Call it with mu held.
func (m *Mesh) unroutedLocked(read map[string]appWeights) []weightSeries {
	var out []weightSeries
	for _, cluster := range sortedKeys(read) {
		apps := read[cluster]
		if m.routed[cluster] == nil {
			m.routed[cluster] = map[string]bool{}
		}
		for app, tags := range apps {
			if sumWeights(tags) > 0 {
				m.routed[cluster][app] = true
			}
		}
		for _, app := range sortedKeys(m.routed[cluster]) {
			if sumWeights(apps[app]) == 0 {
				out = append(out, weightSeries{cluster: cluster, app: app})
			}
		}
	}
	return out
}

func sumWeights(tags map[string]int32) int32 {
	var n int32
	for _, w := range tags {
		n += w
	}
	return n
}

// logChanges logs the weights of each cluster and app that differ from
// those read before.
func (m *Mesh) logChanges(previous, current map[string]appWeights) {
	for _, cluster := range sortedKeys(current) {
		apps := current[cluster]
		for _, app := range sortedKeys(apps) {
			if !sameWeights(previous[cluster][app], apps[app]) {
				m.logf("cluster %s: app %s: weights %s", cluster, app, formatWeights(apps[app]))
			}
		}
	}
}

func sameWeights(a, b map[string]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for tag, w := range a {
		if bw, ok := b[tag]; !ok || bw != w {
			return false
		}
	}
	return true
}

func formatWeights(tags map[string]int32) string {
	s := ""
	for i, tag := range sortedKeys(tags) {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d%%", tag, tags[tag])
	}
	return s
}

// ratioLocked is the error ratio of app's tag on cluster: the one set for
// that cluster, else the one set for every cluster. Call it with mu held.
func (m *Mesh) ratioLocked(cluster, app, tag string) float64 {
	if r, ok := m.ratiosIn[cluster][app][tag]; ok {
		return r
	}
	return m.ratios[app][tag]
}

// SetErrorRatio makes ratio (between 0 and 1) of the requests to app's tag
// fail with status 500 from the next interval on, on every cluster but
// those given a ratio of their own with SetErrorRatioIn.
func (m *Mesh) SetErrorRatio(app, tag string, ratio float64) error {
	if err := checkRatio(app, tag, ratio); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ratios[app] == nil {
		m.ratios[app] = map[string]float64{}
	}
	m.ratios[app][tag] = ratio
	return nil
}

// SetErrorRatioIn makes ratio (between 0 and 1) of the requests to app's
// tag on cluster fail with status 500 from the next interval on, whatever
// SetErrorRatio set for every cluster: a build failing in one cluster of
// the fleet only. cluster is one of Options.Clusters.
func (m *Mesh) SetErrorRatioIn(cluster, app, tag string, ratio float64) error {
	if err := checkRatio(app, tag, ratio); err != nil {
		return err
	}
	if !m.hasCluster(cluster) {
		return fmt.Errorf("setting the error ratio of %s/%s: cluster %q is not one of the mesh's (%s)", app, tag, cluster, m.clusterNames())
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ratiosIn[cluster] == nil {
		m.ratiosIn[cluster] = map[string]map[string]float64{}
	}
	if m.ratiosIn[cluster][app] == nil {
		m.ratiosIn[cluster][app] = map[string]float64{}
	}
	m.ratiosIn[cluster][app][tag] = ratio
	return nil
}

// checkRatio says what is wrong with an error ratio to set, if anything.
func checkRatio(app, tag string, ratio float64) error {
	if app == "" || tag == "" {
		return fmt.Errorf("setting an error ratio: app %q and tag %q must not be empty", app, tag)
	}
	if math.IsNaN(ratio) || ratio < 0 || ratio > 1 {
		return fmt.Errorf("setting the error ratio of %s/%s: ratio %v is not between 0 and 1", app, tag, ratio)
	}
	return nil
}

// hasCluster says the mesh serves cluster.
func (m *Mesh) hasCluster(cluster string) bool {
	for _, c := range m.clusters {
		if c.Name == cluster {
			return true
		}
	}
	return false
}

// clusterNames lists the clusters the mesh serves: "east, west".
func (m *Mesh) clusterNames() string {
	names := make([]string, len(m.clusters))
	for i, c := range m.clusters {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// SetQuiet makes app's tag receive no request at all, whatever its weight
// (a build no user reaches), or, with quiet false, its share again. It
// takes effect at the next reading of the weights.
func (m *Mesh) SetQuiet(app, tag string, quiet bool) error {
	if app == "" || tag == "" {
		return fmt.Errorf("quieting: app %q and tag %q must not be empty", app, tag)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.quiet[app] == nil {
		m.quiet[app] = map[string]bool{}
	}
	m.quiet[app][tag] = quiet
	return nil
}

// UnreadyRequests returns the requests sent to a build with no ready pod
// on its cluster, by cluster, app and tag
// (mesh_requests_to_unready_total).
func (m *Mesh) UnreadyRequests() map[string]map[string]map[string]float64 {
	return m.unready.counts()
}

// Unrouted returns the requests that found no route, by cluster and app:
// those sent to an app on a cluster that had a route for it and had none
// (mesh_unrouted_requests_total).
func (m *Mesh) Unrouted() map[string]map[string]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cloneNested(m.unrouted)
}

// cloneNested copies a map of maps, each inner map too.
func cloneNested[K1, K2 comparable, V any](in map[K1]map[K2]V) map[K1]map[K2]V {
	out := make(map[K1]map[K2]V, len(in))
	for k, inner := range in {
		out[k] = maps.Clone(inner)
	}
	return out
}

// ErrorRatios returns the error ratios set for every cluster, by app and
// tag.
func (m *Mesh) ErrorRatios() map[string]map[string]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cloneNested(m.ratios)
}

// ErrorRatiosIn returns the error ratios in effect on cluster, by app and
// tag: those set for it, and those set for every cluster.
func (m *Mesh) ErrorRatiosIn(cluster string) map[string]map[string]float64 {
	out := m.ErrorRatios()
	m.mu.Lock()
	defer m.mu.Unlock()
	for app, tags := range m.ratiosIn[cluster] {
		if out[app] == nil {
			out[app] = map[string]float64{}
		}
		maps.Copy(out[app], tags)
	}
	return out
}

// Weights returns a copy of the weights in effect, in percent, by cluster,
// app and tag: those the traffic follows, read at least the lag before. A
// cluster that failed to answer at the last reading is left out.
func (m *Mesh) Weights() map[string]map[string]map[string]int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]map[string]map[string]int32, len(m.weights))
	for cluster, apps := range m.weights {
		out[cluster] = make(map[string]map[string]int32, len(apps))
		for app, tags := range apps {
			out[cluster][app] = make(map[string]int32, len(tags))
			for tag, w := range tags {
				out[cluster][app][tag] = w
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

const (
	// stepDelay and the ramp 25 → 50 → 100 % make 4 s of delays.
	stepDelay = 2 * time.Second
	delays    = 2 * stepDelay
	// workers apply the Revisions at once.
	workers = 16
	// probeWrites is how many objects the write-rate probe creates.
	probeWrites = 400
	pollEvery   = time.Second
	// watchPoll is how often a phase looks at the objects a watch keeps
	// (no request): the resolution of its times.
	watchPoll = 200 * time.Millisecond
)

type bench struct {
	config
	fleet *fleet.Fleet
	// rms reads the ReleaseManagers from a watch.
	rms client.Reader
	// profiler fetches the operator's profiles of each phase, when set.
	profiler *profiler
}

// phase is one release of every app.
type phase struct {
	took time.Duration
	// routed is when every app's build took all of its traffic: at once
	// for a first build, at the end of its ramp for the others.
	routed time.Duration
	// appsRouted are, in order, when each app's ReleaseManager was first
	// seen with the build at 100 % of its traffic: the spread of the apps
	// behind routed.
	appsRouted []time.Duration
	cpu        time.Duration // the operator's CPU time (user and system)
	requests   requests
	lateness   histogram // ramp steps' lateness
	throttle   histogram // waits on the clients' rate limits
	runs       histogram // the ReleaseManager controller's runs' durations
	queued     histogram // how long its runs waited in its work queue once due
	// allWrites are the writes of every client (the operator, the
	// controller managers, the schedulers, the benchmark) to every API
	// server of the fleet, from the API servers' own counters.
	allWrites float64
	// clusterWrites are allWrites by cluster name.
	clusterWrites map[string]float64
	// idle is the share of the machine's CPU time left idle meanwhile.
	idle float64
}

// result is what the benchmark measured.
type result struct {
	apps, clusters      int
	writeRate           float64 // objects a target API server creates per second, 16 at a time
	first, second       phase
	quiet               time.Duration
	quietReq            requests
	reconciles          float64
	reconcilesBy        map[string]float64
	rssBefore, rssAfter resident // operator's resident memory
	// goMemory is the Go runtime's account of the operator's memory at
	// the end of the quiet spell (go_memstats_*_bytes), by figure.
	goMemory map[string]float64
	hosts    map[string]string // host → cluster name
}

func (b *bench) run(ctx context.Context) (*result, error) {
	res := &result{apps: b.apps, clusters: b.clusters, hosts: map[string]string{}}
	for _, c := range append([]*fleet.Cluster{b.fleet.Delivery}, b.fleet.Targets...) {
		if u, err := url.Parse(c.Config.Host); err == nil {
			res.hosts[u.Host] = c.Name
		}
	}
	var err error
	if res.writeRate, err = b.writeRate(ctx); err != nil {
		return nil, err
	}
	logf("a target API server creates %.0f objects/s (%d workers)", res.writeRate, workers)
	if res.first, err = b.release(ctx, "v1"); err != nil {
		return nil, err
	}
	if res.second, err = b.release(ctx, "v2"); err != nil {
		return nil, err
	}
	return res, b.measureQuiet(ctx, res)
}

// manifest is build tag of app as the benchmark releases it.
func manifest(app, tag string, commit time.Time) (*picchuv1alpha1.Revision, error) {
	rev, err := story.Manifest(story.SamplesDir(), app, tag)
	if err != nil {
		return nil, err
	}
	rev.Annotations[picchuv1alpha1.AnnotationGitCommitterTimestamp] = commit.UTC().Format(time.RFC3339)
	t := &rev.Spec.Targets[0]
	t.Canary = picchuv1alpha1.Canary{}
	t.ServiceLevelObjectives = nil
	t.Scale = picchuv1alpha1.ScaleInfo{Min: ptr.To(int32(podsPerBuild)), Max: podsPerBuild}
	t.Release.GeometricScaling = picchuv1alpha1.GeometricScaling{Start: 25, Factor: 2, Delay: &metav1.Duration{Duration: stepDelay}}
	return rev, nil
}

func appName(i int) string { return fmt.Sprintf("bench-%04d", i) }

// release applies build tag of every app, 16 at a time, and waits until
// every app has it released.
func (b *bench) release(ctx context.Context, tag string) (phase, error) {
	var p phase
	before, err := scrape(ctx, b.fleet.OperatorMetricsURL())
	if err != nil {
		return p, err
	}
	cpuBefore, err := b.operatorCPU()
	if err != nil {
		return p, err
	}
	serversBefore, err := b.apiServerRequests(ctx)
	if err != nil {
		return p, err
	}
	machineBefore, err := readMachineCPU()
	if err != nil {
		return p, err
	}
	profiled := b.profiler.start(ctx, tag)
	commit := time.Now()
	start := time.Now()
	if err := applyApps(b.apps, func(app string) error {
		rev, err := manifest(app, tag, commit)
		if err != nil {
			return err
		}
		return kit.Apply(ctx, b.fleet.Delivery.Client, rev)
	}); err != nil {
		return p, fmt.Errorf("applying %s: %w", tag, err)
	}
	logf("%s of %d apps applied in %s; waiting until every app has it released", tag, b.apps, time.Since(start).Round(time.Millisecond))
	routedAt := map[string]time.Duration{}
	if err := kit.Poll(ctx, watchPoll, b.timeout, tag+" released in every app", func(ctx context.Context) error {
		routed, released, err := b.released(ctx, tag, routedAt, time.Since(start))
		if err == nil && routed == b.apps && p.routed == 0 {
			p.routed = time.Since(start)
		}
		if err == nil && released < b.apps {
			err = fmt.Errorf("%d of %d apps have %s released", released, b.apps, tag)
		}
		return err
	}); err != nil {
		return p, err
	}
	p.took = time.Since(start)
	p.appsRouted = slices.Sorted(maps.Values(routedAt))
	machineAfter, err := readMachineCPU()
	if err != nil {
		return p, err
	}
	p.idle = machineBefore.idleShare(machineAfter)
	cpuAfter, err := b.operatorCPU()
	if err != nil {
		return p, err
	}
	p.cpu = cpuAfter - cpuBefore
	after, err := scrape(ctx, b.fleet.OperatorMetricsURL())
	if err != nil {
		return p, err
	}
	p.requests = after.requests().minus(before.requests())
	p.lateness = after.histogram("picchu_release_step_lateness_seconds", nil).minus(before.histogram("picchu_release_step_lateness_seconds", nil))
	p.throttle = after.histogram("picchu_client_throttle_wait_seconds", nil).minus(before.histogram("picchu_client_throttle_wait_seconds", nil))
	rm := func(l map[string]string) bool { return l["controller"] == "releasemanager" }
	p.runs = after.histogram("controller_runtime_reconcile_time_seconds", rm).minus(before.histogram("controller_runtime_reconcile_time_seconds", rm))
	rmQueue := func(l map[string]string) bool { return l["name"] == "releasemanager" }
	p.queued = after.histogram("workqueue_queue_duration_seconds", rmQueue).minus(before.histogram("workqueue_queue_duration_seconds", rmQueue))
	logf("%s released in every app in %s", tag, p.took.Round(time.Millisecond))
	// A release's writes are counted until the fleet is done with it: the
	// old build retired, the Revisions' mirrors and the last events written.
	if err := b.drained(ctx); err != nil {
		return p, err
	}
	serversAfter, err := b.apiServerRequests(ctx)
	if err != nil {
		return p, err
	}
	p.clusterWrites = map[string]float64{}
	for name, after := range serversAfter {
		before := serversBefore[name]
		for k, n := range after.writes {
			p.allWrites += n - before.writes[k]
			p.clusterWrites[name] += n - before.writes[k]
		}
		logf("%s: writes to %s by every client, by verb and resource: %s", tag, name, topWrites(after.writes, before.writes))
		logf("%s: reads of single objects from %s by every client: %s", tag, name, topWrites(after.gets, before.gets))
	}
	// Waited for last: a profile outlasting the release must not stretch
	// the span whose writes are counted.
	return p, profiled()
}

// applyApps runs apply for every app, workers at a time, and returns the
// first error.
func applyApps(apps int, apply func(app string) error) error {
	jobs := make(chan int)
	errs := make(chan error, apps)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if err := apply(appName(i)); err != nil {
					errs <- fmt.Errorf("%s: %w", appName(i), err)
				}
			}
		})
	}
	for i := range apps {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	return <-errs
}

// serverCounts are an API server's counts of requests, by verb and
// resource: its writes, and its GETs of single objects.
type serverCounts struct{ writes, gets map[string]float64 }

// apiServerRequests are the requests each API server of the fleet counted,
// by cluster name.
func (b *bench) apiServerRequests(ctx context.Context) (map[string]serverCounts, error) {
	out := map[string]serverCounts{}
	for _, c := range append([]*fleet.Cluster{b.fleet.Delivery}, b.fleet.Targets...) {
		ms, err := scrapeAPIServer(ctx, c.Config)
		if err != nil {
			return nil, err
		}
		out[c.Name] = serverCounts{writes: ms.writesByResource(), gets: ms.getsByResource()}
	}
	return out, nil
}

// topWrites says the counts of after minus before, most first.
func topWrites(after, before map[string]float64) string {
	type count struct {
		key string
		n   float64
	}
	var counts []count
	for k, v := range after {
		if n := v - before[k]; n > 0 {
			counts = append(counts, count{k, n})
		}
	}
	slices.SortFunc(counts, func(a, b count) int { return cmp.Compare(b.n, a.n) })
	var parts []string
	for _, c := range counts {
		parts = append(parts, fmt.Sprintf("%s %.0f", c.key, c.n))
	}
	return strings.Join(parts, ", ")
}

// released counts the apps whose ReleaseManager records tag at 100 % of
// the traffic (routed), and those that record it released. It notes in
// routedAt, by ReleaseManager (an app's, for every cluster of its
// target), when one is first seen routed: at since.
func (b *bench) released(ctx context.Context, tag string, routedAt map[string]time.Duration, since time.Duration) (routed, released int, err error) {
	rms := &picchuv1alpha1.ReleaseManagerList{}
	if err := b.rms.List(ctx, rms, client.InNamespace(b.fleet.Namespace)); err != nil {
		return 0, 0, err
	}
	for _, rm := range rms.Items {
		for _, st := range rm.Status.Revisions {
			if st.Tag != tag {
				continue
			}
			if st.CurrentPercent == 100 {
				routed++
				if _, seen := routedAt[rm.Name]; !seen {
					routedAt[rm.Name] = since
				}
			}
			if st.State.Current == "released" {
				released++
			}
		}
	}
	return routed, released, nil
}

// spread is the first, median, 90th percentile and last of sorted
// durations, as a table cell.
func spread(sorted []time.Duration) string {
	if len(sorted) == 0 {
		return "none"
	}
	at := func(q float64) time.Duration {
		return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))].Round(100 * time.Millisecond)
	}
	return fmt.Sprintf("%s / %s / %s / %s", at(0), at(0.5), at(0.9), sorted[len(sorted)-1].Round(100*time.Millisecond))
}

// settled fails until every app's ReleaseManager is Ready: every build in a
// settled state on every cluster (the second build released, the first
// retired).
func (b *bench) settled(ctx context.Context) error {
	rms := &picchuv1alpha1.ReleaseManagerList{}
	if err := b.rms.List(ctx, rms, client.InNamespace(b.fleet.Namespace)); err != nil {
		return err
	}
	ready := 0
	for _, rm := range rms.Items {
		if meta.IsStatusConditionTrue(rm.Status.Conditions, picchuv1alpha1.ConditionReady) {
			ready++
		}
	}
	if ready < b.apps {
		return fmt.Errorf("%d of %d apps Ready", ready, b.apps)
	}
	// Ready says the last build serves everywhere; the operator may still
	// be working off what led there (the Revisions' status mirrors, the
	// old builds' retirement). Its queues say when it is done.
	ms, err := scrape(ctx, b.fleet.OperatorMetricsURL())
	if err != nil {
		return err
	}
	ours := func(l map[string]string) bool { return slices.Contains(operatorControllers, l["controller"]) }
	if queued, running := ms.sum("workqueue_depth", ours), ms.sum("controller_runtime_active_workers", ours); queued+running > 0 {
		return fmt.Errorf("the operator has %.0f runs queued and %.0f under way", queued, running)
	}
	return nil
}

// drained waits until every app has settled (Ready), then b.settle: the
// operator writes the last events and Revision mirrors of a release
// meanwhile (a Revision's progress waits up to 10 s to be written).
func (b *bench) drained(ctx context.Context) error {
	logf("waiting until every app has settled (Ready), then %s", b.settle)
	if err := kit.Poll(ctx, pollEvery, b.timeout, "every app settled", b.settled); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.settle):
		return nil
	}
}

// operatorControllers are the operator's controllers, by their names in
// controller-runtime's metrics.
var operatorControllers = []string{"releasemanager", "revision", "cluster"}

// measureQuiet measures the operator while nothing changes.
func (b *bench) measureQuiet(ctx context.Context, res *result) error {
	pid, ok := b.fleet.OperatorPID()
	if !ok {
		return fmt.Errorf("the operator is not running")
	}
	logf("measuring a quiet %s", b.quiet)
	before, err := scrape(ctx, b.fleet.OperatorMetricsURL())
	if err != nil {
		return err
	}
	if res.rssBefore, err = rss(pid); err != nil {
		return err
	}
	if err := b.profiler.heap(ctx); err != nil {
		return err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.quiet):
	}
	res.quiet = time.Since(start)
	after, err := scrape(ctx, b.fleet.OperatorMetricsURL())
	if err != nil {
		return err
	}
	if res.rssAfter, err = rss(pid); err != nil {
		return err
	}
	res.goMemory = map[string]float64{}
	for _, figure := range goMemoryFigures {
		res.goMemory[figure] = after.sum("go_memstats_"+figure+"_bytes", nil)
	}
	res.quietReq = after.requests().minus(before.requests())
	res.reconcilesBy = map[string]float64{}
	for _, controller := range operatorControllers {
		keep := func(l map[string]string) bool { return l["controller"] == controller }
		n := after.sum("controller_runtime_reconcile_total", keep) - before.sum("controller_runtime_reconcile_total", keep)
		res.reconcilesBy[controller] = n
		res.reconciles += n
	}
	return nil
}

// clockTicks is the unit of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const clockTicks = 100

// operatorCPU is the CPU time the operator has used, from /proc.
func (b *bench) operatorCPU() (time.Duration, error) {
	pid, ok := b.fleet.OperatorPID()
	if !ok {
		return 0, fmt.Errorf("the operator is not running")
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the operator's CPU time: %w", err)
	}
	// The fields after the command's name, which ends with the last ")":
	// utime and stime are the 14th and 15th fields of the line.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("reading the operator's CPU time: short /proc/%d/stat", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the operator's CPU time: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// goMemoryFigures are the Go runtime's figures the benchmark prints: what
// the heap holds (in use), what it keeps unused and has not given back to
// the system (idle minus released), the goroutines' stacks, and the heap
// size at which it collects next.
var goMemoryFigures = []string{"heap_inuse", "heap_idle", "heap_released", "stack_inuse", "next_gc"}

// resident is a process's resident memory, in bytes, and its two parts:
// anonymous (the Go heap, stacks and the runtime's own) and file-backed
// (the pages of the binary and its libraries it touched).
type resident struct{ total, anon, file int64 }

// mib is n bytes in MiB.
func mib(n int64) float64 { return float64(n) / (1 << 20) }

// rss is the resident memory of process pid, from /proc.
func rss(pid int) (resident, error) {
	var r resident
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return r, fmt.Errorf("reading the operator's memory: %w", err)
	}
	fields := map[string]*int64{"VmRSS:": &r.total, "RssAnon:": &r.anon, "RssFile:": &r.file}
	found := 0
	for _, line := range strings.Split(string(data), "\n") {
		for prefix, into := range fields {
			rest, ok := strings.CutPrefix(line, prefix)
			if !ok {
				continue
			}
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return r, fmt.Errorf("reading the operator's memory: %q: %w", line, err)
			}
			*into = kb << 10
			found++
		}
	}
	if found != len(fields) {
		return r, fmt.Errorf("reading the operator's memory: VmRSS, RssAnon or RssFile missing from /proc/%d/status", pid)
	}
	return r, nil
}

// writeRate measures how many objects per second the first target's API
// server creates, 16 at a time: the bound on what any writer of it does.
func (b *bench) writeRate(ctx context.Context) (float64, error) {
	c := b.fleet.Targets[0].Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-write-rate"}}
	if err := c.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return 0, err
	}
	jobs := make(chan int)
	var failed error
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, GenerateName: "probe-"},
					Data:       map[string]string{"i": strconv.Itoa(i)},
				}
				if err := c.Create(ctx, cm); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range probeWrites {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	took := time.Since(start)
	if failed != nil {
		return 0, fmt.Errorf("measuring the write rate: %w", failed)
	}
	if err := c.Delete(ctx, ns); err != nil {
		return 0, fmt.Errorf("measuring the write rate: %w", err)
	}
	return probeWrites / took.Seconds(), nil
}

// table prints the figures of issue 17's table.
func (r *result) table() string {
	var sb strings.Builder
	perAppMinute := func(n float64) float64 { return n / float64(r.apps) / r.quiet.Minutes() }
	// The write bound: the busiest cluster's writes at the measured rate.
	bound := func(p phase) time.Duration {
		most := 0.0
		for _, n := range p.requests.writes {
			most = math.Max(most, n)
		}
		return time.Duration(most / r.writeRate * float64(time.Second))
	}
	fmt.Fprintf(&sb, "bench-fleet: %d apps, %d clusters (delivery and %d targets); ramp 25 → 50 → 100 %%, %s steps (%s of delays)\n",
		r.apps, r.clusters, r.clusters-1, stepDelay, delays)
	fmt.Fprintf(&sb, "| figure | measured |\n|---|---|\n")
	fmt.Fprintf(&sb, "| API server write rate (creates/s, %d at a time) | %.0f |\n", workers, r.writeRate)
	for _, p := range []struct {
		name string
		p    phase
	}{{"first build of every app released", r.first}, {"second build of every app released", r.second}} {
		if p.p.routed > 0 && p.p.routed < p.p.took {
			fmt.Fprintf(&sb, "| %s at 100 %% of its traffic | %s |\n", strings.TrimSuffix(p.name, " released"), p.p.routed.Round(100*time.Millisecond))
		}
		fmt.Fprintf(&sb, "| %s: apps at 100 %% of their traffic, first / median / p90 / last | %s |\n", strings.TrimSuffix(p.name, " released"), spread(p.p.appsRouted))
		fmt.Fprintf(&sb, "| %s | %s (writes: %s; write bound %s = %.1f × it; operator CPU %s; machine CPU %.0f %% idle) |\n", p.name, p.p.took.Round(100*time.Millisecond),
			byCluster(p.p.requests.writes, r.hosts), bound(p.p).Round(100*time.Millisecond), p.p.took.Seconds()/math.Max(bound(p.p).Seconds(), 1e-9),
			p.p.cpu.Round(100*time.Millisecond), 100*p.p.idle)
	}
	// The API servers share the machine's cores: at the measured rate,
	// every write to any of them takes its share of the same time.
	for _, p := range []struct {
		name string
		p    phase
	}{{"first", r.first}, {"second", r.second}} {
		shared := time.Duration(p.p.allWrites / r.writeRate * float64(time.Second))
		fmt.Fprintf(&sb, "| writes by every client to every API server (%s build) | %.0f: %s at the write rate = %.1f × it |\n",
			p.name, p.p.allWrites, shared.Round(100*time.Millisecond), p.p.took.Seconds()/math.Max(shared.Seconds(), 1e-9))
	}
	fmt.Fprintf(&sb, "| step lateness p50 / p95 (second build, %.0f steps) | %.3fs / %.3fs |\n",
		r.second.lateness.count, r.second.lateness.quantile(0.5), r.second.lateness.quantile(0.95))
	fmt.Fprintf(&sb, "| throttling wait p95 (first / second build) | %.3fs / %.3fs |\n", r.first.throttle.quantile(0.95), r.second.throttle.quantile(0.95))
	fmt.Fprintf(&sb, "| ReleaseManager runs, p50 / p95 duration (second build, %.0f runs) | %.3fs / %.3fs |\n",
		r.second.runs.count, r.second.runs.quantile(0.5), r.second.runs.quantile(0.95))
	fmt.Fprintf(&sb, "| ReleaseManager runs' wait in the work queue, p50 / p95 (second build) | %.3fs / %.3fs |\n",
		r.second.queued.quantile(0.5), r.second.queued.quantile(0.95))
	fmt.Fprintf(&sb, "| requests per app per minute, quiet | %.3f (reads %s; writes %s) |\n",
		perAppMinute(total(r.quietReq.reads)+total(r.quietReq.writes)), byCluster(r.quietReq.reads, r.hosts), byCluster(r.quietReq.writes, r.hosts))
	fmt.Fprintf(&sb, "| writes per app per minute, quiet | %.3f (by method: %s) |\n", perAppMinute(total(r.quietReq.writes)), byCluster(r.quietReq.writeMethods, nil))
	fmt.Fprintf(&sb, "| reconciles per app per minute, quiet | %.3f (ReleaseManager %.0f, Revision %.0f, Cluster %.0f in %s) |\n",
		perAppMinute(r.reconciles), r.reconcilesBy["releasemanager"], r.reconcilesBy["revision"], r.reconcilesBy["cluster"], r.quiet.Round(time.Second))
	fmt.Fprintf(&sb, "| operator memory (resident), start → end of the quiet spell | %.0f MiB → %.0f MiB (at the end: anonymous %.0f MiB, file-backed %.0f MiB) |\n",
		mib(r.rssBefore.total), mib(r.rssAfter.total), mib(r.rssAfter.anon), mib(r.rssAfter.file))
	m := r.goMemory
	fmt.Fprintf(&sb, "| operator's Go memory at the end: heap in use / idle, kept / stacks / next collection at | %.0f / %.0f / %.0f / %.0f MiB |\n",
		m["heap_inuse"]/(1<<20), (m["heap_idle"]-m["heap_released"])/(1<<20), m["stack_inuse"]/(1<<20), m["next_gc"]/(1<<20))
	return sb.String()
}

// byCluster says n per cluster name.
func byCluster(n map[string]float64, hosts map[string]string) string {
	var parts []string
	for host, v := range n {
		name := hosts[host]
		if name == "" {
			name = host
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", name, v))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

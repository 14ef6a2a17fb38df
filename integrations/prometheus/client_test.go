package prometheus_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/test/kit"
)

// waitLimit bounds the waits of these tests, so that a bug fails them
// instead of hanging them; nothing is expected to take nearly that long.
const waitLimit = 30 * time.Second

func newClient(t testing.TB, cfg prometheus.Config) *prometheus.Client {
	t.Helper()
	c, err := prometheus.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return c
}

// canaryQuery is the query expected for a canary alert question, written out
// here rather than computed by the package under test.
func canaryQuery(app, tag string) string {
	return fmt.Sprintf(`sum by (app, tag, namespace, alertname, cluster) (ALERTS{app="%s",tag="%s",namespace="%s",canary="true",alertstate="firing"})`, app, tag, inNamespace(app))
}

const sloQuery = `ALERTS{slo="true",alertstate="firing"}`

func is(queries ...string) func(string) bool {
	return func(q string) bool { return slices.Contains(queries, q) }
}

func TestNew_RejectsBadConfig(t *testing.T) {
	for _, cfg := range []prometheus.Config{
		{},
		{Address: "::not a url"},
		{Address: "localhost:9090"},
		{Address: "127.0.0.1:9090"},
		{Address: "ftp://127.0.0.1:9090"},
		{Address: "http://"},
		{Address: "http://127.0.0.1:9090", Timeout: -time.Second},
		{Address: "http://127.0.0.1:9090", TTL: -time.Second},
		{Address: "http://127.0.0.1:9090", TTL: time.Nanosecond},
		{Address: "http://127.0.0.1:9090", CacheSize: -1},
	} {
		if c, err := prometheus.New(cfg); err == nil {
			t.Errorf("New(%+v) = %v, want an error", cfg, c)
		} else if !strings.Contains(err.Error(), "creating Prometheus client") {
			t.Errorf("New(%+v): error %q does not say what failed", cfg, err)
		}
	}
	for _, address := range []string{"http://127.0.0.1:9090", "https://thanos.example:10902/prefix"} {
		if _, err := prometheus.New(prometheus.Config{Address: address}); err != nil {
			t.Errorf("New(%q): %v", address, err)
		}
	}
}

func TestFiringAlerts_FiltersSortsAndDeduplicates(t *testing.T) {
	fake := newFakePrometheus(t, is(sloQuery, canaryQuery("a", "v1")))
	fake.respond = func(w http.ResponseWriter, query string) {
		if query == canaryQuery("a", "v1") {
			writeVector(w, model.Vector{alert("app", "a", "tag", "v1", "alertname", "Canary")})
			return
		}
		writeVector(w, model.Vector{
			alert("app", "a", "tag", "v1", "alertname", "Zeta", "slo", "true"),
			alert("app", "a", "tag", "v1", "alertname", "Alpha", "slo", "true", "severity", "page"),
			alert("app", "a", "tag", "v1", "alertname", "Alpha", "slo", "true", "severity", "ticket"),
			alert("app", "a", "tag", "v2", "alertname", "OtherTag", "slo", "true"),
			alert("app", "b", "tag", "v1", "alertname", "OtherApp", "slo", "true"),
			alert("app", "a", "alertname", "NoTag", "slo", "true"),
			alert("app", "a", "tag", "v1", "slo", "true"),
		})
	}
	c := newClient(t, prometheus.Config{Address: fake.URL()})
	ctx := context.Background()
	for _, tc := range []struct {
		app, tag string
		canary   bool
		want     []string
	}{
		{"a", "v1", false, []string{"Alpha", "Zeta"}},
		{"a", "v2", false, []string{"OtherTag"}},
		{"b", "v1", false, []string{"OtherApp"}},
		{"a", "", false, []string{"NoTag"}},
		{"c", "v1", false, []string{}},
		{"a", "v1", true, []string{"Canary"}},
	} {
		got, err := c.FiringAlerts(ctx, appIn(tc.app), tc.tag, tc.canary)
		if err != nil {
			t.Fatalf("FiringAlerts(%q, %q, %v): %v", tc.app, tc.tag, tc.canary, err)
		}
		if got == nil || !slices.Equal(got, tc.want) {
			t.Errorf("FiringAlerts(%q, %q, %v) = %#v, want %#v", tc.app, tc.tag, tc.canary, got, tc.want)
		}
	}
	// One cached SLO result served every app and tag.
	if n := fake.count(sloQuery); n != 1 {
		t.Errorf("the SLO query reached the server %d times, want 1", n)
	}
	if n := c.CacheLen(); n != 2 {
		t.Errorf("CacheLen() = %d, want 2 (the SLO query and one canary query)", n)
	}
}

// hangingListener accepts connections and never answers them.
func hangingListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range conns {
			_ = conn.Close()
		}
	})
	return "http://" + l.Addr().String()
}

func TestFiringAlerts_QueryDeadline(t *testing.T) {
	address := hangingListener(t)
	c := newClient(t, prometheus.Config{Address: address, Timeout: 200 * time.Millisecond})
	_, err := c.FiringAlerts(context.Background(), appIn("a"), "v1", true)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FiringAlerts on a server that never answers: %v, want a deadline exceeded", err)
	}
	want := fmt.Sprintf("querying Prometheus at %s (%s): ", address, canaryQuery("a", "v1"))
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	if n := c.CacheLen(); n != 0 {
		t.Errorf("CacheLen() = %d after a failed query, want 0", n)
	}
}

func TestFiringAlerts_CallerCancellation(t *testing.T) {
	address := hangingListener(t)
	c := newClient(t, prometheus.Config{Address: address, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	// Cancelled once the caller waits on its request.
	prometheus.OnJoined(c, func(string) { cancel() })
	go func() {
		_, err := c.FiringAlerts(ctx, appIn("a"), "v1", false)
		errs <- err
	}()
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("FiringAlerts with a cancelled context: %v, want context.Canceled", err)
		}
		if !strings.Contains(err.Error(), "querying Prometheus at "+address) {
			t.Errorf("error %q does not say where it queried", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("FiringAlerts did not return when its context was cancelled")
	}
}

func TestFiringAlerts_CacheIsBoundedInSize(t *testing.T) {
	const queries, size = 5000, 100
	expected := make(map[string]bool, queries)
	for i := range queries {
		expected[canaryQuery(fmt.Sprintf("app-%d", i), "v1")] = true
	}
	fake := newFakePrometheus(t, func(q string) bool { return expected[q] })
	c := newClient(t, prometheus.Config{Address: fake.URL(), CacheSize: size, TTL: time.Hour})
	ctx := context.Background()
	ask := func(i int) {
		t.Helper()
		got, err := c.FiringAlerts(ctx, appIn(fmt.Sprintf("app-%d", i)), "v1", true)
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		if got == nil || len(got) != 0 {
			t.Fatalf("query %d: %#v, want an empty slice", i, got)
		}
	}
	for i := range queries {
		ask(i)
		if n := c.CacheLen(); n > size {
			t.Fatalf("after %d queries CacheLen() = %d, more than %d", i+1, n, size)
		}
	}
	if n := c.CacheLen(); n != size {
		t.Errorf("CacheLen() = %d after %d queries, want %d", n, queries, size)
	}
	if n := fake.total(); n != queries {
		t.Errorf("%d requests for %d distinct queries", n, queries)
	}

	// A recent query is answered from the cache.
	recent := canaryQuery(fmt.Sprintf("app-%d", queries-1), "v1")
	ask(queries - 1)
	if n := fake.count(recent); n != 1 {
		t.Errorf("a recent query reached the server %d times, want 1", n)
	}
	// An old one was evicted, and reaches the server again.
	old := canaryQuery("app-0", "v1")
	ask(0)
	if n := fake.count(old); n != 2 {
		t.Errorf("an evicted query reached the server %d times, want 2", n)
	}
	if n := c.CacheLen(); n > size {
		t.Errorf("CacheLen() = %d, more than %d", n, size)
	}
}

func TestFiringAlerts_CacheExpires(t *testing.T) {
	fake := newFakePrometheus(t, is(sloQuery))
	c := newClient(t, prometheus.Config{Address: fake.URL(), TTL: 50 * time.Millisecond})
	ctx := context.Background()
	if _, err := c.FiringAlerts(ctx, appIn("a"), "v1", false); err != nil {
		t.Fatal(err)
	}
	if n := fake.count(sloQuery); n != 1 {
		t.Fatalf("the first query reached the server %d times, want 1", n)
	}
	kit.Eventually(t, waitLimit, "an expired result is queried again", func() error {
		if _, err := c.FiringAlerts(ctx, appIn("a"), "v1", false); err != nil {
			return err
		}
		if n := fake.count(sloQuery); n < 2 {
			return fmt.Errorf("the query reached the server %d times", n)
		}
		return nil
	})
}

// blockingRespond answers each query once release is closed, after sending
// on arrived.
func blockingRespond(arrived chan<- string, release <-chan struct{}, respond func(http.ResponseWriter)) func(http.ResponseWriter, string) {
	return func(w http.ResponseWriter, query string) {
		arrived <- query
		<-release
		respond(w)
	}
}

func TestFiringAlerts_ConcurrentMissesShareOneRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond func(http.ResponseWriter)
		want    []string // nil: an error
	}{
		{"success", func(w http.ResponseWriter) {
			writeVector(w, model.Vector{alert("app", "a", "tag", "v1", "alertname", "Burn", "slo", "true")})
		}, []string{"Burn"}},
		{"failure", func(w http.ResponseWriter) {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const callers = 50
			arrived := make(chan string, callers)
			release := make(chan struct{})
			fake := newFakePrometheus(t, is(sloQuery))
			fake.respond = blockingRespond(arrived, release, tc.respond)
			// Registered after the server's Close, so it runs before it.
			var once sync.Once
			releaseOnce := func() { once.Do(func() { close(release) }) }
			t.Cleanup(releaseOnce)

			c := newClient(t, prometheus.Config{Address: fake.URL(), TTL: time.Hour})
			joined := make(chan struct{}, callers)
			prometheus.OnJoined(c, func(string) { joined <- struct{}{} })

			type result struct {
				names []string
				err   error
			}
			results := make(chan result, callers)
			for range callers {
				go func() {
					names, err := c.FiringAlerts(context.Background(), appIn("a"), "v1", false)
					results <- result{names, err}
				}()
			}
			timeout := time.After(waitLimit)
			for i := range callers {
				select {
				case <-joined:
				case <-timeout:
					t.Fatalf("%d of %d callers joined the query", i, callers)
				}
			}
			select {
			case <-arrived:
			case <-timeout:
				t.Fatal("the query did not reach the server")
			}
			releaseOnce()
			for range callers {
				var r result
				select {
				case r = <-results:
				case <-timeout:
					t.Fatal("a caller did not return")
				}
				if tc.want == nil {
					if r.err == nil || !strings.Contains(r.err.Error(), "503") {
						t.Errorf("FiringAlerts = %v, %v; want the server's error", r.names, r.err)
					}
				} else if r.err != nil || !slices.Equal(r.names, tc.want) {
					t.Errorf("FiringAlerts = %v, %v; want %v", r.names, r.err, tc.want)
				}
			}
			if n := fake.count(sloQuery); n != 1 {
				t.Errorf("%d concurrent callers made %d requests, want 1", callers, n)
			}
			wantCached := 0
			if tc.want != nil {
				wantCached = 1
			}
			if n := c.CacheLen(); n != wantCached {
				t.Errorf("CacheLen() = %d, want %d", n, wantCached)
			}
		})
	}
}

func TestFiringAlerts_ErrorsAreWrappedAndNotCached(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond func(http.ResponseWriter, string)
		says    string
	}{
		{"server error", func(w http.ResponseWriter, _ string) {
			http.Error(w, "something broke", http.StatusInternalServerError)
		}, "server_error"},
		{"bad JSON", func(w http.ResponseWriter, _ string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status": "success", "data": `))
		}, "bad_response"},
		{"API error", func(w http.ResponseWriter, _ string) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "errorType": "bad_data", "error": "parse error at char 3"})
		}, "parse error at char 3"},
		{"not a vector", func(w http.ResponseWriter, _ string) {
			writeJSON(w, http.StatusOK, map[string]any{
				"status": "success",
				"data":   map[string]any{"resultType": "scalar", "result": []any{1700000000, "1"}},
			})
		}, "result is a scalar, not a vector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakePrometheus(t, is(canaryQuery("a", "v1")))
			fake.respond = tc.respond
			c := newClient(t, prometheus.Config{Address: fake.URL(), TTL: time.Hour})
			prefix := fmt.Sprintf("querying Prometheus at %s (%s): ", fake.URL(), canaryQuery("a", "v1"))
			for attempt := 1; attempt <= 2; attempt++ {
				got, err := c.FiringAlerts(context.Background(), appIn("a"), "v1", true)
				if err == nil {
					t.Fatalf("attempt %d: FiringAlerts = %#v, want an error", attempt, got)
				}
				if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("attempt %d: error %q, want %q… saying %q", attempt, err, prefix, tc.says)
				}
				if n := c.CacheLen(); n != 0 {
					t.Errorf("attempt %d: CacheLen() = %d after an error, want 0", attempt, n)
				}
				if n := fake.count(canaryQuery("a", "v1")); n != attempt {
					t.Errorf("attempt %d: %d requests, want %d (errors are not cached)", attempt, n, attempt)
				}
			}
		})
	}
}

func TestFiringAlerts_DoneContextSendsNoRequest(t *testing.T) {
	fake := newFakePrometheus(t, is(sloQuery))
	c := newClient(t, prometheus.Config{Address: fake.URL()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.FiringAlerts(ctx, appIn("a"), "v1", false); !errors.Is(err, context.Canceled) {
		t.Errorf("FiringAlerts with a cancelled context: %v, want context.Canceled", err)
	}
	if n := fake.total(); n != 0 {
		t.Errorf("%d requests with a cancelled context, want 0", n)
	}
}

// TestFiringAlerts_WarningsAreMissingData answers with Thanos' partial
// response: the vector and a warning. The answer may lack alerts that fire,
// so it is an error, not "nothing firing", and it is not cached.
func TestFiringAlerts_WarningsAreMissingData(t *testing.T) {
	fake := newFakePrometheus(t, is(canaryQuery("a", "v1")))
	fake.respond = func(w http.ResponseWriter, _ string) {
		writeJSON(w, http.StatusOK, map[string]any{
			"status":   "success",
			"data":     map[string]any{"resultType": "vector", "result": model.Vector{}},
			"warnings": []string{"No StoreAPIs matched for this query"},
		})
	}
	c := newClient(t, prometheus.Config{Address: fake.URL()})
	got, err := c.FiringAlerts(context.Background(), appIn("a"), "v1", true)
	if !errors.Is(err, prometheus.ErrPartialResponse) || !strings.Contains(err.Error(), "No StoreAPIs matched") {
		t.Fatalf("FiringAlerts on a partial response = %v, %v; want ErrPartialResponse with the warning", got, err)
	}
	if n := c.CacheLen(); n != 0 {
		t.Errorf("CacheLen() = %d after a partial response, want 0", n)
	}
}

// TestUnreached_NamesTheMetricsWithoutRequestsForTheTag: a recorded total
// with a positive series for the tag counted requests; one with no series,
// or only zeros, did not.
func TestUnreached_NamesTheMetricsWithoutRequestsForTheTag(t *testing.T) {
	query := func(metric string) string { return metric + `{namespace="shop-production",tag="v2"} > 0` }
	counted := func(metric string) string { return "count(" + query(metric) + ")" }
	fake := newFakePrometheus(t, is(counted("shop:availability:total"), counted("shop:latency:total")))
	fake.respond = func(w http.ResponseWriter, q string) {
		if q == counted("shop:availability:total") {
			writeVector(w, model.Vector{&model.Sample{Metric: model.Metric{}, Value: 2, Timestamp: model.Time(1_700_000_000_000)}})
			return
		}
		writeVector(w, model.Vector{})
	}
	c := newClient(t, prometheus.Config{Address: fake.URL()})
	got, err := c.Unreached(context.Background(), appIn("shop"), "v2", []string{"shop:availability:total", "shop:latency:total"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"shop:latency:total"}) {
		t.Errorf("Unreached = %v, want [shop:latency:total]", got)
	}
	if got, err := c.Unreached(context.Background(), appIn("shop"), "v2", nil); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Unreached of no metric = %v, %v; want empty, not nil", got, err)
	}
}

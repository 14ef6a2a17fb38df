package kit

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// scrape reads Traffic's /metrics and returns istio_requests_total by
// "app/tag/code".
func scrape(t *testing.T, traffic *Traffic) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + traffic.Addr() + "/metrics")
	if err != nil {
		t.Fatalf("scraping: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping: %s, %v: %s", resp.Status, err, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, body)
	}
	got := map[string]float64{}
	family, ok := families["istio_requests_total"]
	if !ok {
		return got
	}
	if family.GetType().String() != "COUNTER" {
		t.Errorf("istio_requests_total is a %s, want a counter", family.GetType())
	}
	for _, m := range family.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["reporter"] != "destination" {
			t.Errorf("reporter %q, want destination", l["reporter"])
		}
		got[fmt.Sprintf("%s/%s/%s", l["destination_app"], l["destination_version"], l["response_code"])] = m.GetCounter().GetValue()
	}
	return got
}

func TestTraffic_CountsIntegrateRatesPiecewise(t *testing.T) {
	traffic, err := StartTraffic()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traffic.Close)
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	traffic.now = clock.Now

	if got := scrape(t, traffic); len(got) != 0 {
		t.Fatalf("before any Set: %v, want nothing", got)
	}

	traffic.Set("demo", "v1", 10, 0)
	traffic.Set("demo", "v2", 10, 0.5)
	clock.Advance(2 * time.Second)
	want := map[string]float64{
		"demo/v1/200": 20, "demo/v1/500": 0,
		"demo/v2/200": 10, "demo/v2/500": 10,
	}
	assertCounts(t, "after 2s", scrape(t, traffic), want)

	// A new rate counts from now on; what was counted stays.
	traffic.Set("demo", "v2", 4, 0.25)
	clock.Advance(time.Second)
	want = map[string]float64{
		"demo/v1/200": 30, "demo/v1/500": 0,
		"demo/v2/200": 13, "demo/v2/500": 11,
	}
	assertCounts(t, "after a change of rate and 1s more", scrape(t, traffic), want)

	// Out-of-range values are clamped: no traffic, then only errors.
	traffic.Set("demo", "v1", -5, 0)
	traffic.Set("demo", "v2", 2, 7)
	clock.Advance(3 * time.Second)
	want = map[string]float64{
		"demo/v1/200": 30, "demo/v1/500": 0,
		"demo/v2/200": 13, "demo/v2/500": 17,
	}
	assertCounts(t, "after clamped rates", scrape(t, traffic), want)
}

func assertCounts(t *testing.T, when string, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: counts %v, want %v", when, got, want)
		return
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: %s = %v, want %v (all: %v)", when, k, g, w, got)
		}
	}
}

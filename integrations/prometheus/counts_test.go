package prometheus_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/test/kit"
)

// fakePod is one pod's Istio sidecar for Prometheus to scrape: it serves
// requests at a steady rate, a share of them errors, and exports what it
// served as istio_requests_total (codes 200 and 500) on /metrics. Its
// counters start at history (what it served before the test: a pod up for
// an hour), go back to 0 when it restarts, and it stops serving and
// answers 503 once gone. A restart and a disappearance happen on the
// first scrape after their time, once that scrape is answered, so that
// every request the pod served is in some scrape: what it served over a
// window is then exactly known (served).
type fakePod struct {
	tag        string
	rate       float64 // requests a second
	errorRatio float64
	history    float64
	start      time.Time

	server *httptest.Server

	mu                   sync.Mutex
	restartAfter, goneAt time.Time // when to restart and go; zero: never
	restartedAt, wentAt  time.Time // when it did; zero: not yet
	scrapesAfterRestart  int
}

func newFakePod(tag string, rate, errorRatio float64, start time.Time) *fakePod {
	p := &fakePod{tag: tag, rate: rate, errorRatio: errorRatio, history: rate * 3600, start: start}
	p.server = httptest.NewServer(p)
	return p
}

// servedBy is what the pod served from its start up to t (up to when it
// went, once gone): requests and errors, whole numbers.
func (p *fakePod) servedBy(t time.Time) (total, errs float64) {
	if !p.wentAt.IsZero() && t.After(p.wentAt) {
		t = p.wentAt
	}
	elapsed := max(t.Sub(p.start).Seconds(), 0)
	errs = math.Floor(p.rate * p.errorRatio * elapsed)
	return errs + math.Floor(p.rate*(1-p.errorRatio)*elapsed), errs
}

// served is what the pod served in (from, to].
func (p *fakePod) served(from, to time.Time) (total, errs float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t1, e1 := p.servedBy(to)
	t0, e0 := p.servedBy(from)
	return t1 - t0, e1 - e0
}

// schedule makes the pod restart after restart and go after gone (zero:
// never).
func (p *fakePod) schedule(restart, gone time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.restartAfter, p.goneAt = restart, gone
}

// restarted is when the pod restarted, zero when it has not.
func (p *fakePod) restarted() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restartedAt
}

// done says the pod's restart and disappearance, when scheduled, happened.
func (p *fakePod) done() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return (p.restartAfter.IsZero() || p.scrapesAfterRestart > 0) && (p.goneAt.IsZero() || !p.wentAt.IsZero())
}

func (p *fakePod) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.wentAt.IsZero() {
		http.Error(w, "gone", http.StatusServiceUnavailable)
		return
	}
	total, errs := p.servedBy(now)
	if p.restartedAt.IsZero() {
		total, errs = total+p.history, errs+p.history*p.errorRatio
	} else {
		t0, e0 := p.servedBy(p.restartedAt)
		total, errs = total-t0, errs-e0
		p.scrapesAfterRestart++
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, line := range []struct {
		code  string
		value float64
	}{{"200", total - errs}, {"500", errs}} {
		fmt.Fprintf(w, "istio_requests_total{reporter=\"destination\",destination_app=\"shop\",destination_version=%q,response_code=%q} %.0f\n",
			p.tag, line.code, line.value)
	}
	// The restart and the disappearance follow this scrape, which holds
	// every request served until now.
	if !p.restartAfter.IsZero() && p.restartedAt.IsZero() && now.After(p.restartAfter) {
		p.restartedAt = now
	}
	if !p.goneAt.IsZero() && now.After(p.goneAt) {
		p.wentAt = now
	}
}

// truth is what pods of each tag served in the window (to−window, to].
func truth(pods []*fakePod, to time.Time, window time.Duration) (total, errs map[string]float64) {
	total, errs = map[string]float64{}, map[string]float64{}
	for _, p := range pods {
		t, e := p.served(to.Add(-window), to)
		total[p.tag] += t
		errs[p.tag] += e
	}
	return total, errs
}

// pooled adds a tag's counts up over the clusters.
func pooled(counts map[string]map[string]float64, tag string) float64 {
	var sum float64
	for _, v := range counts[tag] {
		sum += v
	}
	return sum
}

// within says the counts asked between before and after are within 2 %
// of what the pods served over the window ending then, and how far each
// is from it.
func within(pods []*fakePod, before, after time.Time, window time.Duration, total, errs map[string]map[string]float64) (string, error) {
	lowTotal, lowErrs := truth(pods, before, window)
	highTotal, highErrs := truth(pods, after, window)
	var problems, figures []string
	for _, tag := range []string{"v1", "v2"} {
		for _, c := range []struct {
			what          string
			got, low, hig float64
		}{
			{"requests", pooled(total, tag), min(lowTotal[tag], highTotal[tag]), max(lowTotal[tag], highTotal[tag])},
			{"errors", pooled(errs, tag), min(lowErrs[tag], highErrs[tag]), max(lowErrs[tag], highErrs[tag])},
		} {
			figure := fmt.Sprintf("%s %s: counted %.0f, served %.0f to %.0f (%+.1f %%)",
				tag, c.what, c.got, c.low, c.hig, 100*(c.got-c.low)/c.low)
			figures = append(figures, figure)
			if c.got < 0.98*c.low || c.got > 1.02*c.hig {
				problems = append(problems, figure)
			}
		}
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("not within 2 %% of what the pods served: %s", strings.Join(problems, "; "))
	}
	return strings.Join(figures, "; "), nil
}

// shopSLI is the SLI of app shop as the samples write it: sums of Istio's
// request counters by the tag's label, recorded by Picchu's rules with the
// tag copied to "tag".
var shopSLI = prometheus.SLI{
	TotalQuery:    `sum by (destination_version) (istio_requests_total{reporter="destination",destination_app="shop"})`,
	ErrorQuery:    `sum by (destination_version) (istio_requests_total{reporter="destination",destination_app="shop",response_code=~"5.."})`,
	TagKey:        "destination_version",
	RecordedTotal: "shop:availability:total", RecordedErrors: "shop:availability:errors",
}

// recordingRules are the rules Picchu writes for shopSLI (as
// plan/manifests.SLORules does).
func recordingRules(sli prometheus.SLI) []monitoringv1.RuleGroup {
	record := func(name, query string) monitoringv1.Rule {
		return monitoringv1.Rule{
			Record: name, Expr: intstr.FromString(fmt.Sprintf(`label_replace(%s, "tag", "$1", %q, "(.*)")`, query, sli.TagKey)),
			Labels: map[string]string{"namespace": inNamespace("shop")},
		}
	}
	return []monitoringv1.RuleGroup{{Name: "availability_record", Rules: []monitoringv1.Rule{
		record(sli.RecordedTotal, sli.TotalQuery), record(sli.RecordedErrors, sli.ErrorQuery),
	}}}
}

// TestCounts_PodsRestartScaleDownAndGo: a real Prometheus scrapes eight
// fake pods, six of the baseline v1 and two of the canary v2, every one at
// 100 requests a second with 5 % errors, after an hour's history. Within a
// 20 s window one v1 pod restarts (its counters back to 0), one is scaled
// down and one retired, and a v2 pod restarts. Counts must count what each
// build served in the window within 2 %; the same check against the query
// Counts asked before (the increase of the recorded sum) must fail, as a
// pod's series leaving the sum counts the other pods' history again.
func TestCounts_PodsRestartScaleDownAndGo(t *testing.T) {
	ctx := context.Background()
	const window = 20 * time.Second
	start := time.Now()
	var pods []*fakePod
	for i := range 8 {
		tag := "v1"
		if i >= 6 {
			tag = "v2"
		}
		p := newFakePod(tag, 100, 0.05, start)
		t.Cleanup(p.server.Close)
		pods = append(pods, p)
	}
	targets := make([]string, len(pods))
	for i, p := range pods {
		targets[i] = p.server.Listener.Addr().String()
	}
	prom, err := kit.StartPrometheus(ctx, kit.PrometheusConfig{ScrapeTargets: targets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Close() })
	if err := prom.SetRules(ctx, recordingRules(shopSLI)); err != nil {
		t.Fatal(err)
	}
	c, err := prometheus.New(prometheus.Config{Address: prom.URL(), TTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The window starts once Prometheus holds samples of every pod and
	// both recorded sums from before it.
	kit.Eventually(t, time.Minute, "every pod scraped and both builds recorded twice", func() error {
		return expectSeries(ctx, c, `count_over_time(up{job="traffic"}[1m]) >= 2`, 8, `count_over_time(shop:availability:total[1m]) >= 2`, 2)
	})
	from := time.Now()
	pods[3].schedule(from.Add(3*time.Second), time.Time{})  // v1 restarts
	pods[4].schedule(time.Time{}, from.Add(5*time.Second))  // v1 scaled down
	pods[5].schedule(time.Time{}, from.Add(10*time.Second)) // v1 retired
	pods[7].schedule(from.Add(8*time.Second), time.Time{})  // v2 restarts
	end := from.Add(window)
	kit.Eventually(t, time.Minute, "the pods restarted and went, and Prometheus scraped the others after the window", func() error {
		for i, p := range pods {
			if !p.done() {
				return fmt.Errorf("pod %d has not restarted or gone yet", i)
			}
		}
		return expectSeries(ctx, c, fmt.Sprintf(`timestamp(up{job="traffic"} == 1) > %d`, end.Unix()+1), 6, "", 0)
	})

	before := time.Now()
	counts, err := c.Counts(ctx, appIn("shop"), shopSLI, []string{"v1", "v2"}, window)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if restarted := pods[3].restarted(); after.Add(-window).After(restarted) {
		t.Fatalf("the window (%s to %s) missed the first restart at %s: the test ran too late to show anything", before.Add(-window), after, restarted)
	}
	if counts.Recorded != "" {
		t.Errorf("counted from the recorded series: %s", counts.Recorded)
	}
	if figures, err := within(pods, before, after, window, counts.Total, counts.Errors); err != nil {
		t.Errorf("Counts: %v", err)
	} else {
		t.Logf("Counts: %s", figures)
	}

	// Today's query, the increase of the recorded sums, fails the same
	// check: this test tells the honest counts from the old ones.
	before = time.Now()
	oldTotal, err := prometheus.RecordedCounts(ctx, c, appIn("shop"), shopSLI.RecordedTotal, []string{"v1", "v2"}, window)
	if err != nil {
		t.Fatal(err)
	}
	oldErrs, err := prometheus.RecordedCounts(ctx, c, appIn("shop"), shopSLI.RecordedErrors, []string{"v1", "v2"}, window)
	if err != nil {
		t.Fatal(err)
	}
	after = time.Now()
	if _, err := within(pods, before, after, window, oldTotal, oldErrs); err == nil {
		t.Errorf("the increase of the recorded sums counted within 2 %% too (%v, %v): the test does not show the defect", oldTotal, oldErrs)
	} else {
		t.Logf("the increase of the recorded sums, as before: %v", err)
	}

	t.Run("a query it cannot count per series: the recorded series, saying why", func(t *testing.T) {
		sli := shopSLI
		sli.TotalQuery = `sum by (destination_version) (rate(istio_requests_total{destination_app="shop"}[1m]))`
		got, err := c.Counts(ctx, appIn("shop"), sli, []string{"v1", "v2"}, window)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got.Recorded, "totalQuery") || !strings.Contains(got.Recorded, "rate") || pooled(got.Total, "v1") == 0 {
			t.Errorf("Counts of a rate = %+v, want the recorded series' counts, saying totalQuery's rate cannot be counted", got)
		}
	})
	t.Run("raw series not at the query address: the recorded series, saying why", func(t *testing.T) {
		sli := shopSLI
		sli.TotalQuery = `sum by (destination_version) (only_in_the_clusters_total)`
		got, err := c.Counts(ctx, appIn("shop"), sli, []string{"v1", "v2"}, window)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got.Recorded, "no raw series of totalQuery at "+prom.URL()) || pooled(got.Total, "v1") == 0 {
			t.Errorf("Counts without raw series = %+v, want the recorded series' counts, saying the raw ones are missing", got)
		}
	})
}

// expectSeries checks that query returns want series, and query2 (when
// not empty) want2.
func expectSeries(ctx context.Context, c *prometheus.Client, query string, want int, query2 string, want2 int) error {
	for _, q := range []struct {
		query string
		want  int
	}{{query, want}, {query2, want2}} {
		if q.query == "" {
			continue
		}
		got, err := c.Series(ctx, q.query)
		if err != nil {
			return err
		}
		if len(got) != q.want {
			return fmt.Errorf("%s: %d series, want %d", q.query, len(got), q.want)
		}
	}
	return nil
}

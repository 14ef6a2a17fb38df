package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// metrics are the operator's metrics at one moment, by family name.
type metrics map[string]*dto.MetricFamily

// scrape reads the metrics endpoint at url.
func scrape(ctx context.Context, url string) (metrics, error) {
	return scrapeWith(ctx, http.DefaultClient, url)
}

// scrapeAPIServer reads the metrics of the API server cfg names.
func scrapeAPIServer(ctx context.Context, cfg *rest.Config) (metrics, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", cfg.Host, err)
	}
	return scrapeWith(ctx, hc, strings.TrimSuffix(cfg.Host, "/")+"/metrics")
}

// writesByResource are an API server's writes by verb and resource, from
// its own counters (every client's, the operator's and the benchmark's).
func (ms metrics) writesByResource() map[string]float64 {
	return ms.byResource(func(verb string) bool {
		switch verb {
		case "GET", "LIST", "WATCH", "CONNECT":
			return false
		}
		return true
	})
}

// getsByResource are an API server's GETs of single objects by resource,
// from its own counters: what clients ask of it beside their caches' lists
// and watches.
func (ms metrics) getsByResource() map[string]float64 {
	return ms.byResource(func(verb string) bool { return verb == "GET" })
}

// byResource are the counts of an API server's requests whose verb counts,
// by verb and resource.
func (ms metrics) byResource(counts func(verb string) bool) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms["apiserver_request_total"].GetMetric() {
		l := labels(m)
		if !counts(l["verb"]) {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

// scrapeWith reads the metrics endpoint at url with hc.
func scrapeWith(ctx context.Context, hc *http.Client, url string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	return families, nil
}

// labels are a series' labels.
func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// sum adds up the counters (or gauges) of family whose labels pass keep.
func (ms metrics) sum(family string, keep func(map[string]string) bool) float64 {
	total := 0.0
	for _, m := range ms[family].GetMetric() {
		if keep != nil && !keep(labels(m)) {
			continue
		}
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return total
}

// histogram is the buckets of a histogram: cumulative counts by upper bound.
type histogram struct {
	bounds []float64
	counts []float64
	count  float64
}

// histogram merges the series of family whose labels pass keep.
func (ms metrics) histogram(family string, keep func(map[string]string) bool) histogram {
	byBound := map[float64]float64{}
	var h histogram
	for _, m := range ms[family].GetMetric() {
		if keep != nil && !keep(labels(m)) {
			continue
		}
		h.count += float64(m.GetHistogram().GetSampleCount())
		for _, b := range m.GetHistogram().GetBucket() {
			byBound[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// minus is h less an earlier state of it, before.
func (h histogram) minus(before histogram) histogram {
	out := histogram{bounds: h.bounds, count: h.count - before.count}
	for i, b := range h.bounds {
		c := h.counts[i]
		for j, bb := range before.bounds {
			if bb == b {
				c -= before.counts[j]
			}
		}
		out.counts = append(out.counts, c)
	}
	return out
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile does:
// linearly within the bucket it falls in. NaN when there is no sample; the
// highest finite bound when it falls in the +Inf bucket.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, b := range h.bounds {
		if h.counts[i] >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			in := h.counts[i] - below
			if in == 0 {
				return b
			}
			return lower + (b-lower)*(rank-below)/in
		}
		lower, below = b, h.counts[i]
	}
	return lower
}

// requests are the operator's requests in a span, by cluster host: reads,
// writes (every method but GET), from client-go's rest_client_requests_total.
type requests struct{ reads, writes, writeMethods map[string]float64 }

func (ms metrics) requests() requests {
	r := requests{reads: map[string]float64{}, writes: map[string]float64{}, writeMethods: map[string]float64{}}
	for _, m := range ms["rest_client_requests_total"].GetMetric() {
		l := labels(m)
		if strings.EqualFold(l["method"], http.MethodGet) {
			r.reads[l["host"]] += m.GetCounter().GetValue()
		} else {
			r.writes[l["host"]] += m.GetCounter().GetValue()
			r.writeMethods[l["method"]] += m.GetCounter().GetValue()
		}
	}
	return r
}

func (r requests) minus(before requests) requests {
	out := requests{reads: map[string]float64{}, writes: map[string]float64{}, writeMethods: map[string]float64{}}
	for m, n := range r.writeMethods {
		out.writeMethods[m] = n - before.writeMethods[m]
	}
	for h, n := range r.reads {
		out.reads[h] = n - before.reads[h]
	}
	for h, n := range r.writes {
		out.writes[h] = n - before.writes[h]
	}
	return out
}

func total(byHost map[string]float64) float64 {
	t := 0.0
	for _, n := range byHost {
		t += n
	}
	return t
}

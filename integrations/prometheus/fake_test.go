package prometheus_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/common/model"
)

// fakePrometheus implements Prometheus' instant query API (GET or POST
// /api/v1/query) minimally: it checks each query is one the test expects,
// counts the requests per query, and answers with respond.
type fakePrometheus struct {
	t      testing.TB
	server *httptest.Server
	// expected says whether a query is one the test sends.
	expected func(query string) bool
	// respond answers a counted query (an empty vector when nil).
	respond func(w http.ResponseWriter, query string)

	mu     sync.Mutex
	counts map[string]int
}

// newFakePrometheus starts a fake Prometheus, closed when the test ends.
// Set expected and respond before the first query.
func newFakePrometheus(t testing.TB, expected func(query string) bool) *fakePrometheus {
	f := &fakePrometheus{t: t, expected: expected, counts: map[string]int{}}
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.server.Close)
	return f
}

func (f *fakePrometheus) URL() string { return f.server.URL }

// count returns how many requests query has reached the server with.
func (f *fakePrometheus) count(query string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[query]
}

// total returns how many queries reached the server.
func (f *fakePrometheus) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.counts {
		n += c
	}
	return n
}

func (f *fakePrometheus) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" || (r.Method != http.MethodGet && r.Method != http.MethodPost) {
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		f.t.Errorf("parsing the form of %s %s: %v", r.Method, r.URL, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	query := r.Form.Get("query")
	if !f.expected(query) {
		f.t.Errorf("unexpected query %q", query)
		writeJSON(w, http.StatusBadRequest, map[string]any{"status": "error", "errorType": "bad_data", "error": "unexpected query"})
		return
	}
	f.mu.Lock()
	f.counts[query]++
	f.mu.Unlock()
	if f.respond != nil {
		f.respond(w, query)
		return
	}
	writeVector(w, model.Vector{})
}

// writeVector answers a query with vector.
func writeVector(w http.ResponseWriter, vector model.Vector) {
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "success",
		"data":   map[string]any{"resultType": "vector", "result": vector},
	})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	out, err := json.Marshal(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// alert is an ALERTS sample with labels given as name, value pairs, in
// the namespace of its app (inNamespace) unless they name one.
func alert(pairs ...string) *model.Sample {
	metric := model.Metric{model.MetricNameLabel: "ALERTS", "alertstate": "firing"}
	for i := 0; i+1 < len(pairs); i += 2 {
		metric[model.LabelName(pairs[i])] = model.LabelValue(pairs[i+1])
	}
	if _, ok := metric["namespace"]; !ok && metric["app"] != "" {
		metric["namespace"] = model.LabelValue(inNamespace(string(metric["app"])))
	}
	return &model.Sample{Metric: metric, Value: 1, Timestamp: model.Time(1_700_000_000_000)}
}

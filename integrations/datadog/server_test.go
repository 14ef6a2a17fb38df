package datadog

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/medium/picchu/integrations/scope"
)

const (
	testAPIKey = "test-api-key-0123456789"
	testAppKey = "test-app-key-9876543210"
)

// call is a valid request the fake Datadog received.
type call struct {
	tags string // monitor_tags
	page int
}

// fakeDatadog is a Datadog API that validates every request and answers the
// valid ones with respond. An invalid request is answered 400 and fails the
// test when it ends.
type fakeDatadog struct {
	*httptest.Server
	respond func(w http.ResponseWriter, r *http.Request, c call)

	mu       sync.Mutex
	calls    []call
	problems []string
}

// monitorTagsRE is the monitor_tags the client may send.
var monitorTagsRE = regexp.MustCompile(`^app:[^,]+,(slo|canary):true$`)

// newFake starts a fake Datadog, closed and checked when the test ends.
func newFake(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, c call)) *fakeDatadog {
	t.Helper()
	f := &fakeDatadog{respond: respond}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.Close() // waits for the handlers, so no problem comes later
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.problems {
			t.Errorf("fake Datadog: %s", p)
		}
	})
	return f
}

func (f *fakeDatadog) serve(w http.ResponseWriter, r *http.Request) {
	c, problem := validate(r)
	f.mu.Lock()
	if problem != "" {
		f.problems = append(f.problems, fmt.Sprintf("%s %s: %s", r.Method, r.URL, problem))
	} else {
		f.calls = append(f.calls, c)
	}
	f.mu.Unlock()
	if problem != "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []string{problem}})
		return
	}
	f.respond(w, r, c)
}

// validate checks a request as Datadog would, and more strictly.
func validate(r *http.Request) (call, string) {
	if r.Method != http.MethodGet {
		return call{}, "method is not GET"
	}
	if r.URL.Path != "/api/v1/monitor" {
		return call{}, "path is not /api/v1/monitor"
	}
	if got := r.Header.Get("DD-API-KEY"); got != testAPIKey {
		return call{}, "wrong or missing DD-API-KEY"
	}
	if got := r.Header.Get("DD-APPLICATION-KEY"); got != testAppKey {
		return call{}, "wrong or missing DD-APPLICATION-KEY"
	}
	q := r.URL.Query()
	var names []string
	for name, values := range q {
		if len(values) != 1 {
			return call{}, fmt.Sprintf("query parameter %q repeated", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if fmt.Sprint(names) != "[group_states monitor_tags page page_size]" {
		return call{}, fmt.Sprintf("query parameters %v, want group_states, monitor_tags, page, page_size", names)
	}
	if q.Get("group_states") != "all" {
		return call{}, "group_states is not all"
	}
	if q.Get("page_size") != "100" {
		return call{}, "page_size is not 100"
	}
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 0 {
		return call{}, "page is not a natural number"
	}
	tags := q.Get("monitor_tags")
	if !monitorTagsRE.MatchString(tags) {
		return call{}, fmt.Sprintf("monitor_tags %q is not app:<app>,slo:true or app:<app>,canary:true", tags)
	}
	return call{tags: tags, page: page}, ""
}

// count returns how many valid requests the fake received.
func (f *fakeDatadog) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// countFor returns how many valid requests asked for the monitor tags.
func (f *fakeDatadog) countFor(tags string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.tags == tags {
			n++
		}
	}
	return n
}

// received returns the valid requests, in order.
func (f *fakeDatadog) received() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// client returns a client of the fake, with cfg's other settings.
func (f *fakeDatadog) client(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.APIKey, cfg.AppKey, cfg.URL = testAPIKey, testAppKey, f.URL
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// answer responds with the monitors, whatever the request.
func answer(ms ...map[string]any) func(http.ResponseWriter, *http.Request, call) {
	return func(w http.ResponseWriter, _ *http.Request, _ call) {
		writeJSON(w, http.StatusOK, ms)
	}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// groupState is the state of one monitor group: its name (comma-separated
// tags) and status.
type groupState struct {
	name, status string
}

// apiMonitor builds a monitor as the v1 API lists it with group_states=all.
func apiMonitor(id int64, name string, tags []string, groups ...groupState) map[string]any {
	const triggered = int64(1717171717)
	states := map[string]any{}
	overall := "OK"
	rank := map[string]int{"OK": 0, "Ignored": 0, "Skipped": 0, "Unknown": 1, "Warn": 2, "No Data": 3, "Alert": 4}
	for _, g := range groups {
		s := map[string]any{
			"name":              g.name,
			"status":            g.status,
			"last_triggered_ts": int64(0),
			"last_notified_ts":  int64(0),
			"last_resolved_ts":  triggered - 600,
			"last_nodata_ts":    int64(0),
		}
		switch g.status {
		case "Alert", "Warn":
			s["last_triggered_ts"], s["last_notified_ts"] = triggered, triggered
		case "No Data":
			s["last_nodata_ts"] = triggered
		}
		states[g.name] = s
		if rank[g.status] > rank[overall] {
			overall = g.status
		}
	}
	created := time.Date(2024, 5, 31, 12, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000000-07:00")
	return map[string]any{
		"id":      id,
		"org_id":  321,
		"name":    name,
		"type":    "query alert",
		"query":   "sum(last_5m):sum:trace.http.request.errors{app:picchu-test} by {tag,env}.as_count() > 10",
		"message": "Errors are high for {{tag.name}} @slack-picchu",
		"tags":    tags,
		"options": map[string]any{
			"notify_no_data":      true,
			"no_data_timeframe":   10,
			"thresholds":          map[string]any{"critical": 10.0},
			"include_tags":        true,
			"new_group_delay":     60,
			"notify_audit":        false,
			"require_full_window": false,
			"silenced":            map[string]any{},
		},
		"multi":                  true,
		"created":                created,
		"modified":               created,
		"deleted":                nil,
		"priority":               nil,
		"restricted_roles":       nil,
		"creator":                map[string]any{"email": "sre@example.com", "handle": "sre@example.com", "name": "SRE"},
		"overall_state":          overall,
		"overall_state_modified": created,
		"state":                  map[string]any{"groups": states},
	}
}

// api is the app most tests ask about, in its namespace.
var api = scope.App{Name: "api", Namespace: "api-production"}

// sloTags are the tags of an SLO monitor of the app.
func sloTags(app string) []string { return []string{"app:" + app, "slo:true", "team:delivery"} }

// eventually polls cond until it holds, failing the test after a while.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

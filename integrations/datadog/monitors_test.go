package datadog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medium/picchu/integrations/scope"
)

func TestFiringAlertsStatuses(t *testing.T) {
	tests := []struct {
		name    string
		groups  []groupState
		tag     string
		want    []string
		noData  bool // the error wraps ErrNoData
		wantErr string
	}{
		{name: "alert", groups: []groupState{{"tag:v2", "Alert"}}, tag: "v2", want: []string{"errors"}},
		{name: "alert among group tags", groups: []groupState{{"tag:v2,env:prod", "Alert"}}, tag: "v2", want: []string{"errors"}},
		{name: "alert, tag last", groups: []groupState{{"env:prod,tag:v2", "Alert"}}, tag: "v2", want: []string{"errors"}},
		{name: "alert, tag in other case", groups: []groupState{{"tag:V2,env:prod", "Alert"}}, tag: "v2", want: []string{"errors"}},
		{name: "alert of a longer tag", groups: []groupState{{"tag:v22,env:prod", "Alert"}}, tag: "v2", want: []string{}},
		{name: "alert of a shorter tag", groups: []groupState{{"tag:v2", "Alert"}}, tag: "v22", want: []string{}},
		{name: "alert of another key", groups: []groupState{{"mytag:v2", "Alert"}}, tag: "v2", want: []string{}},
		{name: "alert of a value only", groups: []groupState{{"v2", "Alert"}}, tag: "v2", want: []string{}},
		{name: "ok", groups: []groupState{{"tag:v2,env:prod", "OK"}}, tag: "v2", want: []string{}},
		{name: "warn", groups: []groupState{{"tag:v2,env:prod", "Warn"}}, tag: "v2", want: []string{}},
		{name: "ignored", groups: []groupState{{"tag:v2", "Ignored"}}, tag: "v2", want: []string{}},
		{name: "skipped", groups: []groupState{{"tag:v2", "Skipped"}}, tag: "v2", want: []string{}},
		{name: "unknown", groups: []groupState{{"tag:v2", "Unknown"}}, tag: "v2", want: []string{}},
		{name: "no data", groups: []groupState{{"tag:v2,env:prod", "No Data"}}, tag: "v2", noData: true},
		{name: "no data of another tag", groups: []groupState{{"tag:v22,env:prod", "No Data"}}, tag: "v2", want: []string{}},
		{name: "no data beside an alert: the alert counts", groups: []groupState{{"tag:v2,env:prod", "Alert"}, {"tag:v2,env:staging", "No Data"}}, tag: "v2", want: []string{"errors"}},
		{name: "unrecognised status beside an alert: the alert counts", groups: []groupState{{"tag:v2,env:prod", "Paused"}, {"tag:v2,env:staging", "Alert"}}, tag: "v2", want: []string{"errors"}},
		{name: "alert of another build only", groups: []groupState{{"tag:v1,env:prod", "Alert"}, {"tag:v2,env:prod", "OK"}}, tag: "v2", want: []string{}},
		{name: "alert in one of two groups", groups: []groupState{{"tag:v2,env:prod", "OK"}, {"tag:v2,env:staging", "Alert"}}, tag: "v2", want: []string{"errors"}},
		{name: "no groups", groups: nil, tag: "v2", want: []string{}},
		{name: "unrecognised status", groups: []groupState{{"tag:v2", "Paused"}}, tag: "v2", wantErr: `unrecognised status "Paused"`},
		{name: "unrecognised status of another tag", groups: []groupState{{"tag:v1", "Paused"}}, tag: "v2", want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, answer(apiMonitor(1, "errors", sloTags("api"), tt.groups...)))
			c := f.client(t, Config{})
			got, err := c.FiringAlerts(context.Background(), api, tt.tag, false)
			switch {
			case tt.noData:
				if !errors.Is(err, ErrNoData) {
					t.Fatalf("FiringAlerts = %q, %v; want an error wrapping ErrNoData", got, err)
				}
				if !strings.Contains(err.Error(), `"errors"`) {
					t.Errorf("error %q does not name the monitor", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ErrNoData) {
					t.Fatalf("FiringAlerts = %q, %v; want an error with %q, not ErrNoData", got, err, tt.wantErr)
				}
			default:
				if err != nil {
					t.Fatalf("FiringAlerts: %v", err)
				}
				if got == nil || !reflect.DeepEqual(got, tt.want) {
					t.Errorf("FiringAlerts = %#v, want %#v", got, tt.want)
				}
			}
		})
	}
}

func TestFiringAlertsSortsAndDeduplicates(t *testing.T) {
	f := newFake(t, answer(
		apiMonitor(1, "latency", sloTags("api"), groupState{"tag:v2,env:prod", "Alert"}, groupState{"tag:v2,env:staging", "Alert"}),
		apiMonitor(2, "errors", sloTags("api"), groupState{"tag:v2,env:prod", "Alert"}),
		apiMonitor(3, "errors", sloTags("api"), groupState{"tag:v2,env:staging", "Alert"}),
		apiMonitor(4, "availability", sloTags("api"), groupState{"tag:v2,env:prod", "OK"}),
		apiMonitor(5, "ungrouped", sloTags("api")),
		apiMonitor(6, "saturation", sloTags("api"), groupState{"tag:v1,env:prod", "Alert"}),
	))
	c := f.client(t, Config{})
	got, err := c.FiringAlerts(context.Background(), api, "v2", false)
	if err != nil {
		t.Fatalf("FiringAlerts: %v", err)
	}
	if want := []string{"errors", "latency"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FiringAlerts(v2) = %q, want %q", got, want)
	}
	got, err = c.FiringAlerts(context.Background(), api, "v1", false)
	if err != nil {
		t.Fatalf("FiringAlerts: %v", err)
	}
	if want := []string{"saturation"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FiringAlerts(v1) = %q, want %q", got, want)
	}
}

// TestFiringAlerts_AnotherNamespacesMonitorsDoNotCount: of the monitors
// tagged app:api, one tagged with another team's namespace neither fails
// the build nor holds it for want of a group; one tagged with the app's
// namespace, or with none (made before namespaces counted), does.
func TestFiringAlerts_AnotherNamespacesMonitorsDoNotCount(t *testing.T) {
	tagged := func(ns string) []string { return append(sloTags("api"), "namespace:"+ns) }
	f := newFake(t, answer(
		apiMonitor(1, "ours", tagged("api-production"), groupState{"tag:v2", "Alert"}),
		apiMonitor(2, "untagged", sloTags("api"), groupState{"tag:v2", "Alert"}),
		apiMonitor(3, "theirs", tagged("api-team-b"), groupState{"tag:v2", "Alert"}),
		apiMonitor(4, "theirs-other-build", tagged("api-team-b"), groupState{"tag:v9", "OK"}),
		apiMonitor(5, "both", append(tagged("api-team-b"), "namespace:API-Production"), groupState{"tag:v2", "Alert"}),
	))
	c := f.client(t, Config{})
	got, err := c.FiringAlerts(context.Background(), api, "v2", false)
	if want := []string{"both", "ours", "untagged"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("FiringAlerts(api-production) = %q, %v; want %q", got, err, want)
	}
	teamB := scope.App{Name: "api", Namespace: "api-team-b"}
	got, err = c.FiringAlerts(context.Background(), teamB, "v2", false)
	if want := []string{"both", "theirs", "untagged"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("FiringAlerts(api-team-b) = %q, %v; want %q", got, err, want)
	}
	ungrouped, err := c.Ungrouped(context.Background(), api, "v2", false)
	if err != nil || len(ungrouped) != 0 {
		t.Errorf("Ungrouped(api-production) = %q, %v; want none: theirs-other-build is another team's", ungrouped, err)
	}
	if n := f.count(); n != 1 {
		t.Errorf("%d requests, want 1: both namespaces share the app's list", n)
	}
}

func TestFiringAlertsTagKey(t *testing.T) {
	f := newFake(t, answer(
		apiMonitor(1, "by version", sloTags("api"), groupState{"version:v2,env:prod", "Alert"}),
		apiMonitor(2, "by tag", sloTags("api"), groupState{"tag:v2,env:prod", "Alert"}),
	))
	c := f.client(t, Config{TagKey: "version"})
	got, err := c.FiringAlerts(context.Background(), api, "v2", false)
	if err != nil {
		t.Fatalf("FiringAlerts: %v", err)
	}
	if want := []string{"by version"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FiringAlerts = %q, want %q", got, want)
	}
}

func TestFiringAlertsUndecodableMonitor(t *testing.T) {
	// A field of an unforeseen type makes the client keep the monitor as
	// raw JSON; it must still count.
	m := apiMonitor(1, "errors", sloTags("api"), groupState{"tag:v2,env:prod", "Alert"})
	m["priority"] = "high"
	odd := apiMonitor(2, "odd type", sloTags("api"), groupState{"tag:v2,env:prod", "Alert"})
	odd["type"] = "a monitor type of the future"
	f := newFake(t, answer(m, odd))
	c := f.client(t, Config{})
	got, err := c.FiringAlerts(context.Background(), api, "v2", false)
	if err != nil {
		t.Fatalf("FiringAlerts: %v", err)
	}
	if want := []string{"errors", "odd type"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FiringAlerts = %q, want %q", got, want)
	}
}

func TestFiringAlertsBadBody(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ call) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"not": "a list"`))
	})
	c := f.client(t, Config{})
	if got, err := c.FiringAlerts(context.Background(), api, "v2", false); err == nil {
		t.Fatalf("FiringAlerts = %q, want an error", got)
	}
}

func TestFiringAlertsMonitorTags(t *testing.T) {
	f := newFake(t, answer())
	c := f.client(t, Config{})
	for _, canaryOnly := range []bool{false, true} {
		if _, err := c.FiringAlerts(context.Background(), api, "v2", canaryOnly); err != nil {
			t.Fatalf("FiringAlerts(canaryOnly=%v): %v", canaryOnly, err)
		}
	}
	want := []call{{tags: "app:api,slo:true"}, {tags: "app:api,canary:true"}}
	if got := f.received(); !reflect.DeepEqual(got, want) {
		t.Errorf("requests %+v, want %+v", got, want)
	}
}

func TestFiringAlertsInvalidArguments(t *testing.T) {
	f := newFake(t, answer())
	c := f.client(t, Config{})
	for _, args := range [][2]string{{"", "v2"}, {"api", ""}, {"api,slo:false", "v2"}, {"api", "v2,env:prod"}} {
		if _, err := c.FiringAlerts(context.Background(), scope.App{Name: args[0], Namespace: "api-production"}, args[1], false); err == nil {
			t.Errorf("FiringAlerts(%q, %q) succeeded, want an error", args[0], args[1])
		}
	}
	if _, err := c.FiringAlerts(context.Background(), scope.App{Name: "api"}, "v2", false); err == nil {
		t.Error("FiringAlerts of an app without a namespace succeeded, want an error")
	}
	if n := f.count(); n != 0 {
		t.Errorf("server saw %d requests, want 0", n)
	}
}

// pages answers n monitors, 100 a page; the last one alerts for v2.
func pages(n int) func(http.ResponseWriter, *http.Request, call) {
	return func(w http.ResponseWriter, _ *http.Request, c call) {
		ms := []map[string]any{}
		for i := c.page * pageSize; i < n && i < (c.page+1)*pageSize; i++ {
			status := "OK"
			if i == n-1 {
				status = "Alert"
			}
			ms = append(ms, apiMonitor(int64(i+1), fmt.Sprintf("monitor %03d", i), sloTags("api"), groupState{"tag:v2,env:prod", status}))
		}
		writeJSON(w, http.StatusOK, ms)
	}
}

func TestFiringAlertsPaging(t *testing.T) {
	tests := []struct {
		monitors, pages int
	}{
		{monitors: 1, pages: 1},
		{monitors: 99, pages: 1},
		{monitors: 100, pages: 2},
		{monitors: 250, pages: 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.monitors), func(t *testing.T) {
			f := newFake(t, pages(tt.monitors))
			c := f.client(t, Config{})
			got, err := c.FiringAlerts(context.Background(), api, "v2", false)
			if err != nil {
				t.Fatalf("FiringAlerts: %v", err)
			}
			if want := []string{fmt.Sprintf("monitor %03d", tt.monitors-1)}; !reflect.DeepEqual(got, want) {
				t.Errorf("FiringAlerts = %q, want %q", got, want)
			}
			var want []call
			for p := 0; p < tt.pages; p++ {
				want = append(want, call{tags: "app:api,slo:true", page: p})
			}
			if got := f.received(); !reflect.DeepEqual(got, want) {
				t.Errorf("requests %+v, want %+v", got, want)
			}
		})
	}
}

func TestFiringAlertsTooManyPages(t *testing.T) {
	f := newFake(t, pages(1<<20))
	c := f.client(t, Config{})
	c.maxPages = 3 // 50 pages of realistic monitors take seconds under -race
	got, err := c.FiringAlerts(context.Background(), api, "v2", false)
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("FiringAlerts = %q, %v; want an error about too many pages", got, err)
	}
	if n := f.count(); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
	if n := c.CacheLen(); n != 0 {
		t.Errorf("CacheLen = %d after a failure, want 0", n)
	}
}

func TestFiringAlertsHTTPErrors(t *testing.T) {
	tests := []struct {
		status int
		body   any
		want   []string
	}{
		{status: http.StatusInternalServerError, body: map[string]any{"errors": []string{"Internal Server Error"}}, want: []string{"HTTP status 500"}},
		{status: http.StatusForbidden, body: map[string]any{"errors": []string{"Forbidden"}}, want: []string{"HTTP status 403", "Forbidden"}},
		{status: http.StatusTooManyRequests, body: map[string]any{"errors": []string{"Rate limit exceeded"}}, want: []string{"HTTP status 429", "Rate limit exceeded"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ call) {
				writeJSON(w, tt.status, tt.body)
			})
			c := f.client(t, Config{})
			for i := 1; i <= 2; i++ {
				got, err := c.FiringAlerts(context.Background(), api, "v2", true)
				if err == nil {
					t.Fatalf("FiringAlerts = %q, want an error", got)
				}
				if errors.Is(err, ErrNoData) {
					t.Errorf("error %q wraps ErrNoData", err)
				}
				msg := err.Error()
				want := append([]string{"datadog: listing monitors tagged app:api,canary:true at " + f.Listener.Addr().String() + ": "}, tt.want...)
				for _, w := range want {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not hold %q", msg, w)
					}
				}
				if strings.Contains(msg, testAPIKey) || strings.Contains(msg, testAppKey) {
					t.Errorf("error %q holds a key", msg)
				}
				// Failures are not cached: every call asks again.
				if n := f.count(); n != i {
					t.Errorf("server saw %d requests after %d calls, want %d", n, i, i)
				}
			}
		})
	}
}

// blocking answers once released, or never if the request is given up.
func blocking(release <-chan struct{}, then func(http.ResponseWriter, *http.Request, call)) func(http.ResponseWriter, *http.Request, call) {
	return func(w http.ResponseWriter, r *http.Request, c call) {
		select {
		case <-release:
			then(w, r, c)
		case <-r.Context().Done():
		}
	}
}

func TestFiringAlertsDeadline(t *testing.T) {
	f := newFake(t, blocking(nil, nil))
	c := f.client(t, Config{Timeout: 200 * time.Millisecond})
	got, err := c.FiringAlerts(context.Background(), api, "v2", false)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FiringAlerts = %q, %v; want an error wrapping context.DeadlineExceeded", got, err)
	}
	if errors.Is(err, ErrNoData) {
		t.Errorf("error %q wraps ErrNoData", err)
	}
	if !strings.Contains(err.Error(), "datadog: listing monitors tagged app:api,slo:true at ") {
		t.Errorf("error %q does not say what failed where", err)
	}
}

func TestFiringAlertsCallerGivesUp(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, blocking(release, answer(apiMonitor(1, "errors", sloTags("api"), groupState{"tag:v2", "Alert"}))))
	c := f.client(t, Config{})

	// The caller that gives up is the one whose call sent the request.
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := c.FiringAlerts(ctx, api, "v2", false)
		left <- err
	}()
	eventually(t, "the request to reach the server", func() bool { return f.count() == 1 })

	type result struct {
		alerts []string
		err    error
	}
	stayed := make(chan result, 1)
	go func() {
		alerts, err := c.FiringAlerts(context.Background(), api, "v2", false)
		stayed <- result{alerts, err}
	}()
	eventually(t, "both callers to wait", func() bool { return c.cache.Waiting() == 2 })
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Errorf("the caller that gave up got %v, want context.Canceled", err)
	}
	close(release)
	r := <-stayed
	if r.err != nil || !reflect.DeepEqual(r.alerts, []string{"errors"}) {
		t.Errorf("the caller that stayed got %q, %v; want [errors]", r.alerts, r.err)
	}
	if n := f.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

func TestFiringAlertsCallerGone(t *testing.T) {
	f := newFake(t, answer())
	c := f.client(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.FiringAlerts(ctx, api, "v2", false); !errors.Is(err, context.Canceled) {
		t.Errorf("FiringAlerts error %v, want one wrapping context.Canceled", err)
	}
	if n := f.count(); n != 0 {
		t.Errorf("server saw %d requests for a caller already gone, want 0", n)
	}
}

func TestFiringAlertsCache(t *testing.T) {
	f := newFake(t, answer(apiMonitor(1, "errors", sloTags("api"), groupState{"tag:v2", "Alert"}, groupState{"tag:v1", "OK"})))
	c := f.client(t, Config{TTL: time.Hour})
	ask := func(tag string, canaryOnly bool, want []string) {
		t.Helper()
		got, err := c.FiringAlerts(context.Background(), api, tag, canaryOnly)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("FiringAlerts(%s, canaryOnly=%v) = %q, %v; want %q", tag, canaryOnly, got, err, want)
		}
	}
	ask("v2", false, []string{"errors"})
	ask("v2", false, []string{"errors"})
	ask("v1", false, []string{}) // another tag of the app: same query
	ask("v3", false, []string{})
	if n := f.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
	ask("v2", true, []string{"errors"}) // canary monitors: another query
	ask("v1", true, []string{})
	if n := f.countFor("app:api,canary:true"); n != 1 {
		t.Errorf("server saw %d canary requests, want 1", n)
	}
	if n := c.CacheLen(); n != 2 {
		t.Errorf("CacheLen = %d, want 2", n)
	}
}

func TestFiringAlertsCacheCopies(t *testing.T) {
	f := newFake(t, answer(apiMonitor(1, "errors", sloTags("api"), groupState{"tag:v2", "Alert"})))
	c := f.client(t, Config{TTL: time.Hour})
	got, err := c.FiringAlerts(context.Background(), api, "v2", false)
	if err != nil {
		t.Fatalf("FiringAlerts: %v", err)
	}
	got[0] = "changed by the caller"
	got, err = c.FiringAlerts(context.Background(), api, "v2", false)
	if err != nil || !reflect.DeepEqual(got, []string{"errors"}) {
		t.Errorf("FiringAlerts = %q, %v; want [errors]", got, err)
	}
}

func TestFiringAlertsCacheExpires(t *testing.T) {
	f := newFake(t, answer())
	c := f.client(t, Config{TTL: 20 * time.Millisecond})
	if _, err := c.FiringAlerts(context.Background(), api, "v2", false); err != nil {
		t.Fatalf("FiringAlerts: %v", err)
	}
	eventually(t, "the cached answer to expire", func() bool {
		if _, err := c.FiringAlerts(context.Background(), api, "v2", false); err != nil {
			t.Fatalf("FiringAlerts: %v", err)
		}
		return f.count() >= 2
	})
}

func TestFiringAlertsCacheBounded(t *testing.T) {
	const apps, size = 3000, 50
	f := newFake(t, answer())
	c := f.client(t, Config{CacheSize: size, TTL: time.Hour})
	for i := 0; i < apps; i++ {
		if _, err := c.FiringAlerts(context.Background(), scope.App{Name: fmt.Sprintf("app-%d", i), Namespace: "n"}, "v2", false); err != nil {
			t.Fatalf("FiringAlerts: %v", err)
		}
		if n := c.CacheLen(); n > size {
			t.Fatalf("CacheLen = %d after %d apps, want at most %d", n, i+1, size)
		}
	}
	if n := f.count(); n != apps {
		t.Errorf("server saw %d requests, want %d", n, apps)
	}
	// The first app was evicted long ago: it is asked again.
	if _, err := c.FiringAlerts(context.Background(), scope.App{Name: "app-0", Namespace: "n"}, "v2", false); err != nil {
		t.Fatalf("FiringAlerts: %v", err)
	}
	if n := f.countFor("app:app-0,slo:true"); n != 2 {
		t.Errorf("server saw %d requests for app-0, want 2", n)
	}
	// The last app is still cached.
	if _, err := c.FiringAlerts(context.Background(), scope.App{Name: fmt.Sprintf("app-%d", apps-1), Namespace: "n"}, "v2", false); err != nil {
		t.Fatalf("FiringAlerts: %v", err)
	}
	if n := f.countFor(fmt.Sprintf("app:app-%d,slo:true", apps-1)); n != 1 {
		t.Errorf("server saw %d requests for the last app, want 1", n)
	}
}

func TestFiringAlertsSingleflight(t *testing.T) {
	const callers = 20
	release := make(chan struct{})
	f := newFake(t, blocking(release, answer(apiMonitor(1, "errors", sloTags("api"), groupState{"tag:v2", "Alert"}, groupState{"tag:v1", "OK"}))))
	c := f.client(t, Config{TTL: time.Hour})

	type result struct {
		tag    string
		alerts []string
		err    error
	}
	results := make(chan result, callers)
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		tag := []string{"v1", "v2"}[i%2] // tags of one app share the request
		wg.Add(1)
		go func() {
			defer wg.Done()
			alerts, err := c.FiringAlerts(context.Background(), api, tag, false)
			results <- result{tag, alerts, err}
		}()
	}
	eventually(t, "every caller to wait on the request", func() bool { return c.cache.Waiting() == callers })
	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		want := map[string][]string{"v1": {}, "v2": {"errors"}}[r.tag]
		if r.err != nil || !reflect.DeepEqual(r.alerts, want) {
			t.Errorf("FiringAlerts(%s) = %q, %v; want %q", r.tag, r.alerts, r.err, want)
		}
	}
	if n := f.count(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// TestUngrouped: the grouped monitors with no group for the build counted
// nothing of it; an ungrouped monitor is not counted either way.
func TestUngrouped(t *testing.T) {
	f := newFake(t, answer(
		apiMonitor(1, "latency", sloTags("api"), groupState{"tag:v1,env:prod", "OK"}),
		apiMonitor(2, "errors", sloTags("api"), groupState{"tag:v1,env:prod", "OK"}, groupState{"tag:v2,env:prod", "OK"}),
		apiMonitor(3, "ungrouped", sloTags("api")),
		apiMonitor(4, "availability", sloTags("api"), groupState{"TAG:V1", "OK"}),
	))
	c := f.client(t, Config{})
	for _, tc := range []struct {
		tag  string
		want []string
	}{
		{"v2", []string{"availability", "latency"}},
		{"v1", []string{}},
	} {
		got, err := c.Ungrouped(context.Background(), api, tc.tag, false)
		if err != nil {
			t.Fatalf("Ungrouped(%s): %v", tc.tag, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Ungrouped(%s) = %q, want %q", tc.tag, got, tc.want)
		}
	}
	if _, err := c.Ungrouped(context.Background(), api, "a,b", false); err == nil {
		t.Error("Ungrouped with a comma in the tag: no error")
	}
}

package datadog

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // in the error; empty for success
	}{
		{name: "defaults", cfg: Config{APIKey: "a", AppKey: "b"}},
		{name: "no API key", cfg: Config{AppKey: "b"}, want: "APIKey"},
		{name: "no app key", cfg: Config{APIKey: "a"}, want: "AppKey"},
		{name: "keys function", cfg: Config{Keys: func(context.Context) (string, string, error) { return "a", "b", nil }}},
		{name: "keys function and keys", cfg: Config{APIKey: "a", Keys: func(context.Context) (string, string, error) { return "a", "b", nil }}, want: "not both"},
		{name: "no keys", cfg: Config{}, want: "APIKey"},
		{name: "known site", cfg: Config{APIKey: "a", AppKey: "b", Site: "us5.datadoghq.com"}},
		{name: "unknown site", cfg: Config{APIKey: "a", AppKey: "b", Site: "example.com"}, want: `Site "example.com"`},
		{name: "URL", cfg: Config{APIKey: "a", AppKey: "b", URL: "http://127.0.0.1:8080/proxy/"}},
		{name: "URL overrides an unknown site", cfg: Config{APIKey: "a", AppKey: "b", Site: "example.com", URL: "https://dd.example.com"}},
		{name: "relative URL", cfg: Config{APIKey: "a", AppKey: "b", URL: "/api"}, want: "URL"},
		{name: "URL of another scheme", cfg: Config{APIKey: "a", AppKey: "b", URL: "ftp://example.com"}, want: "URL"},
		{name: "negative timeout", cfg: Config{APIKey: "a", AppKey: "b", Timeout: -time.Second}, want: "Timeout"},
		{name: "negative TTL", cfg: Config{APIKey: "a", AppKey: "b", TTL: -time.Second}, want: "TTL"},
		{name: "tiny TTL", cfg: Config{APIKey: "a", AppKey: "b", TTL: time.Nanosecond}, want: "TTL"},
		{name: "negative cache size", cfg: Config{APIKey: "a", AppKey: "b", CacheSize: -1}, want: "CacheSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.want == "" {
				if err != nil || c == nil {
					t.Fatalf("New = %v, %v; want a client", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, %v; want an error naming %q", c, err, tt.want)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	c, err := New(Config{APIKey: "a", AppKey: "b"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if c.tagKey != DefaultTagKey || c.timeout != DefaultTimeout || c.host != "api.datadoghq.com" {
		t.Errorf("tag key %q, timeout %v, host %q; want %q, %v, api.datadoghq.com", c.tagKey, c.timeout, c.host, DefaultTagKey, DefaultTimeout)
	}
}

func TestKeysFromSecret(t *testing.T) {
	secret := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "picchu", Name: "datadog"}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	api, app, err := KeysFromSecret(secret(map[string]string{"api-key": "the-api-key\n", "app-key": " the-app-key", "other": "x"}))
	if err != nil || api != "the-api-key" || app != "the-app-key" {
		t.Errorf("KeysFromSecret = %q, %q, %v; want the-api-key, the-app-key", api, app, err)
	}
	for _, tt := range []struct {
		name    string
		data    map[string]string
		missing string
	}{
		{name: "no api-key", data: map[string]string{"app-key": "b"}, missing: "api-key"},
		{name: "no app-key", data: map[string]string{"api-key": "a"}, missing: "app-key"},
		{name: "empty api-key", data: map[string]string{"api-key": " \n", "app-key": "b"}, missing: "api-key"},
		{name: "empty app-key", data: map[string]string{"api-key": "a", "app-key": ""}, missing: "app-key"},
		{name: "no data", data: nil, missing: "api-key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api, app, err := KeysFromSecret(secret(tt.data))
			if err == nil {
				t.Fatalf("KeysFromSecret = %q, %q; want an error", api, app)
			}
			for _, want := range []string{"picchu/datadog", `"` + tt.missing + `"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
			if api != "" || app != "" {
				t.Errorf("KeysFromSecret returned keys %q, %q with an error", api, app)
			}
		})
	}
	if _, _, err := KeysFromSecret(nil); err == nil {
		t.Error("KeysFromSecret(nil) succeeded, want an error")
	}
}

// recorder is an http.RoundTripper that records the requests and answers
// them with an empty list of monitors, or fails them with err.
type recorder struct {
	err  error
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Clone(context.Background()))
	r.mu.Unlock()
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if r.err != nil {
		return nil, r.err
	}
	return &http.Response{
		Status:     "200 OK",
		StatusCode: http.StatusOK,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader("[]")),
		Request:    req,
	}, nil
}

func TestSite(t *testing.T) {
	for site, host := range map[string]string{
		"":                  "api.datadoghq.com",
		"datadoghq.com":     "api.datadoghq.com",
		"datadoghq.eu":      "api.datadoghq.eu",
		"us3.datadoghq.com": "api.us3.datadoghq.com",
		"ddog-gov.com":      "api.ddog-gov.com",
	} {
		t.Run(host, func(t *testing.T) {
			rec := &recorder{}
			c, err := New(Config{APIKey: testAPIKey, AppKey: testAppKey, Site: site, HTTPClient: &http.Client{Transport: rec}})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			got, err := c.FiringAlerts(context.Background(), api, "v2", false)
			if err != nil || got == nil || len(got) != 0 {
				t.Fatalf("FiringAlerts = %#v, %v; want an empty list", got, err)
			}
			if len(rec.reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(rec.reqs))
			}
			req := rec.reqs[0]
			if req.URL.Scheme != "https" || req.URL.Host != host || req.URL.Path != "/api/v1/monitor" {
				t.Errorf("request to %s, want https://%s/api/v1/monitor", req.URL, host)
			}
			if _, problem := validate(req); problem != "" {
				t.Errorf("request %s: %s", req.URL, problem)
			}
		})
	}
}

func TestTransportError(t *testing.T) {
	failure := errors.New("connection refused")
	rec := &recorder{err: failure}
	c, err := New(Config{APIKey: testAPIKey, AppKey: testAppKey, Site: "datadoghq.eu", HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, err = c.FiringAlerts(context.Background(), api, "v2", false)
	if !errors.Is(err, failure) {
		t.Fatalf("FiringAlerts error %v, want one wrapping %v", err, failure)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "datadog: listing monitors tagged app:api,slo:true at api.datadoghq.eu: ") {
		t.Errorf("error %q does not say what failed where", msg)
	}
	if strings.Contains(msg, testAPIKey) || strings.Contains(msg, testAppKey) {
		t.Errorf("error %q holds a key", msg)
	}
}

// TestKeysAtEveryRequest gives the keys through Config.Keys: a request goes
// with the keys of the moment, and a keys error fails the query, naming no
// key, without a request.
func TestKeysAtEveryRequest(t *testing.T) {
	var requests int
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ call) {
		requests++
		writeJSON(w, http.StatusOK, []any{})
	})
	missing := errors.New(`secrets "datadog" not found`)
	var keysErr error
	c, err := New(Config{URL: f.URL, Keys: func(context.Context) (string, string, error) {
		return testAPIKey, testAppKey, keysErr
	}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := c.FiringAlerts(context.Background(), api, "v1", false); err != nil || requests != 1 {
		t.Fatalf("with keys: %v after %d requests, want one", err, requests)
	}
	keysErr = missing // and a query not cached: the canary monitors
	if _, err := c.FiringAlerts(context.Background(), api, "v1", true); !errors.Is(err, missing) || requests != 1 {
		t.Errorf("without keys: %v after %d requests, want %v and no new request", err, requests, missing)
	}
}

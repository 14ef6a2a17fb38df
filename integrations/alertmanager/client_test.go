package alertmanager

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// server is an Alertmanager API that checks each request with check and
// answers it with status and body.
func server(t *testing.T, check func(t *testing.T, r *http.Request, body []byte), status int, body string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading the request: %v", err)
		}
		check(t, r, b)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{Address: srv.URL + "/am/", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestList_SendsFiltersAndDecodesSilences(t *testing.T) {
	c := server(t, func(t *testing.T, r *http.Request, body []byte) {
		if r.Method != http.MethodGet || r.URL.Path != "/am/api/v2/silences" {
			t.Errorf("request %s %s, want GET /am/api/v2/silences", r.Method, r.URL.Path)
		}
		if got := r.URL.Query()["filter"]; !reflect.DeepEqual(got, []string{`alertname="HighLatency"`, `slo!="true"`}) {
			t.Errorf("filters %q", got)
		}
		if len(body) != 0 {
			t.Errorf("a GET with a body: %s", body)
		}
	}, http.StatusOK, `[{"id": "a1", "matchers": [{"name": "alertname", "value": "HighLatency", "isRegex": false, "isEqual": true},
		{"name": "slo", "value": "true", "isRegex": false, "isEqual": false}],
		"startsAt": "2026-11-02T10:00:00.000Z", "endsAt": "2026-11-02T10:15:00.000Z", "updatedAt": "2026-11-02T10:00:00.000Z",
		"createdBy": "picchu", "comment": "c", "status": {"state": "active"}},
		{"id": "a2", "matchers": [], "startsAt": "2026-11-01T10:00:00.000Z", "endsAt": "2026-11-01T11:00:00.000Z",
		"createdBy": "someone", "comment": "d", "status": {"state": "expired"}}]`)
	got, err := c.List(context.Background(), `alertname="HighLatency"`, `slo!="true"`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a1" || got[0].Expired() || !got[1].Expired() {
		t.Fatalf("List = %+v", got)
	}
	want := []Matcher{{Name: "alertname", Value: "HighLatency", IsEqual: true}, {Name: "slo", Value: "true"}}
	if !reflect.DeepEqual(got[0].Matchers, want) {
		t.Errorf("matchers %+v, want %+v", got[0].Matchers, want)
	}
	if end := time.Date(2026, 11, 2, 10, 15, 0, 0, time.UTC); !got[0].EndsAt.Equal(end) {
		t.Errorf("endsAt %v, want %v", got[0].EndsAt, end)
	}
}

func TestPost_SendsTheSilenceAndReturnsItsID(t *testing.T) {
	start := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	c := server(t, func(t *testing.T, r *http.Request, body []byte) {
		if r.Method != http.MethodPost || r.URL.Path != "/am/api/v2/silences" {
			t.Errorf("request %s %s, want POST /am/api/v2/silences", r.Method, r.URL.Path)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("body %s: %v", body, err)
		}
		want := map[string]any{
			"id": "old",
			"matchers": []any{
				map[string]any{"name": "alertname", "value": "HighLatency", "isRegex": false, "isEqual": true},
				map[string]any{"name": "canary", "value": "true", "isRegex": false, "isEqual": false},
			},
			"startsAt": "2026-11-02T10:00:00Z", "endsAt": "2026-11-02T10:15:00Z",
			"createdBy": "picchu", "comment": "shop v2 [picchu silence a/b/c/d/0]",
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("body\n%v\nwant\n%v", got, want)
		}
	}, http.StatusOK, `{"silenceID": "new"}`)
	id, err := c.Post(context.Background(), Silence{
		ID:       "old",
		Matchers: []Matcher{{Name: "alertname", Value: "HighLatency", IsEqual: true}, {Name: "canary", Value: "true"}},
		StartsAt: start, EndsAt: start.Add(15 * time.Minute), CreatedBy: "picchu", Comment: "shop v2 [picchu silence a/b/c/d/0]",
		Status: &Status{State: StateActive},
	})
	if err != nil || id != "new" {
		t.Fatalf("Post = %q, %v; want new", id, err)
	}
}

func TestPost_ErrorsSayWhatAlertmanagerSaid(t *testing.T) {
	c := server(t, func(*testing.T, *http.Request, []byte) {}, http.StatusBadRequest,
		`"silence invalid: at least one matcher must not match the empty string"`)
	_, err := c.Post(context.Background(), Silence{})
	if err == nil || !strings.Contains(err.Error(), "POST /api/v2/silences: 400 Bad Request") ||
		!strings.Contains(err.Error(), "at least one matcher must not match the empty string") {
		t.Fatalf("Post error %v; want the request, status and answer", err)
	}
	c = server(t, func(*testing.T, *http.Request, []byte) {}, http.StatusOK, `{}`)
	if _, err := c.Post(context.Background(), Silence{}); err == nil || !strings.Contains(err.Error(), "no silenceID") {
		t.Fatalf("Post error %v; want no silenceID", err)
	}
}

func TestExpire(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   func(error) bool
	}{
		{"expired", http.StatusOK, "", func(err error) bool { return err == nil }},
		{"already expired", http.StatusInternalServerError, `"silence a/1 already expired"`, func(err error) bool { return err == nil }},
		{"unknown", http.StatusNotFound, "", func(err error) bool { return errors.Is(err, ErrNotFound) }},
		{"failing", http.StatusInternalServerError, `"disk full"`, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "DELETE /api/v2/silence/a%2F1: 500 Internal Server Error: \"disk full\"")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := server(t, func(t *testing.T, r *http.Request, _ []byte) {
				if r.Method != http.MethodDelete || r.URL.EscapedPath() != "/am/api/v2/silence/a%2F1" {
					t.Errorf("request %s %s, want DELETE /am/api/v2/silence/a%%2F1", r.Method, r.URL.EscapedPath())
				}
			}, tt.status, tt.body)
			if err := c.Expire(context.Background(), "a/1"); !tt.want(err) {
				t.Errorf("Expire = %v", err)
			}
		})
	}
}

// TestDeadline: an Alertmanager that never answers fails the request at
// the client's timeout, saying so.
func TestDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := New(Config{Address: srv.URL, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.List(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "GET /api/v2/silences") {
		t.Fatalf("List = %v; want the request named and a deadline exceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failed after %s; want about the 100ms timeout", d)
	}
}

func TestNew_RefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Address: ""}, {Address: "alertmanager:9093"}, {Address: "ftp://alertmanager"}, {Address: "http://"},
		{Address: "http://alertmanager:9093", Timeout: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	c, err := New(Config{Address: "http://alertmanager:9093/?x=1"})
	if err != nil || c.Address() != "http://alertmanager:9093" {
		t.Errorf("New = %v, %v; want the address without its query", c, err)
	}
}

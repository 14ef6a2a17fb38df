// Package alertmanager is a small client of Alertmanager's API v2
// silences: list, create or update, and expire. It is written by hand on
// net/http and encoding/json against the documented v2 schema: Prometheus'
// generated client (github.com/prometheus/alertmanager/api/v2/client)
// comes with the Alertmanager module, whose requirements would move
// prometheus/common, client_golang and go-openapi to versions the rest of
// Picchu (prometheus/prometheus, kube-openapi) is not built with.
//
// Every request has a deadline, answers are read up to a bound, and every
// error names the request and Alertmanager's answer.
package alertmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout is the deadline of every request when Config.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// maxBody bounds what is read of an answer: the list of every silence
// Alertmanager keeps (expired ones for its retention, 5 days by default).
const maxBody = 32 << 20

// The states of a silence.
const (
	StateActive  = "active"
	StatePending = "pending"
	StateExpired = "expired"
)

// ErrNotFound is wrapped by the error of a request about a silence
// Alertmanager does not know.
var ErrNotFound = errors.New("silence not found")

// Matcher is a matcher of a silence.
type Matcher struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	IsRegex bool   `json:"isRegex"`
	// IsEqual false negates the matcher. Alertmanager reads a missing
	// isEqual as true; the client always sends it.
	IsEqual bool `json:"isEqual"`
}

// Silence is a silence, as sent (ID empty for a new one) and as listed.
type Silence struct {
	ID        string    `json:"id,omitempty"`
	Matchers  []Matcher `json:"matchers"`
	StartsAt  time.Time `json:"startsAt"`
	EndsAt    time.Time `json:"endsAt"`
	CreatedBy string    `json:"createdBy"`
	Comment   string    `json:"comment"`
	// Status and UpdatedAt are Alertmanager's, in a list; never sent.
	Status    *Status    `json:"status,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

// Status is the state of a listed silence.
type Status struct {
	// State is StateActive, StatePending or StateExpired.
	State string `json:"state"`
}

// Expired says a listed silence silences nothing any more.
func (s Silence) Expired() bool { return s.Status != nil && s.Status.State == StateExpired }

// Config says which Alertmanager a Client talks to, and how.
type Config struct {
	// Address is Alertmanager's base URL, such as http://alertmanager:9093
	// (a path prefix, for one served under --web.route-prefix, is kept).
	Address string
	// Timeout is the deadline of every request (DefaultTimeout when zero).
	Timeout time.Duration
	// HTTP carries the requests (http.DefaultClient's transport when nil).
	HTTP *http.Client
}

// Client talks to one Alertmanager's API v2. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	timeout time.Duration
	http    *http.Client
}

// New returns a Client for cfg. It fails when the address is not an http
// or https URL with a host, or the timeout is negative.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("creating Alertmanager client: parsing address %q: %w", cfg.Address, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("creating Alertmanager client: address %q is not an http or https URL with a host", cfg.Address)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("creating Alertmanager client for %s: negative timeout %s", cfg.Address, cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return &Client{base: u, timeout: cfg.Timeout, http: cfg.HTTP}, nil
}

// Address is the base URL the client talks to.
func (c *Client) Address() string { return c.base.String() }

// List returns the silences Alertmanager keeps, expired ones included, or
// with filters (matchers such as `alertname="HighLatency"`) those whose
// matchers Alertmanager says match them: GET /api/v2/silences.
func (c *Client) List(ctx context.Context, filters ...string) ([]Silence, error) {
	q := url.Values{}
	for _, f := range filters {
		q.Add("filter", f)
	}
	var out []Silence
	if err := c.do(ctx, http.MethodGet, "/api/v2/silences", q, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Post creates s, or, with s.ID set, updates it: Alertmanager changes an
// active silence in place when only its end and comment change, and
// otherwise expires it and creates a new one. It returns the ID of the
// silence that holds now: POST /api/v2/silences.
func (c *Client) Post(ctx context.Context, s Silence) (string, error) {
	s.Status, s.UpdatedAt = nil, nil
	var out struct {
		SilenceID string `json:"silenceID"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/v2/silences", nil, s, &out); err != nil {
		return "", err
	}
	if out.SilenceID == "" {
		return "", fmt.Errorf("alertmanager %s: POST /api/v2/silences: no silenceID in the answer", c.base.Redacted())
	}
	return out.SilenceID, nil
}

// Expire expires the silence id: DELETE /api/v2/silence/{id}. A silence
// already expired is no error; one Alertmanager does not know wraps
// ErrNotFound.
func (c *Client) Expire(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("alertmanager %s: expiring a silence: empty ID", c.base.Redacted())
	}
	return c.do(ctx, http.MethodDelete, "/api/v2/silence/"+url.PathEscape(id), nil, nil, nil)
}

// do sends one request to path (escaped) with the client's deadline and
// decodes a 200's body into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	what := method + " " + path
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path
	unescaped, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return fmt.Errorf("alertmanager %s: %s: %w", c.base.Redacted(), what, err)
	}
	u.Path = unescaped
	u.RawQuery = query.Encode()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("alertmanager %s: %s: encoding the request: %w", c.base.Redacted(), what, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("alertmanager %s: %s: %w", c.base.Redacted(), what, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("alertmanager %s: %s: %w", c.base.Redacted(), what, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("alertmanager %s: %s: reading the answer: %w", c.base.Redacted(), what, err)
	}
	if len(data) > maxBody {
		return fmt.Errorf("alertmanager %s: %s: answer larger than %d bytes", c.base.Redacted(), what, maxBody)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound && method == http.MethodDelete:
		return fmt.Errorf("alertmanager %s: %s: %w", c.base.Redacted(), what, ErrNotFound)
	case resp.StatusCode == http.StatusInternalServerError && method == http.MethodDelete && bytes.Contains(data, []byte("already expired")):
		return nil // older Alertmanagers refuse to expire an expired silence
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("alertmanager %s: %s: %s: %s", c.base.Redacted(), what, resp.Status, snippet(data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("alertmanager %s: %s: decoding the answer: %w", c.base.Redacted(), what, err)
	}
	return nil
}

// snippet is the start of an error answer, on one line.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	if s == "" {
		return "(empty answer)"
	}
	return s
}

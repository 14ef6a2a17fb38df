package breaker_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"

	"github.com/medium/picchu/fleet/breaker"
)

// expiringContext is a request context with a deadline that expires when
// the test says so: right after the server has the request. A wall-clock
// deadline could expire before the request reaches a server on a loaded
// machine, and the request could then reach the handler late, after the test
// has counted the handler's calls.
type expiringContext struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	err      error
}

func newExpiringContext() *expiringContext {
	return &expiringContext{
		Context:  context.Background(),
		deadline: time.Now().Add(time.Minute),
		done:     make(chan struct{}),
	}
}

// Deadline returns the context's nominal deadline.
func (c *expiringContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done is closed when the context expires.
func (c *expiringContext) Done() <-chan struct{} { return c.done }

// Err is context.DeadlineExceeded once the context expired, nil before.
func (c *expiringContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// expire makes the deadline pass.
func (c *expiringContext) expire() {
	c.once.Do(func() {
		c.mu.Lock()
		c.err = context.DeadlineExceeded
		c.mu.Unlock()
		close(c.done)
	})
}

// server is an httptest server that counts the requests reaching its
// handler and tells the test when each arrives.
type server struct {
	*httptest.Server
	hits    atomic.Int64
	arrived chan struct{}
	Release func() // closes the channel blocking handlers wait on
}

// handler is a server's handler. One that blocks should return when release
// is closed: Release closes it, and so does the test's cleanup, before it
// closes the server (which waits for its handlers).
type handler func(w http.ResponseWriter, r *http.Request, release <-chan struct{})

// newServer starts a server running h after counting each request.
func newServer(t *testing.T, h handler) *server {
	release := make(chan struct{})
	s := &server{arrived: make(chan struct{}, 64), Release: sync.OnceFunc(func() { close(release) })}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.arrived <- struct{}{}
		h(w, r, release)
	}))
	t.Cleanup(func() {
		s.Release()
		s.Close()
	})
	return s
}

// hang blocks until the client goes away or release is closed.
func hang(_ http.ResponseWriter, r *http.Request, release <-chan struct{}) {
	select {
	case <-release:
	case <-r.Context().Done():
	}
}

// status returns a handler answering code with a body naming it.
func status(code int) handler {
	return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, http.StatusText(code))
	}
}

// guardedClient returns a client sending to s through a transport guarded
// by b.
func guardedClient(s *server, b *breaker.Breaker) *http.Client {
	return &http.Client{Transport: breaker.Transport(s.Client().Transport, b)}
}

// get sends a GET to s with ctx and returns the response body, closing it.
func get(ctx context.Context, c *http.Client, s *server) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api", nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// expectFastFail sends a request through c and expects the breaker to fail
// it without reaching s. Should the request reach s all the same, its
// deadline expires, so that a hanging handler fails the test instead of
// hanging it.
func expectFastFail(t *testing.T, c *http.Client, s *server) {
	t.Helper()
	before := s.hits.Load()
	ctx, sent := newExpiringContext(), make(chan struct{})
	defer close(sent)
	go func() {
		select {
		case <-s.arrived:
			ctx.expire()
		case <-sent:
		}
	}()
	_, _, err := get(ctx, c, s)
	var open *breaker.OpenError
	if !errors.Is(err, breaker.ErrOpen) || !errors.As(err, &open) {
		t.Fatalf("request error %v, want the breaker's *OpenError", err)
	}
	if after := s.hits.Load(); after != before {
		t.Fatalf("request reached the server (%d calls, were %d) through an open breaker", after, before)
	}
}

func TestTransportHungServerOpens(t *testing.T) {
	s := newServer(t, hang)
	b := breaker.New(breaker.Policy{Failures: 3}, breaker.WithClock(newFakeClock().Now))
	c := guardedClient(s, b)
	for i := range 3 {
		ctx := newExpiringContext()
		go func() {
			<-s.arrived
			ctx.expire()
		}()
		if _, _, err := get(ctx, c, s); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("request %d: error %v, want context.DeadlineExceeded", i, err)
		}
	}
	if st := b.Snapshot(); st.State != breaker.Open || !strings.Contains(st.LastError, "deadline exceeded") {
		t.Fatalf("after 3 timeouts: %+v, want Open with the timeout as last error", st)
	}
	if got := s.hits.Load(); got != 3 {
		t.Fatalf("server saw %d requests, want 3", got)
	}
	expectFastFail(t, c, s)
}

func TestTransportNetTimeoutIsFailure(t *testing.T) {
	s := newServer(t, hang)
	inner := s.Client().Transport.(*http.Transport).Clone()
	inner.ResponseHeaderTimeout = time.Millisecond // the server never answers
	b := breaker.New(breaker.Policy{Failures: 3})
	c := &http.Client{Transport: breaker.Transport(inner, b)}
	if _, _, err := get(context.Background(), c, s); err == nil {
		t.Fatal("request to a hung server succeeded")
	}
	if st := b.Snapshot(); st.ConsecutiveFailures != 1 || !strings.Contains(st.LastError, "timeout") {
		t.Fatalf("after a response header timeout: %+v, want one failure", st)
	}
}

func TestTransportStatusCodes(t *testing.T) {
	tests := []struct {
		code  int
		fails bool
	}{
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, true},
		{http.StatusServiceUnavailable, true},
		{http.StatusGatewayTimeout, true},
		{http.StatusOK, false},
		{http.StatusNotFound, false},
		{http.StatusTooManyRequests, false},
		{http.StatusConflict, false},
		{http.StatusForbidden, false},
		{http.StatusNotImplemented, false},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.code), func(t *testing.T) {
			s := newServer(t, status(tt.code))
			b := breaker.New(breaker.Policy{Failures: 3}, breaker.WithClock(newFakeClock().Now))
			c := guardedClient(s, b)
			for i := range 3 {
				code, body, err := get(context.Background(), c, s)
				if err != nil || code != tt.code || body != http.StatusText(tt.code) {
					t.Fatalf("request %d: %d %q %v; want the server's answer untouched", i, code, body, err)
				}
			}
			st := b.Snapshot()
			switch {
			case tt.fails && st.State != breaker.Open:
				t.Fatalf("after 3 answers %d: %+v, want Open", tt.code, st)
			case tt.fails:
				expectFastFail(t, c, s)
			case st.State != breaker.Closed || st.ConsecutiveFailures != 0:
				t.Fatalf("after 3 answers %d: %+v, want Closed with no failures", tt.code, st)
			}
		})
	}
}

func TestTransportProbeClosesBreaker(t *testing.T) {
	clock := newFakeClock()
	var healthy atomic.Bool
	var probes atomic.Int64 // requests reaching the healthy server
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if probes.Add(1) == 1 {
			<-release // hold the probe until the test has tried to send others
		}
		clock.Advance(250 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	b := breaker.New(breaker.Policy{Failures: 3}, breaker.WithClock(clock.Now))
	c := guardedClient(s, b)
	for range 3 {
		_, _, _ = get(context.Background(), c, s)
		<-s.arrived
	}
	healthy.Store(true)
	expectFastFail(t, c, s) // the backoff has not passed yet

	clock.Set(b.Snapshot().RetryAt)
	probe := make(chan int, 1)
	go func() {
		code, _, _ := get(context.Background(), c, s)
		probe <- code
	}()
	<-s.arrived
	for range 3 {
		expectFastFail(t, c, s) // while the probe is outstanding
	}
	s.Release()
	if code := <-probe; code != http.StatusOK {
		t.Fatalf("probe answered %d, want 200", code)
	}
	if got := s.hits.Load(); got != 4 {
		t.Fatalf("server saw %d requests, want 3 failures and one probe", got)
	}
	st := b.Snapshot()
	if st.State != breaker.Closed || st.Opens != 0 || st.Latency != 250*time.Millisecond {
		t.Fatalf("after the probe: %+v, want Closed, backoff reset, latency 250ms", st)
	}
	if code, _, err := get(context.Background(), c, s); err != nil || code != http.StatusOK {
		t.Fatalf("request after closing: %d %v", code, err)
	}
}

func TestTransportCallerCancelIsNotFailure(t *testing.T) {
	s := newServer(t, hang)
	b := breaker.New(breaker.Policy{Failures: 1})
	c := guardedClient(s, b)
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-s.arrived
			cancel()
		}()
		if _, _, err := get(ctx, c, s); !errors.Is(err, context.Canceled) {
			t.Fatalf("request %d: error %v, want context.Canceled", i, err)
		}
	}
	if st := b.Snapshot(); st.State != breaker.Closed || st.ConsecutiveFailures != 0 || st.LastError != "" {
		t.Fatalf("after 3 canceled requests: %+v, want Closed with no failures", st)
	}
}

func TestTransportCanceledProbeLetsNextProbeThrough(t *testing.T) {
	clock := newFakeClock()
	var healthy atomic.Bool
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		if r.Header.Get("Hang") != "" {
			hang(w, r, release)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	b := breaker.New(breaker.Policy{Failures: 1}, breaker.WithClock(clock.Now))
	c := guardedClient(s, b)
	_, _, _ = get(context.Background(), c, s)
	<-s.arrived
	healthy.Store(true)
	clock.Set(b.Snapshot().RetryAt)

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.arrived
		cancel()
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Hang", "yes")
	if _, err := c.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled probe: error %v, want context.Canceled", err)
	}
	if st := b.Snapshot(); st.State != breaker.HalfOpen {
		t.Fatalf("after a canceled probe: %v, want HalfOpen", st.State)
	}
	if code, _, err := get(context.Background(), c, s); err != nil || code != http.StatusNoContent {
		t.Fatalf("next probe: %d %v, want 204", code, err)
	}
	if st := b.Snapshot(); st.State != breaker.Closed {
		t.Fatalf("after the next probe: %v, want Closed", st.State)
	}
}

func TestTransportLatencyIsTimeToHeaders(t *testing.T) {
	clock := newFakeClock()
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
		clock.Advance(100 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		<-release // a watch stream: the body comes later
		clock.Advance(time.Hour)
		_, _ = io.WriteString(w, "event")
	})
	b := breaker.New(breaker.Policy{}, breaker.WithClock(clock.Now))
	c := guardedClient(s, b)
	resp, err := c.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if st := b.Snapshot(); st.Latency != 100*time.Millisecond {
		t.Fatalf("latency %v once headers arrived, want 100ms", st.Latency)
	}
	s.Release()
	if body, err := io.ReadAll(resp.Body); err != nil || string(body) != "event" {
		t.Fatalf("stream body %q, %v", body, err)
	}
	if st := b.Snapshot(); st.Latency != 100*time.Millisecond {
		t.Fatalf("latency %v after the stream, want 100ms", st.Latency)
	}
}

// closeRecorder is a request body that records being closed.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error {
	c.closed.Store(true)
	return nil
}

func TestTransportBodies(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
		_, _ = io.Copy(w, r.Body)
	})
	b := breaker.New(breaker.Policy{Failures: 1}, breaker.WithClock(newFakeClock().Now))
	c := guardedClient(s, b)
	resp, err := c.Post(s.URL, "text/plain", strings.NewReader("ping"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || string(body) != "ping" {
		t.Fatalf("echoed body %q, %v; want the request body untouched", body, err)
	}

	b.Failure(errors.New("boom"))
	reqBody := &closeRecorder{Reader: strings.NewReader("ping")}
	req, err := http.NewRequest(http.MethodPost, s.URL, reqBody)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := breaker.Transport(s.Client().Transport, b).RoundTrip(req); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("RoundTrip error %v, want ErrOpen", err)
	}
	if !reqBody.closed.Load() {
		t.Fatal("a request failed fast without closing its body")
	}
}

func TestTransportWrapsForClientGo(t *testing.T) {
	tlsConfig := &tls.Config{ServerName: "cluster-a", MinVersion: tls.VersionTLS12}
	inner := &http.Transport{TLSClientConfig: tlsConfig}
	rt := breaker.Transport(inner, breaker.New(breaker.Policy{}))
	wrapper, ok := rt.(utilnet.RoundTripperWrapper)
	if !ok || wrapper.WrappedRoundTripper() != inner {
		t.Fatalf("%T does not unwrap to the transport it guards", rt)
	}
	if got, err := utilnet.TLSClientConfig(rt); err != nil || got != tlsConfig {
		t.Fatalf("TLSClientConfig through the breaker: %v, %v", got, err)
	}
	if breaker.Transport(inner, nil) != inner {
		t.Fatal("Transport without a breaker does not return the transport as is")
	}
}

func TestTransportWithRestConfig(t *testing.T) {
	s := newServer(t, status(http.StatusServiceUnavailable))
	b := breaker.New(breaker.Policy{Failures: 2}, breaker.WithClock(newFakeClock().Now))
	cfg := &rest.Config{Host: s.URL}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return breaker.Transport(rt, b) })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: hc.Transport}
	for range 2 {
		if _, _, err := get(context.Background(), c, s); err != nil {
			t.Fatal(err)
		}
	}
	if st := b.Snapshot(); st.State != breaker.Open {
		t.Fatalf("after 2 answers 503 through client-go's transport: %v, want Open", st.State)
	}
	expectFastFail(t, c, s)
}

package breaker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Transport returns rt guarded by b. A request the breaker does not allow
// fails at once, without reaching rt, with an error wrapping the breaker's
// *OpenError (so errors.Is(err, ErrOpen) holds). Otherwise the outcome is
// reported to b:
//
//   - transport errors, context.DeadlineExceeded and network timeouts among
//     them, and responses 502, 503 and 504 are failures;
//   - an error after the request's own context was canceled is neither a
//     failure nor a success (the caller gave up, the server said nothing);
//   - every other response, 4xx, 429 and 500 included, is a success (an
//     API server answers 500 when one request fails, not when it is down).
//
// The latency reported is the time to the response headers, so a long watch
// stream counts as a success as soon as its headers arrive. Request and
// response bodies are passed through untouched.
//
// The result implements WrappedRoundTripper (k8s.io/apimachinery's
// utilnet.RoundTripperWrapper), so client-go can still reach rt's TLS
// configuration, dialer and idle connections; use it with rest.Config.Wrap.
// A nil rt means http.DefaultTransport; a nil b returns rt unguarded.
func Transport(rt http.RoundTripper, b *Breaker) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if b == nil {
		return rt
	}
	return &transport{rt: rt, b: b}
}

// transport is the http.RoundTripper returned by Transport.
type transport struct {
	rt http.RoundTripper
	b  *Breaker
}

// WrappedRoundTripper returns the round tripper the breaker guards.
func (t *transport) WrappedRoundTripper() http.RoundTripper {
	return t.rt
}

// RoundTrip sends req through the guarded round tripper if the breaker
// allows it, and reports the outcome to the breaker.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	probe, err := t.b.Allow()
	if err != nil {
		// A RoundTripper must close the request body, even when it fails.
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("%s %s not sent: %w", req.Method, host(req), err)
	}
	start := t.b.now()
	resp, err := t.rt.RoundTrip(req)
	t.report(req, probe, resp, err, t.b.now().Sub(start))
	return resp, err
}

// report tells the breaker how the request went.
func (t *transport) report(req *http.Request, probe bool, resp *http.Response, err error, latency time.Duration) {
	switch {
	case err != nil && errors.Is(req.Context().Err(), context.Canceled):
		t.b.Abandon(probe)
	case err != nil:
		t.b.Failure(fmt.Errorf("%s %s: %w", req.Method, host(req), err))
	case resp == nil:
		t.b.Failure(fmt.Errorf("%s %s: no response and no error", req.Method, host(req)))
	case serverFailure(resp.StatusCode):
		t.b.Failure(fmt.Errorf("%s %s: server answered %d %s",
			req.Method, host(req), resp.StatusCode, http.StatusText(resp.StatusCode)))
	default:
		t.b.Success(latency)
	}
}

// serverFailure reports whether a response with status code means the
// server, or the proxy in front of it, is failing.
func serverFailure(code int) bool {
	switch code {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	default:
		return false
	}
}

// host returns the host req is sent to, for error messages.
func host(req *http.Request) string {
	if req.URL == nil {
		return req.Host
	}
	return req.URL.Host
}

package images

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
)

// Bounds of what the inspector reads of one response.
const (
	// MaxManifestBytes bounds a manifest, a config blob or a token: any
	// successful response's body (the largest manifest registries accept).
	MaxManifestBytes = 4 << 20
	// MaxErrorBytes bounds the body of an error response.
	MaxErrorBytes = 64 << 10
)

// ErrRefused marks a request the inspector would not send: to a host that
// is neither the image's registry nor an allowed host, or with credentials
// over plain HTTP.
var ErrRefused = errors.New("request refused")

// ErrTooLarge marks a response whose body is past its bound.
var ErrTooLarge = errors.New("response too large")

// guard is the transport of one inspection: it sends a request only to the
// image's registry (its host and port) or an allowed host, never sends
// credentials over plain HTTP, and bounds every response body it hands on.
// go-containerregistry reads error and token bodies whole, and follows a
// registry's token realm and redirects wherever they point: this is the one
// place every one of its requests and responses passes.
type guard struct {
	inner http.RoundTripper
	// registry is the image's registry, "host" or "host:port".
	registry string
	allowed  hostList
}

// RoundTrip sends the request if the guard allows it, and bounds the body
// of its response.
func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.check(req); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := g.inner.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	limit := int64(MaxErrorBytes)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		limit = MaxManifestBytes
	}
	if req.Method != http.MethodHead && resp.ContentLength > limit {
		// Said up front: nothing of it is read.
		resp.Body.Close()
		return nil, fmt.Errorf("%w: status %d with %d bytes, past %d", ErrTooLarge, resp.StatusCode, resp.ContentLength, limit)
	}
	resp.Body = &boundedBody{body: resp.Body, left: limit, limit: limit, what: req.Method + " " + redacted(req)}
	return resp, nil
}

// check says why req must not be sent, or nil.
func (g *guard) check(req *http.Request) error {
	scheme := req.URL.Scheme
	host := address(req.URL.Host, scheme)
	if host != address(g.registry, scheme) && !g.allowed.allows(req.URL.Hostname(), req.URL.Port(), scheme) {
		return fmt.Errorf("%w: host %s is not registry %s, nor an allowed host", ErrRefused, req.URL.Host, g.registry)
	}
	if scheme == "http" {
		// Credentials travel in the Authorization header, the URL's user,
		// or an OAuth token request's form (a POST): a read needs none.
		switch {
		case req.Header.Get("Authorization") != "" || req.URL.User != nil:
			return fmt.Errorf("%w: credentials are never sent over plain HTTP", ErrRefused)
		case req.Method != http.MethodGet && req.Method != http.MethodHead:
			return fmt.Errorf("%w: only reads without credentials are sent over plain HTTP", ErrRefused)
		}
	}
	return nil
}

// redacted is the request's URL without its user and query, which may
// carry tokens.
func redacted(req *http.Request) string {
	u := *req.URL
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// boundedBody reads up to limit bytes of body, and fails past them.
type boundedBody struct {
	body        io.ReadCloser
	left, limit int64
	what        string
	// past is the error of a body found past the limit.
	past error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.past != nil {
		return 0, b.past
	}
	if b.left <= 0 {
		// A body of exactly the limit is whole: look one byte further.
		var one [1]byte
		n, err := b.body.Read(one[:])
		if n > 0 {
			b.past = fmt.Errorf("%w: %s: body past %d bytes", ErrTooLarge, b.what, b.limit)
			return 0, b.past
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }

// address is host with the scheme's default port when it names none,
// lowercased: "ghcr.io" and "ghcr.io:443" are one address over HTTPS, and
// 127.0.0.1:5000 and 127.0.0.1:5001 are two.
func address(host, scheme string) string {
	host = strings.ToLower(host)
	if h, p, err := net.SplitHostPort(host); err == nil {
		if p == "" {
			p = defaultPort(scheme)
		}
		return net.JoinHostPort(h, p)
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), defaultPort(scheme))
}

func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

// hostList is the hosts besides an image's own registry that requests may
// go to. An entry "host" allows the host on its scheme's default port,
// "host:port" on that port, and "*.domain" every host under domain on the
// default port.
type hostList []string

// ParseHosts reads a list of allowed hosts (Options.AllowedHosts), saying
// which entry is not a host, host:port or *.domain.
func ParseHosts(entries []string) ([]string, error) {
	var out []string
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		host := strings.TrimPrefix(e, "*.")
		if h, p, err := net.SplitHostPort(host); err == nil {
			if p == "" || strings.HasPrefix(e, "*.") {
				return nil, fmt.Errorf("allowed host %q: a port goes with a single host, and is not empty", e)
			}
			host = h
		}
		if host == "" || strings.ContainsAny(host, "/*@?#") || strings.Contains(e, "://") {
			return nil, fmt.Errorf("allowed host %q is not a host, host:port or *.domain", e)
		}
		out = append(out, e)
	}
	return out, nil
}

// allows says an entry allows the host (no brackets) on port ("" for the
// scheme's default).
func (l hostList) allows(hostname, port, scheme string) bool {
	hostname = strings.ToLower(hostname)
	if port == "" {
		port = defaultPort(scheme)
	}
	for _, e := range l {
		if domain, ok := strings.CutPrefix(e, "*."); ok {
			if port == defaultPort(scheme) && strings.HasSuffix(hostname, "."+domain) {
				return true
			}
			continue
		}
		if address(e, scheme) == net.JoinHostPort(hostname, port) {
			return true
		}
	}
	return false
}

package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"

	"github.com/medium/picchu/decide/platform"
)

// safetyNet stops a test's reads of one response past 64 MiB, so that an
// unbounded read fails the test instead of eating the machine's memory.
const safetyNet = 64 << 20

var errSafetyNet = errors.New("test transport: read past the safety net")

// recorder is a transport that records every request that reaches it
// (past the inspector's guard) and the bytes read of each response.
type recorder struct {
	inner http.RoundTripper
	mu    sync.Mutex
	urls  []string
	reads []*countedBody
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.urls = append(r.urls, req.Method+" "+req.URL.String())
	r.mu.Unlock()
	resp, err := r.inner.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b := &countedBody{body: resp.Body}
	r.mu.Lock()
	r.reads = append(r.reads, b)
	r.mu.Unlock()
	resp.Body = b
	return resp, nil
}

// requested are the requests that reached the network.
func (r *recorder) requested() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.urls)
}

// mostRead is the most bytes read of one response.
func (r *recorder) mostRead() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var most int64
	for _, b := range r.reads {
		most = max(most, b.read())
	}
	return most
}

type countedBody struct {
	body io.ReadCloser
	mu   sync.Mutex
	n    int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.mu.Lock()
	b.n += int64(n)
	over := b.n > safetyNet
	b.mu.Unlock()
	if over {
		return n, errSafetyNet
	}
	return n, err
}

func (b *countedBody) read() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *countedBody) Close() error { return b.body.Close() }

// endless writes to w until the client goes or the test ends.
func endless(t *testing.T, w http.ResponseWriter, r *http.Request) {
	chunk := []byte(strings.Repeat(`{"errors":[`, 3000))
	for {
		if _, err := w.Write(chunk); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		default:
		}
	}
}

func TestInspector_BoundsEveryBody(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(t *testing.T, host string, w http.ResponseWriter, r *http.Request)
		bound int64
	}{
		{"an endless manifest", func(t *testing.T, host string, w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/v2/":
			case r.Method == http.MethodHead:
				w.WriteHeader(http.StatusNotFound)
			default:
				w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
				endless(t, w, r)
			}
		}, MaxManifestBytes},
		{"an endless error", func(t *testing.T, host string, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			endless(t, w, r)
		}, MaxErrorBytes},
		{"an endless error the client retries", func(t *testing.T, host string, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			endless(t, w, r)
		}, MaxErrorBytes},
		{"an endless token", func(t *testing.T, host string, w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/token" {
				endless(t, w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="registry"`, host))
			w.WriteHeader(http.StatusUnauthorized)
		}, MaxManifestBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var host string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { tc.serve(t, host, w, r) }))
			defer srv.Close()
			host = registryHostOf(srv)
			rec := &recorder{inner: http.DefaultTransport}
			in := New(Options{Transport: rec, Timeout: time.Minute})
			start := time.Now()
			_, err := in.Platforms(context.Background(), host+"/shop:v1", nil)
			took := time.Since(start)
			if !errors.Is(err, ErrTooLarge) || errors.Is(err, errSafetyNet) {
				t.Errorf("error %v, want one of a response too large", err)
			}
			// One probe byte past the bound tells a body is too large.
			if most := rec.mostRead(); most > tc.bound+1 {
				t.Errorf("read %d bytes of one response, past its bound %d", most, tc.bound)
			}
			if took > 30*time.Second {
				t.Errorf("took %v: the body was not cut, the timeout ended it", took)
			}
		})
	}
}

// TestInspector_ManifestTooLargeOnItsDescriptor: a registry that says, on
// HEAD, that a manifest is past the bound is not asked for it.
func TestInspector_ManifestTooLargeOnItsDescriptor(t *testing.T) {
	const digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	var mu sync.Mutex
	var gets int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
		case r.Method == http.MethodHead:
			w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
			w.Header().Set("Docker-Content-Digest", digest)
			w.Header().Set("Content-Length", fmt.Sprint(MaxManifestBytes+1))
		default:
			mu.Lock()
			gets++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
			fmt.Fprint(w, `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":1,"digest":"`+digest+`","platform":{"os":"linux","architecture":"amd64"}}]}`)
		}
	}))
	defer srv.Close()
	_, err := New(Options{}).Platforms(context.Background(), registryHostOf(srv)+"/shop:v1", nil)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(MaxManifestBytes+1)) {
		t.Errorf("error %v, want one naming the manifest's size", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if gets != 0 {
		t.Errorf("the manifest was asked for %d times", gets)
	}
}

// tokenRegistry is a TLS registry at host that asks for a bearer token
// from realm and takes only "Bearer tok", with shop:multi and shop:arm.
func tokenRegistry(t *testing.T, realm func() string) (host string, tr http.RoundTripper) {
	t.Helper()
	reg := registry.New()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			at := realm()
			if at == "" {
				// While pushing, with the token.
				at = "https://tokens.invalid/token"
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="registry"`, at))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "https://")
	tr = srv.Client().Transport
	// Pushed with the token: the realm serves none yet.
	push(t, host, remote.WithTransport(tr), remote.WithAuth(&authn.Bearer{Token: "tok"}))
	return host, tr
}

// TestInspector_RefusesHostsOtherThanTheRegistry: a token realm or a
// redirect to another host (another port of the same address included) or
// to the link-local metadata address is never followed, unless the host is
// allowed.
func TestInspector_RefusesHostsOtherThanTheRegistry(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	// The token server, on another port of 127.0.0.1.
	tokens := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path)
		mu.Unlock()
		fmt.Fprint(w, `{"token":"tok"}`)
	}))
	defer tokens.Close()
	tokenHost := strings.TrimPrefix(tokens.URL, "https://")
	var realm string
	host, tr := tokenRegistry(t, func() string { return realm })

	for _, tc := range []struct {
		name, realm, refused string
	}{
		{"another port", "https://" + tokenHost + "/token", tokenHost},
		{"the metadata address", "http://169.254.169.254/latest/meta-data/iam/security-credentials/", "169.254.169.254"},
		{"loopback over plain HTTP", "http://127.0.0.1:1/token", "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			realm = tc.realm
			rec := &recorder{inner: tr}
			_, err := New(Options{Transport: rec}).Platforms(context.Background(), host+"/shop:multi", nil)
			if !errors.Is(err, ErrRefused) || errors.Is(err, ErrUnreachable) ||
				!strings.Contains(err.Error(), "host "+tc.refused+" is not registry "+host) {
				t.Errorf("error %v, want a refusal naming %s and the registry", err, tc.refused)
			}
			for _, u := range rec.requested() {
				if !strings.Contains(u, "://"+host+"/") {
					t.Errorf("a request went to %s", u)
				}
			}
		})
	}
	mu.Lock()
	if len(asked) > 0 {
		t.Errorf("the token server was asked %v", asked)
	}
	mu.Unlock()

	// Allowed, the token server gives the token the registry takes.
	realm = "https://" + tokenHost + "/token"
	got, err := New(Options{Transport: tr, AllowedHosts: []string{tokenHost}}).Platforms(context.Background(), host+"/shop:arm", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []platform.Platform{{OS: "linux", Architecture: "arm64"}}; !slices.Equal(got, want) {
		t.Errorf("platforms %v, want %v", got, want)
	}
	mu.Lock()
	if len(asked) == 0 {
		t.Error("the allowed token server was not asked")
	}
	mu.Unlock()
}

// TestInspector_RefusesRedirectsElsewhere: a registry that redirects a
// manifest to another host gets nothing read there.
func TestInspector_RefusesRedirectsElsewhere(t *testing.T) {
	var mu sync.Mutex
	var asked int
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked++
		mu.Unlock()
	}))
	defer elsewhere.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		http.Redirect(w, r, elsewhere.URL+"/latest/meta-data/", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	_, err := New(Options{}).Platforms(context.Background(), registryHostOf(srv)+"/shop:v1", nil)
	if !errors.Is(err, ErrRefused) {
		t.Errorf("error %v, want a refusal", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked > 0 {
		t.Errorf("the host redirected to was asked %d times", asked)
	}
}

// TestInspector_NeverSendsCredentialsOverPlainHTTP: a plain-HTTP registry
// that asks for the pull secret's password, or a token for its identity
// token, gets neither; the same credentials go over TLS.
func TestInspector_NeverSendsCredentialsOverPlainHTTP(t *testing.T) {
	for _, tc := range []struct {
		name      string
		challenge string
		secret    func(host string) corev1.Secret
	}{
		{"basic", `Basic realm="registry"`, func(host string) corev1.Secret { return dockerConfigSecret(host, "picchu", "s3cret") }},
		{"identity token", `Bearer realm="http://%s/token",service="registry"`, func(host string) corev1.Secret {
			return corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{
				corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"identitytoken":"refresh-s3cret"}}}`, host)}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var leaked []string
			var host string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
				if a := r.Header.Get("Authorization"); a != "" || strings.Contains(string(body), "s3cret") {
					mu.Lock()
					leaked = append(leaked, r.Method+" "+r.URL.Path+" "+a+" "+string(body))
					mu.Unlock()
				}
				ch := tc.challenge
				if strings.Contains(ch, "%s") {
					ch = fmt.Sprintf(ch, host)
				}
				w.Header().Set("WWW-Authenticate", ch)
				w.WriteHeader(http.StatusUnauthorized)
			}))
			defer srv.Close()
			host = registryHostOf(srv)
			_, err := New(Options{}).Platforms(context.Background(), host+"/shop:v1", []corev1.Secret{tc.secret(host)})
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "over plain HTTP") {
				t.Errorf("error %v, want a refusal to send credentials over plain HTTP", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(leaked) > 0 {
				t.Errorf("credentials went over plain HTTP: %q", leaked)
			}
		})
	}
}

// TestInspector_RemembersFailures: after a failed inspection, the registry
// is not asked again for the reference before a backoff that doubles up
// to its bound; the error is returned meanwhile. Other credentials are
// asked at once, and a success forgets the failures.
func TestInspector_RemembersFailures(t *testing.T) {
	reg := registry.New()
	var mu sync.Mutex
	var requests int
	down := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		isDown := down
		mu.Unlock()
		if isDown && r.URL.Path != "/v2/" {
			http.Error(w, "no such image", http.StatusNotFound)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := registryHostOf(srv)
	mu.Lock()
	down = false
	mu.Unlock()
	push(t, host)
	mu.Lock()
	down = true
	mu.Unlock()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return requests
	}

	now := time.Unix(0, 0)
	in := New(Options{Now: func() time.Time { return now }, FailureBackoff: 10 * time.Second, MaxFailureBackoff: 40 * time.Second})
	ctx := context.Background()
	image := host + "/shop:multi"
	first, err := in.Platforms(ctx, image, nil)
	if err == nil {
		t.Fatalf("platforms %v from a registry that answers 404", first)
	}
	var ie *Error
	if !errors.As(err, &ie) || ie.Registry != host || !strings.HasPrefix(err.Error(), "registry "+host+": ") {
		t.Errorf("error %v does not name registry %s", err, host)
	}
	// Asked after 10 s, 20 s, 40 s, then every 40 s.
	for _, wait := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 40 * time.Second} {
		before := count()
		now = now.Add(wait - time.Second)
		if _, again := in.Platforms(ctx, image, nil); again == nil || again.Error() != err.Error() || count() != before {
			t.Fatalf("%v into a %v backoff: error %v after %d requests, want the same error and none", wait-time.Second, wait, again, count()-before)
		}
		now = now.Add(time.Second)
		if _, again := in.Platforms(ctx, image, nil); again == nil || count() == before {
			t.Fatalf("after a %v backoff: error %v after %d requests, want the registry asked", wait, again, count()-before)
		}
	}
	// Other credentials are another question.
	before := count()
	if _, err := in.Platforms(ctx, image, []corev1.Secret{dockerConfigSecret(host, "u", "p")}); err == nil || count() == before {
		t.Errorf("other credentials: error %v after %d requests, want the registry asked", err, count()-before)
	}
	// Once it answers, the failures are forgotten.
	mu.Lock()
	down = false
	mu.Unlock()
	now = now.Add(40 * time.Second)
	if _, err := in.Platforms(ctx, image, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	down = true
	mu.Unlock()
	now = now.Add(time.Hour) // past the tag's TTL
	if _, err := in.Platforms(ctx, host+"/shop:arm", nil); err == nil {
		t.Fatal("shop:arm read from a registry that answers 404")
	}
	before = count()
	now = now.Add(10 * time.Second)
	if _, err := in.Platforms(ctx, host+"/shop:arm", nil); err == nil || count() == before {
		t.Errorf("a first failure waits 10 s: error %v after %d requests", err, count()-before)
	}
}

// TestInspector_RefusesPlatformsNoNodeCanCarry: an index whose platforms
// are not label values, or too many, is refused.
func TestInspector_RefusesPlatformsNoNodeCanCarry(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := registryHostOf(srv)
	index := func(tag string, ps ...v1.Platform) string {
		var adds []mutate.IndexAddendum
		for _, p := range ps {
			adds = append(adds, mutate.IndexAddendum{Add: image(t, p.OS, p.Architecture, ""), Descriptor: v1.Descriptor{Platform: &p}})
		}
		ref, err := name.ParseReference(host + "/shop:" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.WriteIndex(ref, mutate.AppendManifests(empty.Index, adds...)); err != nil {
			t.Fatal(err)
		}
		return ref.String()
	}
	var many []v1.Platform
	for i := range MaxPlatforms + 1 {
		many = append(many, v1.Platform{OS: "linux", Architecture: fmt.Sprintf("arch%d", i)})
	}
	for _, tc := range []struct {
		name, image, want string
	}{
		{"long architecture", index("long", v1.Platform{OS: "linux", Architecture: strings.Repeat("a", 300)}), "is not a label value"},
		{"not a label value", index("space", v1.Platform{OS: "linux", Architecture: "arm 64"}), `"arm 64" is not a label value`},
		{"too many", index("many", many...), fmt.Sprintf("names %d platforms, past %d", MaxPlatforms+1, MaxPlatforms)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{}).Platforms(context.Background(), tc.image, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrUnreachable) || len(err.Error()) > 1024 {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestParseHostsAndAllows(t *testing.T) {
	hosts, err := ParseHosts([]string{" auth.docker.io", "TOKENS.example.com:8443", "*.s3.amazonaws.com", ""})
	if err != nil {
		t.Fatal(err)
	}
	l := hostList(hosts)
	for _, tc := range []struct {
		host, port, scheme string
		want               bool
	}{
		{"auth.docker.io", "", "https", true},
		{"auth.docker.io", "443", "https", true},
		{"AUTH.docker.io", "", "https", true},
		{"auth.docker.io", "8443", "https", false},
		{"tokens.example.com", "8443", "https", true},
		{"tokens.example.com", "", "https", false},
		{"bucket.s3.amazonaws.com", "", "https", true},
		{"bucket.s3.amazonaws.com", "9000", "https", false},
		{"s3.amazonaws.com", "", "https", false},
		{"evil-s3.amazonaws.com", "", "https", false},
		{"169.254.169.254", "", "http", false},
	} {
		if got := l.allows(tc.host, tc.port, tc.scheme); got != tc.want {
			t.Errorf("allows(%s, %q, %s) = %v, want %v", tc.host, tc.port, tc.scheme, got, tc.want)
		}
	}
	for _, bad := range []string{"https://auth.docker.io", "auth.docker.io/token", "*.example.com:443", "host:", "*"} {
		if _, err := ParseHosts([]string{bad}); err == nil {
			t.Errorf("%q was taken as a host", bad)
		}
	}
}

func TestAddress(t *testing.T) {
	for _, tc := range []struct{ host, scheme, want string }{
		{"ghcr.io", "https", "ghcr.io:443"},
		{"GHCR.io:443", "https", "ghcr.io:443"},
		{"127.0.0.1:5000", "http", "127.0.0.1:5000"},
		{"localhost", "http", "localhost:80"},
		{"[::1]:5000", "https", "[::1]:5000"},
	} {
		if got := address(tc.host, tc.scheme); got != tc.want {
			t.Errorf("address(%s, %s) = %s, want %s", tc.host, tc.scheme, got, tc.want)
		}
	}
}

// TestInspector_DefaultsAreShort: one inspection gives up after 10 s.
func TestInspector_DefaultsAreShort(t *testing.T) {
	in := New(Options{})
	if in.opts.Timeout != 10*time.Second || in.opts.FailureBackoff != 10*time.Second || in.opts.MaxFailureBackoff != 5*time.Minute {
		t.Errorf("defaults %v, %v, %v", in.opts.Timeout, in.opts.FailureBackoff, in.opts.MaxFailureBackoff)
	}
}

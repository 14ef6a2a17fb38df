package images

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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
	"github.com/medium/picchu/test/kit"
)

// image is a random image of os, arch and variant.
func image(t *testing.T, os, arch, variant string) v1.Image {
	t.Helper()
	img, err := kit.PlatformImage(os, arch, variant)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// push fills a registry at host with a multi-arch index (shop:multi,
// amd64 and arm64 plus an attestation) and a single-arch arm64 image
// (shop:arm).
func push(t *testing.T, host string, opts ...remote.Option) {
	t.Helper()
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: image(t, "linux", "amd64", ""), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: image(t, "linux", "arm64", "v8"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}},
		mutate.IndexAddendum{Add: image(t, "unknown", "unknown", ""), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}}},
	)
	multi, err := name.ParseReference(host + "/shop:multi")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(multi, idx, opts...); err != nil {
		t.Fatal(err)
	}
	arm, err := name.ParseReference(host + "/shop:arm")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(arm, image(t, "linux", "arm64", ""), opts...); err != nil {
		t.Fatal(err)
	}
}

func registryHostOf(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

func TestInspector_Platforms(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := registryHostOf(srv)
	push(t, host)
	ctx := context.Background()

	now := time.Unix(0, 0)
	in := New(Options{Now: func() time.Time { return now }, TagTTL: time.Minute})
	for _, tc := range []struct {
		image string
		want  []platform.Platform
	}{
		{host + "/shop:multi", []platform.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}},
		{host + "/shop:arm", []platform.Platform{{OS: "linux", Architecture: "arm64"}}},
	} {
		got, err := in.Platforms(ctx, tc.image, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.image, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: platforms %v, want %v", tc.image, got, tc.want)
		}
	}

	// Within the tag TTL, nothing is asked again.
	before := in.Requests()
	if _, err := in.Platforms(ctx, host+"/shop:multi", nil); err != nil {
		t.Fatal(err)
	}
	if n := in.Requests() - before; n != 0 {
		t.Errorf("a cached tag made %d requests", n)
	}
	// Past it, the tag's digest is asked for (one HEAD), and the digest is known.
	now = now.Add(2 * time.Minute)
	before = in.Requests()
	if _, err := in.Platforms(ctx, host+"/shop:multi", nil); err != nil {
		t.Fatal(err)
	}
	if n := in.Requests() - before; n != 1 {
		t.Errorf("an expired tag of a known digest made %d requests, want 1", n)
	}
	// By digest, a known digest needs no request at all.
	armRef, err := name.ParseReference(host + "/shop:arm")
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(armRef)
	if err != nil {
		t.Fatal(err)
	}
	before = in.Requests()
	if _, err := in.Platforms(ctx, host+"/shop@"+d.Digest.String(), nil); err != nil {
		t.Fatal(err)
	}
	if n := in.Requests() - before; n != 0 {
		t.Errorf("a known digest made %d requests", n)
	}

	// A missing image is an answer, not an unreachable registry.
	_, err = in.Platforms(ctx, host+"/shop:missing", nil)
	if err == nil || errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), host+"/shop:missing") {
		t.Errorf("missing image: %v", err)
	}
	if _, err := in.Platforms(ctx, "Not A Reference", nil); err == nil {
		t.Error("a bad reference was inspected")
	}
}

func TestInspector_LastKnownWhileUnreachable(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	host := registryHostOf(srv)
	push(t, host)
	now := time.Unix(0, 0)
	in := New(Options{Now: func() time.Time { return now }, TagTTL: time.Minute, Timeout: 5 * time.Second})
	want, err := in.Platforms(context.Background(), host+"/shop:multi", nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	now = now.Add(2 * time.Minute)
	if got, err := in.Platforms(context.Background(), host+"/shop:multi", nil); err != nil || !slices.Equal(got, want) {
		t.Errorf("a known tag while the registry is down: %v, %v", got, err)
	}
	if _, err := in.Platforms(context.Background(), host+"/shop:arm", nil); !errors.Is(err, ErrUnreachable) {
		t.Errorf("an unknown tag while the registry is down: %v", err)
	}
}

func TestInspector_Unreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	in := New(Options{Timeout: 5 * time.Second})
	_, err = in.Platforms(context.Background(), addr+"/shop:v1", nil)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Errorf("unreachable registry: %v", err)
	}
}

func TestInspector_Timeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	in := New(Options{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := in.Platforms(context.Background(), registryHostOf(srv)+"/shop:v1", nil)
	if !errors.Is(err, ErrUnreachable) || time.Since(start) > 10*time.Second {
		t.Errorf("a silent registry: %v after %v", err, time.Since(start))
	}
}

func dockerConfigSecret(host, user, pass string) corev1.Secret {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return corev1.Secret{
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, host, auth)},
	}
}

func TestInspector_PullSecrets(t *testing.T) {
	reg := registry.New()
	// Over TLS: credentials never go over plain HTTP.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "picchu" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	tr := srv.Client().Transport
	push(t, host, remote.WithTransport(tr), remote.WithAuth(&authn.Basic{Username: "picchu", Password: "s3cret"}))
	ctx := context.Background()

	// No failure is remembered: each set of credentials is another question.
	in := New(Options{Transport: tr})
	if _, err := in.Platforms(ctx, host+"/shop:arm", nil); err == nil || errors.Is(err, ErrUnreachable) {
		t.Errorf("no credentials: %v", err)
	}
	if _, err := in.Platforms(ctx, host+"/shop:arm", []corev1.Secret{dockerConfigSecret(host, "picchu", "wrong")}); err == nil {
		t.Error("wrong credentials were let in")
	}
	secrets := []corev1.Secret{
		{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"x": []byte("y")}},
		dockerConfigSecret("other.example.com", "x", "y"),
		dockerConfigSecret("https://"+host+"/v1/", "picchu", "s3cret"),
	}
	got, err := in.Platforms(ctx, host+"/shop:arm", secrets)
	if err != nil {
		t.Fatal(err)
	}
	if want := []platform.Platform{{OS: "linux", Architecture: "arm64"}}; !slices.Equal(got, want) {
		t.Errorf("platforms %v, want %v", got, want)
	}
}

func TestKeychainFromSecrets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		secrets  []corev1.Secret
		registry string
		want     authn.AuthConfig
		err      string
	}{
		{"auth field", []corev1.Secret{dockerConfigSecret("reg.example.com", "u", "p:w")}, "reg.example.com", authn.AuthConfig{Username: "u", Password: "p:w"}, ""},
		{"username and password", []corev1.Secret{{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{
			corev1.DockerConfigJsonKey: []byte(`{"auths":{"reg.example.com:5000":{"username":"u","password":"p"}}}`)}}},
			"reg.example.com:5000", authn.AuthConfig{Username: "u", Password: "p"}, ""},
		{"docker hub by its old name", []corev1.Secret{dockerConfigSecret("https://index.docker.io/v1/", "u", "p")}, name.DefaultRegistry, authn.AuthConfig{Username: "u", Password: "p"}, ""},
		{"docker hub as docker.io", []corev1.Secret{dockerConfigSecret("docker.io", "u", "p")}, "index.docker.io", authn.AuthConfig{Username: "u", Password: "p"}, ""},
		{"legacy dockercfg", []corev1.Secret{{Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{
			corev1.DockerConfigKey: []byte(`{"reg.example.com":{"username":"u","password":"p"}}`)}}},
			"reg.example.com", authn.AuthConfig{Username: "u", Password: "p"}, ""},
		{"first secret wins", []corev1.Secret{dockerConfigSecret("reg.example.com", "a", "1"), dockerConfigSecret("reg.example.com", "b", "2")},
			"reg.example.com", authn.AuthConfig{Username: "a", Password: "1"}, ""},
		{"other registry is anonymous", []corev1.Secret{dockerConfigSecret("reg.example.com", "u", "p")}, "elsewhere.example.com", authn.AuthConfig{}, ""},
		{"opaque secrets are skipped", []corev1.Secret{{Type: corev1.SecretTypeOpaque}}, "reg.example.com", authn.AuthConfig{}, ""},
		{"bad json", []corev1.Secret{{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{")}}}, "", authn.AuthConfig{}, "docker config"},
		{"bad auth", []corev1.Secret{{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{
			corev1.DockerConfigJsonKey: []byte(`{"auths":{"reg.example.com":{"auth":"bm9jb2xvbg=="}}}`)}}}, "", authn.AuthConfig{}, "user:password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc, err := KeychainFromSecrets(tc.secrets)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one about %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			reg, err := name.NewRegistry(tc.registry)
			if err != nil {
				t.Fatal(err)
			}
			a, err := kc.Resolve(reg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			if *got != tc.want {
				t.Errorf("credentials %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestLRU(t *testing.T) {
	l := newLRU[int](2)
	l.put("a", 1)
	l.put("b", 2)
	l.get("a") // b is now the least recently used
	l.put("c", 3)
	if _, ok := l.get("b"); ok {
		t.Error("b was kept past the bound")
	}
	if v, ok := l.get("a"); !ok || v != 1 {
		t.Errorf("a = %d, %v", v, ok)
	}
	l.put("a", 4)
	if v, _ := l.get("a"); v != 4 || l.len() != 2 {
		t.Errorf("a = %d, len %d", v, l.len())
	}
}

func TestPlatformString(t *testing.T) {
	if s := (platform.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}).String(); s != "linux/arm64/v8" {
		t.Error(s)
	}
}

func TestInspector_ConcurrentInspectionsMakeOne(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := registryHostOf(srv)
	push(t, host)
	in := New(Options{})
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := in.Platforms(context.Background(), host+"/shop:multi", nil)
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// One HEAD for the tag's digest, one GET of the index.
	if n := in.Requests(); n != 2 {
		t.Errorf("8 concurrent inspections made %d requests, want 2", n)
	}
}

package kit

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// RegistryOptions configure StartRegistry.
type RegistryOptions struct {
	// User and Password, when User is set, are the credentials the
	// registry asks for (basic authentication); it is anonymous otherwise.
	User, Password string
	// Wrap, when set, wraps the registry's handler after the credentials
	// are checked: to record requests or to answer otherwise.
	Wrap func(http.Handler) http.Handler
	// Logger, when set, logs what the registry serves.
	Logger *log.Logger
}

// Registry is an in-memory OCI registry served over TLS on 127.0.0.1 (the
// operator sends credentials over nothing else).
type Registry struct {
	// Host is the registry's host:port.
	Host string
	srv  *httptest.Server
	opts RegistryOptions
}

// StartRegistry starts a registry as opts say. Close it when done.
func StartRegistry(opts RegistryOptions) (*Registry, error) {
	var h http.Handler
	if opts.Logger != nil {
		h = registry.New(registry.Logger(opts.Logger))
	} else {
		h = registry.New()
	}
	if opts.Wrap != nil {
		h = opts.Wrap(h)
	}
	if opts.User != "" {
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != opts.User || p != opts.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the registry: %w", err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.StartTLS()
	return &Registry{Host: l.Addr().String(), srv: srv, opts: opts}, nil
}

// Close stops the registry.
func (r *Registry) Close() { r.srv.Close() }

// Certificate is the registry's TLS certificate, to trust.
func (r *Registry) Certificate() *x509.Certificate { return r.srv.Certificate() }

// CertificatePEM is the registry's TLS certificate in PEM, to trust.
func (r *Registry) CertificatePEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw})
}

// Transport is a transport that trusts the registry's certificate.
func (r *Registry) Transport() http.RoundTripper { return r.srv.Client().Transport }

// DockerConfigJSON is a .dockerconfigjson of the registry's credentials,
// the data of an image pull secret.
func (r *Registry) DockerConfigJSON() []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(r.opts.User + ":" + r.opts.Password))
	return fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, r.Host, auth)
}

// remoteOptions authenticate as the registry asks and trust it.
func (r *Registry) remoteOptions() []remote.Option {
	opts := []remote.Option{remote.WithTransport(r.Transport())}
	if r.opts.User != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.opts.User, Password: r.opts.Password}))
	}
	return opts
}

// Push pushes a random image of os and arch as repoTag ("shop:v1") and
// returns its reference (host/shop:v1).
func (r *Registry) Push(repoTag, os, arch string) (string, error) {
	img, err := PlatformImage(os, arch, "")
	if err != nil {
		return "", err
	}
	ref, err := name.ParseReference(r.Host + "/" + repoTag)
	if err != nil {
		return "", fmt.Errorf("parsing %s: %w", repoTag, err)
	}
	if err := remote.Write(ref, img, r.remoteOptions()...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	return r.Host + "/" + repoTag, nil
}

// PushIndex pushes an index of a random image for each of platforms as
// repoTag ("shop:multi") and returns its reference.
func (r *Registry) PushIndex(repoTag string, platforms ...v1.Platform) (string, error) {
	var adds []mutate.IndexAddendum
	for _, p := range platforms {
		img, err := PlatformImage(p.OS, p.Architecture, p.Variant)
		if err != nil {
			return "", err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	ref, err := name.ParseReference(r.Host + "/" + repoTag)
	if err != nil {
		return "", fmt.Errorf("parsing %s: %w", repoTag, err)
	}
	if err := remote.WriteIndex(ref, mutate.AppendManifests(empty.Index, adds...), r.remoteOptions()...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	return r.Host + "/" + repoTag, nil
}

// PlatformImage is a random image (one layer of 64 bytes) whose config
// says os, arch and variant.
func PlatformImage(os, arch, variant string) (v1.Image, error) {
	img, err := random.Image(64, 1)
	if err != nil {
		return nil, fmt.Errorf("making an image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading an image's config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = os, arch, variant
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting an image's platform: %w", err)
	}
	return img, nil
}

package images

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/medium/picchu/decide/platform"
)

// Options tune an Inspector; zero values take the defaults.
type Options struct {
	// Timeout bounds one inspection of a reference, all its requests
	// (default 10s).
	Timeout time.Duration
	// TagTTL is how long a tag's digest is trusted before the registry
	// is asked again, since tags move (default 5m). When the registry
	// does not answer then, the tag's last known digest stands.
	TagTTL time.Duration
	// MaxDigests bounds the digests remembered (default 1024); the least
	// recently used are forgotten first. Tags are bounded the same.
	MaxDigests int
	// Transport carries the registry requests (default remote.DefaultTransport).
	// Every request and response goes through a guard around it (see
	// AllowedHosts, MaxManifestBytes, MaxErrorBytes).
	Transport http.RoundTripper
	// AllowedHosts are the hosts, besides an image's own registry (its host
	// and port), that the inspector may send a request to: a token realm on
	// another host, or the blob store a registry redirects to (ParseHosts).
	// A request anywhere else is refused (ErrRefused).
	AllowedHosts []string
	// FailureBackoff is how long a reference whose inspection failed is
	// not asked for again (default 10s): its error is returned meanwhile.
	// Each failure in a row doubles it, up to MaxFailureBackoff (default 5m).
	FailureBackoff, MaxFailureBackoff time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Inspector reads the platforms of image references, once per digest.
// It is safe for concurrent use.
type Inspector struct {
	opts    Options
	flights singleflight.Group

	mu       sync.Mutex
	digests  *lru[[]platform.Platform]
	tags     *lru[tagEntry]
	failures *lru[failure]
	requests int
}

// failure is the last failed inspection of a reference, remembered until
// it may be asked for again; backoff is how long it waited.
type failure struct {
	err     error
	until   time.Time
	backoff time.Duration
}

type tagEntry struct {
	digest  v1.Hash
	expires time.Time
}

// New is an Inspector with the options' defaults filled in.
func New(o Options) *Inspector {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.FailureBackoff <= 0 {
		o.FailureBackoff = 10 * time.Second
	}
	if o.MaxFailureBackoff < o.FailureBackoff {
		o.MaxFailureBackoff = max(5*time.Minute, o.FailureBackoff)
	}
	if o.TagTTL <= 0 {
		o.TagTTL = 5 * time.Minute
	}
	if o.MaxDigests <= 0 {
		o.MaxDigests = 1024
	}
	if o.Transport == nil {
		o.Transport = remote.DefaultTransport
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Inspector{opts: o, digests: newLRU[[]platform.Platform](o.MaxDigests), tags: newLRU[tagEntry](o.MaxDigests),
		failures: newLRU[failure](o.MaxDigests)}
}

// ErrUnreachable marks an inspection that did not get an answer from the
// registry (connection refused, DNS, timeout), as opposed to an answer
// that refuses (unauthorized, not found) or cannot be read.
var ErrUnreachable = errors.New("registry unreachable")

// Error is an inspection that failed, naming the registry (host, or
// host:port) asked and the image.
type Error struct {
	Registry, Image string
	Err             error
}

func (e *Error) Error() string {
	return fmt.Sprintf("registry %s: inspecting %s: %v", e.Registry, e.Image, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Platforms is the platforms the image offers, sorted: each of a manifest
// list's (index's) entries, or a single manifest's config os/architecture.
// The pull secrets' credentials are used for their registries. After an
// inspection of the reference fails, the registry is not asked again
// before FailureBackoff (doubling): the same error is returned meanwhile.
func (i *Inspector) Platforms(ctx context.Context, image string, pullSecrets []corev1.Secret) ([]platform.Platform, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", image, err)
	}
	if d, ok := ref.(name.Digest); ok {
		if ps, ok := i.byDigest(d.DigestStr()); ok {
			return ps, nil
		}
	} else if ps, ok := i.byTag(ref.Name()); ok {
		return ps, nil
	}
	kc, err := KeychainFromSecrets(pullSecrets)
	if err != nil {
		return nil, fmt.Errorf("inspecting %s: %w", ref, err)
	}
	// Other credentials may well get another answer: they are asked at once.
	key := ref.Name() + " " + fingerprint(kc, ref.Context().Registry)
	if err := i.failed(key); err != nil {
		return nil, err
	}
	v, err, _ := i.flights.Do(key, func() (any, error) {
		ps, err := i.inspect(ctx, ref, kc)
		switch {
		case err == nil:
			i.forget(key)
		case ctx.Err() == nil:
			// The caller gave up, not the registry: nothing to remember.
			i.remember(key, err)
		}
		return ps, err
	})
	if err != nil {
		return nil, err
	}
	return v.([]platform.Platform), nil
}

// fingerprint identifies the credentials kc has for reg, without them.
func fingerprint(kc Keychain, reg name.Registry) string {
	cfg, ok := kc[registryHost(reg.RegistryStr())]
	if !ok {
		return "anonymous"
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "unreadable"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// failed is the remembered error of key, while it stands.
func (i *Inspector) failed(key string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	f, ok := i.failures.get(key)
	if !ok || !i.opts.Now().Before(f.until) {
		return nil
	}
	return f.err
}

// remember keeps err for key for the backoff after the one key waited
// last, doubled.
func (i *Inspector) remember(key string, err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	b := i.opts.FailureBackoff
	if f, ok := i.failures.get(key); ok {
		b = min(2*f.backoff, i.opts.MaxFailureBackoff)
	}
	i.failures.put(key, failure{err: err, until: i.opts.Now().Add(b), backoff: b})
}

func (i *Inspector) forget(key string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.failures.remove(key)
}

// Requests is how many registry lookups (manifest heads and gets) the
// Inspector has made, for tests and metrics.
func (i *Inspector) Requests() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.requests
}

func (i *Inspector) byDigest(d string) ([]platform.Platform, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.digests.get(d)
}

func (i *Inspector) byTag(key string) ([]platform.Platform, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	t, ok := i.tags.get(key)
	if !ok || !i.opts.Now().Before(t.expires) {
		return nil, false
	}
	return i.digests.get(t.digest.String())
}

// lastOf is the platforms of the digest the tag named last, however long ago.
func (i *Inspector) lastOf(key string) ([]platform.Platform, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	t, ok := i.tags.get(key)
	if !ok {
		return nil, false
	}
	return i.digests.get(t.digest.String())
}

func (i *Inspector) count() {
	i.mu.Lock()
	i.requests++
	i.mu.Unlock()
}

func (i *Inspector) inspect(ctx context.Context, ref name.Reference, kc Keychain) ([]platform.Platform, error) {
	ctx, cancel := context.WithTimeout(ctx, i.opts.Timeout)
	defer cancel()
	g := &guard{inner: i.opts.Transport, registry: ref.Context().RegistryStr(), allowed: hostList(i.opts.AllowedHosts)}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(g)}

	byDigest := ref
	if _, isDigest := ref.(name.Digest); !isDigest {
		// A tag: ask for its digest alone, which is all a known image needs.
		i.count()
		desc, err := remote.Head(ref, opts...)
		if err != nil {
			if !answered(err) {
				// A registry that does not answer has not moved the tag
				// it last named a known digest with, as far as anyone
				// can tell: what it offered still stands.
				if ps, ok := i.lastOf(ref.Name()); ok {
					return ps, nil
				}
				return nil, wrap(ref, err)
			}
			// Some registries do not answer HEAD: get the manifest below.
		} else if desc.Size > MaxManifestBytes {
			return nil, wrap(ref, fmt.Errorf("%w: manifest %s is %d bytes, past %d", ErrTooLarge, desc.Digest, desc.Size, MaxManifestBytes))
		} else {
			i.rememberTag(ref.Name(), desc.Digest)
			if ps, ok := i.byDigest(desc.Digest.String()); ok {
				return ps, nil
			}
			byDigest = ref.Context().Digest(desc.Digest.String())
		}
	}
	i.count()
	desc, err := remote.Get(byDigest, opts...)
	if err != nil {
		return nil, wrap(ref, err)
	}
	ps, err := platformsOf(desc)
	if err != nil {
		return nil, wrap(ref, err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.digests.put(desc.Digest.String(), ps)
	if _, isDigest := ref.(name.Digest); !isDigest {
		i.tags.put(ref.Name(), tagEntry{digest: desc.Digest, expires: i.opts.Now().Add(i.opts.TagTTL)})
	}
	return ps, nil
}

func (i *Inspector) rememberTag(key string, d v1.Hash) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.tags.put(key, tagEntry{digest: d, expires: i.opts.Now().Add(i.opts.TagTTL)})
}

// platformsOf reads an index's platforms or an image's config.
func platformsOf(desc *remote.Descriptor) ([]platform.Platform, error) {
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", desc.Digest, err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("reading index manifest %s: %w", desc.Digest, err)
		}
		var ps []platform.Platform
		for _, d := range m.Manifests {
			// Attestations and other artifacts carry no platform or unknown/unknown.
			if d.Platform == nil || d.Platform.OS == "" || d.Platform.OS == "unknown" {
				continue
			}
			p := platform.Platform{OS: d.Platform.OS, Architecture: d.Platform.Architecture, Variant: d.Platform.Variant}
			if err := checkPlatform(p); err != nil {
				return nil, answer{fmt.Errorf("index %s: %w", desc.Digest, err)}
			}
			ps = append(ps, p)
		}
		ps = platform.Sorted(ps)
		switch {
		case len(ps) == 0:
			return nil, answer{fmt.Errorf("index %s names no platform", desc.Digest)}
		case len(ps) > MaxPlatforms:
			return nil, answer{fmt.Errorf("index %s names %d platforms, past %d", desc.Digest, len(ps), MaxPlatforms)}
		}
		return ps, nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("reading image %s: %w", desc.Digest, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of image %s: %w", desc.Digest, err)
	}
	if m.Config.Size > MaxManifestBytes {
		return nil, answer{fmt.Errorf("%w: the config of image %s is %d bytes, past %d", ErrTooLarge, desc.Digest, m.Config.Size, MaxManifestBytes)}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of image %s: %w", desc.Digest, err)
	}
	if cfg.OS == "" || cfg.Architecture == "" {
		return nil, answer{fmt.Errorf("the config of image %s names no os/architecture", desc.Digest)}
	}
	p := platform.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
	if err := checkPlatform(p); err != nil {
		return nil, answer{fmt.Errorf("the config of image %s: %w", desc.Digest, err)}
	}
	return []platform.Platform{p}, nil
}

// MaxPlatforms bounds the platforms an image may offer.
const MaxPlatforms = 64

// checkPlatform says why p is no platform a node can run: its os,
// architecture and variant go into node labels and status, so each is a
// label value.
func checkPlatform(p platform.Platform) error {
	for _, v := range []string{p.OS, p.Architecture, p.Variant} {
		if len(validation.IsValidLabelValue(v)) > 0 {
			if len(v) > validation.LabelValueMaxLength {
				v = v[:validation.LabelValueMaxLength] + "…"
			}
			return fmt.Errorf("platform part %q is not a label value", v)
		}
	}
	return nil
}

// answer is what the registry answered, which cannot be used (an image
// that names no platform, say).
type answer struct{ error }

func (a answer) Unwrap() error { return a.error }

// answered says the registry gave an HTTP answer, if not one that can be
// used (a body past its bound, a request to a host it may not send to).
func answered(err error) bool {
	var te *transport.Error
	var a answer
	return errors.As(err, &te) || errors.As(err, &a) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrRefused)
}

func wrap(ref name.Reference, err error) error {
	if !answered(err) && !errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return &Error{Registry: ref.Context().RegistryStr(), Image: ref.String(), Err: err}
}

// lru is a map bounded to its most recently used entries.
type lru[V any] struct {
	max   int
	order *list.List // of *lruEntry, most recent first
	items map[string]*list.Element
}

type lruEntry[V any] struct {
	key   string
	value V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (l *lru[V]) get(k string) (V, bool) {
	e, ok := l.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).value, true
}

func (l *lru[V]) put(k string, v V) {
	if e, ok := l.items[k]; ok {
		e.Value.(*lruEntry[V]).value = v
		l.order.MoveToFront(e)
		return
	}
	l.items[k] = l.order.PushFront(&lruEntry[V]{key: k, value: v})
	for l.order.Len() > l.max {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.items, last.Value.(*lruEntry[V]).key)
	}
}

func (l *lru[V]) remove(k string) {
	if e, ok := l.items[k]; ok {
		l.order.Remove(e)
		delete(l.items, k)
	}
}

func (l *lru[V]) len() int { return l.order.Len() }

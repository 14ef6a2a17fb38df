package images

import (
	"container/list"
	"context"
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

	"github.com/medium/picchu/images/platform"
)

// Options tune an Inspector; zero values take the defaults.
type Options struct {
	// Timeout bounds one inspection of a reference (default 30s).
	Timeout time.Duration
	// TagTTL is how long a tag's digest is trusted before the registry
	// is asked again, since tags move (default 5m). When the registry
	// does not answer then, the tag's last known digest stands.
	TagTTL time.Duration
	// MaxDigests bounds the digests remembered (default 1024); the least
	// recently used are forgotten first. Tags are bounded the same.
	MaxDigests int
	// Transport carries the registry requests (default remote.DefaultTransport).
	Transport http.RoundTripper
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
	requests int
}

type tagEntry struct {
	digest  v1.Hash
	expires time.Time
}

// New is an Inspector with the options' defaults filled in.
func New(o Options) *Inspector {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
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
	return &Inspector{opts: o, digests: newLRU[[]platform.Platform](o.MaxDigests), tags: newLRU[tagEntry](o.MaxDigests)}
}

// ErrUnreachable marks an inspection that did not get an answer from the
// registry (connection refused, DNS, timeout), as opposed to an answer
// that refuses (unauthorized, not found) or cannot be read.
var ErrUnreachable = errors.New("registry unreachable")

// Platforms is the platforms the image offers, sorted: each of a manifest
// list's (index's) entries, or a single manifest's config os/architecture.
// The pull secrets' credentials are used for their registries.
func (i *Inspector) Platforms(ctx context.Context, image string, pullSecrets []corev1.Secret) ([]platform.Platform, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil, fmt.Errorf("parsing image reference %q: %w", image, err)
	}
	key := ref.Name()
	if d, ok := ref.(name.Digest); ok {
		if ps, ok := i.byDigest(d.DigestStr()); ok {
			return ps, nil
		}
	} else if ps, ok := i.byTag(key); ok {
		return ps, nil
	}
	v, err, _ := i.flights.Do(key, func() (any, error) {
		return i.inspect(ctx, ref, pullSecrets)
	})
	if err != nil {
		return nil, err
	}
	return v.([]platform.Platform), nil
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

func (i *Inspector) inspect(ctx context.Context, ref name.Reference, pullSecrets []corev1.Secret) ([]platform.Platform, error) {
	kc, err := KeychainFromSecrets(pullSecrets)
	if err != nil {
		return nil, fmt.Errorf("inspecting %s: %w", ref, err)
	}
	ctx, cancel := context.WithTimeout(ctx, i.opts.Timeout)
	defer cancel()
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(i.opts.Transport)}

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
			ps = append(ps, platform.Platform{OS: d.Platform.OS, Architecture: d.Platform.Architecture, Variant: d.Platform.Variant})
		}
		if len(ps) == 0 {
			return nil, fmt.Errorf("index %s names no platform", desc.Digest)
		}
		return platform.Sorted(ps), nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("reading image %s: %w", desc.Digest, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of image %s: %w", desc.Digest, err)
	}
	if cfg.OS == "" || cfg.Architecture == "" {
		return nil, fmt.Errorf("the config of image %s names no os/architecture", desc.Digest)
	}
	return []platform.Platform{{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}}, nil
}

// answered says the registry gave an HTTP answer.
func answered(err error) bool {
	var te *transport.Error
	return errors.As(err, &te)
}

func wrap(ref name.Reference, err error) error {
	if !answered(err) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("inspecting %s: %w: %w", ref, ErrUnreachable, err)
	}
	return fmt.Errorf("inspecting %s: %w", ref, err)
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

func (l *lru[V]) len() int { return l.order.Len() }

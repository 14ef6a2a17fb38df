package datadog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	dd "github.com/DataDog/datadog-api-client-go/v2/api/datadog"
	"github.com/DataDog/datadog-api-client-go/v2/api/datadogV1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/integrations/querycache"
)

// Defaults of Config.
const (
	// DefaultSite is the Datadog site asked when Config.Site is empty.
	DefaultSite = "datadoghq.com"
	// DefaultTagKey is the monitor group tag holding the build tag when
	// Config.TagKey is empty.
	DefaultTagKey = "tag"
	// DefaultTimeout is the deadline of every API request when Config.Timeout
	// is zero.
	DefaultTimeout = 5 * time.Second
	// DefaultTTL is how long an answer is cached when Config.TTL is zero.
	DefaultTTL = 10 * time.Second
	// DefaultCacheSize is the most answers cached when Config.CacheSize is
	// zero.
	DefaultCacheSize = 1024
	// MinTTL is the shortest cache lifetime New accepts.
	MinTTL = time.Millisecond
)

// Secret data keys read by KeysFromSecret.
const (
	// SecretAPIKey is the Secret data key holding the Datadog API key.
	SecretAPIKey = "api-key"
	// SecretAppKey is the Secret data key holding the Datadog application key.
	SecretAppKey = "app-key"
)

// listMonitorsOperation is the operation name the Datadog client uses to pick
// the server of ListMonitors.
const listMonitorsOperation = "v1.MonitorsApi.ListMonitors"

// Config configures the client.
type Config struct {
	// APIKey is the Datadog API key (sent as DD-API-KEY). Required unless
	// Keys is set.
	APIKey string
	// AppKey is the Datadog application key (sent as DD-APPLICATION-KEY).
	// Required unless Keys is set.
	AppKey string
	// Keys, when set instead of APIKey and AppKey, gives the keys before
	// every request (SecretKeys reads them from a Secret each time, so that
	// a Secret created late or rotated takes effect without a restart). Its
	// error is the request's.
	Keys KeysFunc
	// Site is the Datadog site, "datadoghq.com" when empty (for example
	// "datadoghq.eu" or "us3.datadoghq.com"); requests go to
	// https://api.<Site>. It must be one of the sites the Datadog client
	// knows; use URL for any other deployment.
	Site string
	// URL, when set, is the base URL of the API, overriding Site (tests,
	// proxies), for example an httptest server URL.
	URL string
	// TagKey is the monitor group tag that holds the build tag, "tag" when
	// empty (the group "tag:v2" is the build v2).
	TagKey string
	// Timeout is the deadline of every API request, 5s when zero.
	Timeout time.Duration
	// TTL is how long an answer is cached, 10s when zero; at least MinTTL.
	TTL time.Duration
	// CacheSize is the most answers cached, 1024 when zero.
	CacheSize int
	// HTTPClient sends the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
}

// Client asks Datadog which monitors alert for a build of an app. It is safe
// for concurrent use. Create one per process: its cache runs a cleanup
// goroutine that lives as long as the process.
type Client struct {
	api     *datadogV1.MonitorsApi
	keys    KeysFunc
	site    map[string]string // server variables; nil with a URL override
	host    string            // where requests go, for errors
	tagKey  string
	timeout time.Duration
	// maxPages bounds the pages read for one query; maxPages but in tests.
	maxPages int64

	cache *querycache.Cache[[]monitor]
}

// New returns a client configured by cfg, with the defaults of Config filled
// in. It fails when APIKey or AppKey is empty, when Site is not a site the
// Datadog client knows, when URL is not an absolute http(s) URL, when a
// duration or size is negative, or when TTL is below MinTTL.
func New(cfg Config) (*Client, error) {
	keys, err := keysOf(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Site == "" {
		cfg.Site = DefaultSite
	}
	if cfg.TagKey == "" {
		cfg.TagKey = DefaultTagKey
	}
	switch {
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("datadog: new client: Config.Timeout %v is negative", cfg.Timeout)
	case cfg.Timeout == 0:
		cfg.Timeout = DefaultTimeout
	}
	switch {
	case cfg.TTL == 0:
		cfg.TTL = DefaultTTL
	case cfg.TTL < MinTTL:
		return nil, fmt.Errorf("datadog: new client: Config.TTL %v is below %v", cfg.TTL, MinTTL)
	}
	switch {
	case cfg.CacheSize < 0:
		return nil, fmt.Errorf("datadog: new client: Config.CacheSize %d is negative", cfg.CacheSize)
	case cfg.CacheSize == 0:
		cfg.CacheSize = DefaultCacheSize
	}

	conf := dd.NewConfiguration()
	conf.HTTPClient = cfg.HTTPClient
	if conf.HTTPClient == nil {
		conf.HTTPClient = http.DefaultClient
	}
	// One request, one answer: retries would outlive the deadline the caller
	// expects, and the cache already spaces the requests out.
	conf.RetryConfiguration.EnableRetry = false
	conf.Debug = false

	c := &Client{
		keys:     keys,
		tagKey:   cfg.TagKey,
		timeout:  cfg.Timeout,
		maxPages: maxPages,
	}
	if c.host, c.site, err = servers(conf, cfg); err != nil {
		return nil, err
	}
	c.api = datadogV1.NewMonitorsApi(dd.NewAPIClient(conf))
	c.cache = querycache.New[[]monitor](cfg.CacheSize, cfg.TTL, func(query string, err error) error {
		return fmt.Errorf("datadog: listing monitors tagged %s at %s: %w", query, c.host, err)
	})
	return c, nil
}

// keysOf is the KeysFunc of cfg: Config.Keys, or the fixed Config.APIKey
// and Config.AppKey.
func keysOf(cfg Config) (KeysFunc, error) {
	keys := cfg.Keys
	switch {
	case keys != nil && (cfg.APIKey != "" || cfg.AppKey != ""):
		return nil, errors.New("datadog: new client: set Config.Keys or Config.APIKey and Config.AppKey, not both")
	case keys != nil:
	case cfg.APIKey == "":
		return nil, errors.New("datadog: new client: Config.APIKey is empty")
	case cfg.AppKey == "":
		return nil, errors.New("datadog: new client: Config.AppKey is empty")
	default:
		apiKey, appKey := cfg.APIKey, cfg.AppKey
		keys = func(context.Context) (string, string, error) { return apiKey, appKey, nil }
	}
	return keys, nil
}

// servers points conf at Config.URL, or at the Datadog site of
// Config.Site, and returns the host requests go to and the server
// variables of the site (nil with a URL).
func servers(conf *dd.Configuration, cfg Config) (host string, site map[string]string, err error) {
	if cfg.URL != "" {
		u, err := url.Parse(cfg.URL)
		if err != nil {
			return "", nil, fmt.Errorf("datadog: new client: parsing Config.URL: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", nil, fmt.Errorf("datadog: new client: Config.URL %q is not an absolute http(s) URL", cfg.URL)
		}
		// A server without variables is used as is; the operation falls back
		// to Servers as it has no entry of its own in OperationServers.
		conf.Servers = dd.ServerConfigurations{{URL: strings.TrimRight(cfg.URL, "/")}}
		delete(conf.OperationServers, listMonitorsOperation)
		host = u.Host
	} else {
		site = map[string]string{"site": cfg.Site}
		ctx := context.WithValue(context.Background(), dd.ContextServerVariables, site)
		base, err := conf.ServerURLWithContext(ctx, listMonitorsOperation)
		if err != nil {
			return "", nil, fmt.Errorf("datadog: new client: Config.Site %q (use Config.URL for other deployments): %w", cfg.Site, err)
		}
		u, err := url.Parse(base)
		if err != nil {
			return "", nil, fmt.Errorf("datadog: new client: parsing the URL %q of Config.Site %q: %w", base, cfg.Site, err)
		}
		host = u.Host
	}
	return host, site, nil
}

// KeysFunc returns the Datadog API and application keys to send.
type KeysFunc func(ctx context.Context) (apiKey, appKey string, err error)

// SecretKeys reads the keys from the Secret key with KeysFromSecret at every
// call, through reader (a cache: a call makes no request). A missing Secret
// or key is the call's error, which fails the query it was for: the builds
// it judges are unobserved, and the operator runs on.
func SecretKeys(reader client.Reader, key types.NamespacedName) KeysFunc {
	return func(ctx context.Context) (string, string, error) {
		secret := &corev1.Secret{}
		if err := reader.Get(ctx, key, secret); err != nil {
			return "", "", fmt.Errorf("datadog: reading keys from Secret %s (--datadog-secret): %w", key, err)
		}
		return KeysFromSecret(secret)
	}
}

// KeysFromSecret reads the Datadog API and application keys from the data
// keys "api-key" and "app-key" of s, trimming surrounding white space. It
// fails, naming the Secret and the key, when a key is missing or empty.
func KeysFromSecret(s *corev1.Secret) (apiKey, appKey string, err error) {
	if s == nil {
		return "", "", errors.New("datadog: reading keys: the Secret is nil")
	}
	read := func(key string) (string, error) {
		v := strings.TrimSpace(string(s.Data[key]))
		if v == "" {
			return "", fmt.Errorf("datadog: reading keys from Secret %s/%s: data key %q is missing or empty", s.Namespace, s.Name, key)
		}
		return v, nil
	}
	if apiKey, err = read(SecretAPIKey); err != nil {
		return "", "", err
	}
	if appKey, err = read(SecretAppKey); err != nil {
		return "", "", err
	}
	return apiKey, appKey, nil
}

// CacheLen returns how many answers are cached, expired ones included until
// the cache cleans them up.
func (c *Client) CacheLen() int {
	return c.cache.Len()
}

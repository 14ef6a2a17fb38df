package prometheus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/medium/picchu/integrations/querycache"
	"github.com/medium/picchu/integrations/scope"
)

// Defaults of the Config fields left zero.
const (
	// DefaultTimeout is the deadline of every query when Config.Timeout is zero.
	DefaultTimeout = 5 * time.Second
	// DefaultTTL is how long a result is cached when Config.TTL is zero.
	DefaultTTL = 10 * time.Second
	// DefaultCacheSize is the most results cached when Config.CacheSize is zero.
	DefaultCacheSize = 1024
	// MinTTL is the shortest TTL a Client accepts: the cache sweeps expired
	// results on a period of a hundredth of the TTL.
	MinTTL = time.Millisecond
)

// ErrPartialResponse is wrapped by the error of a query Prometheus (or
// Thanos) answered with warnings, such as a partial response with a store
// down: the answer may lack alerts that fire, so it counts as missing data.
var ErrPartialResponse = errors.New("partial response")

// sloAlertsQuery selects every firing SLO alert, of every app and tag, so
// that one cached result answers for all of them.
const sloAlertsQuery = `ALERTS{slo="true",alertstate="firing"}`

// Config says which Prometheus a Client asks, and how.
type Config struct {
	// Address is the base URL of the Prometheus or Thanos query API, such as
	// http://127.0.0.1:9090. It must have an http or https scheme and a host.
	Address string
	// Timeout is the deadline of every query (DefaultTimeout when zero).
	Timeout time.Duration
	// TTL is how long a query result is cached (DefaultTTL when zero, and
	// at least MinTTL otherwise).
	TTL time.Duration
	// CacheSize is the most query results cached at once (DefaultCacheSize
	// when zero).
	CacheSize int
	// RoundTripper, when set, carries the HTTP requests instead of
	// api.DefaultRoundTripper.
	RoundTripper http.RoundTripper
	// ClusterLabel is the label that names the cluster an alert or a
	// series comes from (DefaultClusterLabel when empty).
	ClusterLabel string
	// NamespaceEnforced says the Prometheus enforces the label namespace
	// on every rule and series of an app namespace's PrometheusRules and
	// ServiceMonitors (prometheus-operator's enforcedNamespaceLabel:
	// namespace), so that an app's recording rules read only its own
	// namespace's series. The baseline comparison then counts an SLI's
	// raw series in the app's namespace alone, as its recording rules do:
	// another team's series, named alike, are not counted.
	NamespaceEnforced bool
}

// DefaultClusterLabel is the label that names the cluster a series comes
// from when Config.ClusterLabel is empty: the external label a cluster's
// Prometheus sets, as Thanos and federation keep it.
const DefaultClusterLabel = "cluster"

// Client answers which SLO and canary alerts fire for an app and tag. It
// caches each query's result for the configured TTL, keeps at most
// CacheSize results, and sends one request for concurrent identical queries
// that miss the cache. A Client is safe for concurrent use; create one per
// Prometheus and keep it, as its cache holds a goroutine that sweeps expired
// results for the life of the process.
type Client struct {
	address string
	timeout time.Duration
	// cluster is the label that names a series' cluster.
	cluster model.LabelName
	// namespaceEnforced is Config.NamespaceEnforced.
	namespaceEnforced bool
	api               v1.API
	cache             *querycache.Cache[model.Vector]
}

// New returns a Client for cfg. It fails when the address is empty or not an
// http(s) URL with a host, or when a duration or size is negative.
func New(cfg Config) (*Client, error) {
	if cfg.Address == "" {
		return nil, errors.New("creating Prometheus client: empty address")
	}
	u, err := url.Parse(cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("creating Prometheus client: parsing address %q: %w", cfg.Address, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("creating Prometheus client: address %q is not an http or https URL with a host", cfg.Address)
	}
	switch {
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("creating Prometheus client for %s: negative timeout %s", cfg.Address, cfg.Timeout)
	case cfg.TTL < 0:
		return nil, fmt.Errorf("creating Prometheus client for %s: negative TTL %s", cfg.Address, cfg.TTL)
	case cfg.TTL > 0 && cfg.TTL < MinTTL:
		return nil, fmt.Errorf("creating Prometheus client for %s: TTL %s is shorter than %s", cfg.Address, cfg.TTL, MinTTL)
	case cfg.CacheSize < 0:
		return nil, fmt.Errorf("creating Prometheus client for %s: negative cache size %d", cfg.Address, cfg.CacheSize)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	apiClient, err := api.NewClient(api.Config{Address: cfg.Address, RoundTripper: cfg.RoundTripper})
	if err != nil {
		return nil, fmt.Errorf("creating Prometheus client for %s: %w", cfg.Address, err)
	}
	if cfg.ClusterLabel == "" {
		cfg.ClusterLabel = DefaultClusterLabel
	}
	if !model.LegacyValidation.IsValidLabelName(cfg.ClusterLabel) {
		return nil, fmt.Errorf("creating Prometheus client for %s: %q is not a label name", cfg.Address, cfg.ClusterLabel)
	}
	c := &Client{
		address: cfg.Address, timeout: cfg.Timeout, api: v1.NewAPI(apiClient),
		cluster: model.LabelName(cfg.ClusterLabel), namespaceEnforced: cfg.NamespaceEnforced,
	}
	c.cache = querycache.New[model.Vector](cfg.CacheSize, cfg.TTL, c.wrap)
	return c, nil
}

// FiringAlerts returns the sorted names of the alerts firing for app's
// build tag: its SLO alerts (label slo="true"), or, when canaryOnly, its
// canary alerts (label canary="true"). An alert is the build's when its
// labels app, tag and namespace are the app's, the build's and the app's
// namespace, and its cluster label, if any, names a cluster of the app's
// fleet: another team's rules, in another namespace or fleet, cannot fail
// the build (see FiringAlertsIn). The result is empty, never nil, when
// none fire.
func (c *Client) FiringAlerts(ctx context.Context, app scope.App, tag string, canaryOnly bool) ([]string, error) {
	alerts, err := c.FiringAlertsIn(ctx, app, tag, canaryOnly)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(alerts))
	for _, a := range alerts {
		names = append(names, a.Name)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Alert is an alert firing for a build, and the value of its cluster label
// ("" when it has none: it counts for every cluster).
type Alert struct {
	Name, Cluster string
}

// FiringAlertsIn returns the alerts firing for app's build tag, as
// FiringAlerts selects them, each with the cluster its cluster label
// names, sorted by name then cluster. The result is empty, never nil, when
// none fire.
func (c *Client) FiringAlertsIn(ctx context.Context, app scope.App, tag string, canaryOnly bool) ([]Alert, error) {
	query := sloAlertsQuery
	if canaryOnly {
		query = c.canaryAlertsQuery(app, tag)
	}
	vector, err := c.query(ctx, query)
	if err != nil {
		return nil, err
	}
	alerts := []Alert{}
	for _, sample := range vector {
		m := sample.Metric
		if string(m["app"]) != app.Name || string(m["tag"]) != tag || string(m[scope.LabelNamespace]) != app.Namespace ||
			!app.InFleet(string(m[c.cluster])) {
			continue
		}
		if name := string(m[model.AlertNameLabel]); name != "" {
			alerts = append(alerts, Alert{Name: name, Cluster: string(m[c.cluster])})
		}
	}
	slices.SortFunc(alerts, func(a, b Alert) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Cluster, b.Cluster))
	})
	return slices.Compact(alerts), nil
}

// Unreached returns, of metrics (the recorded total queries of app's SLOs,
// which carry the build's tag in the label "tag" and the app's namespace
// in the label "namespace"), those with no positive series for tag in the
// app's namespace and fleet: no request of the build was counted. The
// result is empty, never nil, when every one counted some.
func (c *Client) Unreached(ctx context.Context, app scope.App, tag string, metrics []string) ([]string, error) {
	out := []string{}
	for _, m := range metrics {
		vector, err := c.query(ctx, fmt.Sprintf(`count(%s > 0)`, c.recorded(app, m, tagLabel+"="+quote(tag))))
		if err != nil {
			return nil, err
		}
		if len(vector) == 0 || vector[0].Value <= 0 {
			out = append(out, m)
		}
	}
	return out, nil
}

// ReachedIn returns, for each of metrics (as Unreached), the values of the
// cluster label of its series that counted requests of tag, sorted; ""
// stands for series without the label, which count for every cluster. A
// metric that counted none has no entry.
func (c *Client) ReachedIn(ctx context.Context, app scope.App, tag string, metrics []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, m := range metrics {
		vector, err := c.query(ctx, fmt.Sprintf(`count by (%s) (%s > 0)`, c.cluster, c.recorded(app, m, tagLabel+"="+quote(tag))))
		if err != nil {
			return nil, err
		}
		for _, sample := range vector {
			if sample.Value > 0 {
				out[m] = append(out[m], string(sample.Metric[c.cluster]))
			}
		}
		slices.Sort(out[m])
	}
	return out, nil
}

// recorded selects metric, one of the series app's SLO recording rules
// write, in the app's namespace and fleet, with the further matchers.
func (c *Client) recorded(app scope.App, metric string, matchers ...string) string {
	all := append([]string{scope.LabelNamespace + "=" + quote(app.Namespace)}, matchers...)
	if m := c.fleetMatcher(app); m != "" {
		all = append(all, m)
	}
	return metric + "{" + strings.Join(all, ",") + "}"
}

// fleetMatcher matches the cluster label of series from app's fleet, or
// without the label; "" when any cluster is the app's.
func (c *Client) fleetMatcher(app scope.App) string {
	if app.Clusters == nil {
		return ""
	}
	return string(c.cluster) + "=~" + quote(fleetRegexp(app.Clusters))
}

// fleetRegexp matches exactly each of clusters, and the empty value.
func fleetRegexp(clusters []string) string {
	alternatives := make([]string, 0, len(clusters)+1)
	for _, cl := range clusters {
		alternatives = append(alternatives, regexp.QuoteMeta(cl))
	}
	return strings.Join(append(alternatives, ""), "|")
}

// Series returns what query returns now, one string per series: its
// alert name when it has one, else its labels. The result is empty, never
// nil, when the query returns nothing. Clusters' preflight alerts and
// queries are asked through it (releasemanager.SeriesSource).
func (c *Client) Series(ctx context.Context, query string) ([]string, error) {
	vector, err := c.query(ctx, query)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(vector))
	for _, sample := range vector {
		if name := string(sample.Metric[model.AlertNameLabel]); name != "" {
			out = append(out, name)
			continue
		}
		out = append(out, sample.Metric.String())
	}
	return out, nil
}

// CacheLen returns the number of query results cached now, never more than
// the configured CacheSize (expired results count until swept).
func (c *Client) CacheLen() int {
	return c.cache.Len()
}

// canaryAlertsQuery selects the canary alerts firing for app's build tag,
// one series per alert name and cluster.
func (c *Client) canaryAlertsQuery(app scope.App, tag string) string {
	return fmt.Sprintf(`sum by (app, tag, namespace, alertname, %s) (ALERTS{app=%s,tag=%s,namespace=%s,canary="true",alertstate="firing"})`,
		c.cluster, quote(app.Name), quote(tag), quote(app.Namespace))
}

// query returns the vector query evaluates to now, from the cache when it
// holds it, else from one request shared by the callers that miss it
// together (see querycache.Cache.Get).
func (c *Client) query(ctx context.Context, query string) (model.Vector, error) {
	return c.cache.Get(ctx, query, func(ctx context.Context) (model.Vector, error) {
		return c.fetch(ctx, query)
	})
}

// fetch evaluates query on Prometheus within the Client's timeout. Only a
// vector is an answer.
func (c *Client) fetch(ctx context.Context, query string) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	value, warnings, err := c.api.Query(ctx, query, time.Time{}, v1.WithTimeout(c.timeout))
	if err != nil {
		return nil, c.wrap(query, err)
	}
	if len(warnings) > 0 {
		// A partial answer (Thanos with a store down, say) may lack the
		// very alerts that fire: it is missing data, not "nothing firing",
		// and is not cached.
		return nil, c.wrap(query, fmt.Errorf("%w: %s", ErrPartialResponse, strings.Join(warnings, "; ")))
	}
	vector, ok := value.(model.Vector)
	if !ok {
		return nil, c.wrap(query, fmt.Errorf("result is a %s, not a vector", valueType(value)))
	}
	return vector, nil
}

func (c *Client) wrap(query string, err error) error {
	return fmt.Errorf("querying Prometheus at %s (%s): %w", c.address, query, err)
}

func valueType(value model.Value) string {
	if value == nil {
		return "nothing"
	}
	return value.Type().String()
}

package prometheus

import (
	"context"
	"time"

	"github.com/prometheus/common/model"

	"github.com/medium/picchu/integrations/scope"
)

// OnJoined makes c call f with the query each time a caller that missed the
// cache has joined that query's flight, so that tests can tell when
// concurrent callers all wait on one request.
func OnJoined(c *Client, f func(query string)) {
	c.cache.OnJoined(f)
}

// CanaryAlertsQuery is canaryAlertsQuery of a Client with the default
// cluster label, for tests.
func CanaryAlertsQuery(app scope.App, tag string) string { return canaryAlertsQuery(app, tag) }

// canaryAlertsQuery is the canary alerts query of a Client with the
// default cluster label.
func canaryAlertsQuery(app scope.App, tag string) string {
	return (&Client{cluster: DefaultClusterLabel}).canaryAlertsQuery(app, tag)
}

// RecordedCounts is what Counts asked before it counted raw series, and
// still asks of a query it cannot count per series: the increase of the
// recorded sum metric, by tag and cluster.
func RecordedCounts(ctx context.Context, c *Client, app scope.App, metric string, tags []string, window time.Duration) (map[string]map[string]float64, error) {
	return c.recordedCounts(ctx, app, metric, tags, roundWindow(window))
}

// HonestQuery is the query Counts asks of an SLI query, for tests: of
// any namespace and cluster.
func HonestQuery(query, tagKey, clusterLabel string, window time.Duration) (string, error) {
	return perSeries{window: window, cluster: clusterLabel}.honestQuery(query, tagKey)
}

// HonestQueryIn is the query Counts asks of an SLI query of app, for
// tests: in its namespace when enforced, and its fleet.
func HonestQueryIn(query, tagKey, clusterLabel string, app scope.App, namespaceEnforced bool, window time.Duration) (string, error) {
	c := &Client{cluster: model.LabelName(clusterLabel), namespaceEnforced: namespaceEnforced}
	return c.perSeries(app, window).honestQuery(query, tagKey)
}

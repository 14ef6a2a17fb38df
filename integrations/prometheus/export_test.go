package prometheus

// OnJoined makes c call f with the query each time a caller that missed the
// cache has joined that query's flight, so that tests can tell when
// concurrent callers all wait on one request.
func OnJoined(c *Client, f func(query string)) {
	c.cache.OnJoined(f)
}

// CanaryAlertsQuery is canaryAlertsQuery of a Client with the default
// cluster label, for tests.
func CanaryAlertsQuery(app, tag string) string { return canaryAlertsQuery(app, tag) }

// canaryAlertsQuery is the canary alerts query of a Client with the
// default cluster label.
func canaryAlertsQuery(app, tag string) string {
	return (&Client{cluster: DefaultClusterLabel}).canaryAlertsQuery(app, tag)
}

package prometheus

// OnJoined makes c call f with the query each time a caller that missed the
// cache has joined that query's flight, so that tests can tell when
// concurrent callers all wait on one request.
func OnJoined(c *Client, f func(query string)) {
	c.cache.OnJoined(f)
}

// CanaryAlertsQuery is canaryAlertsQuery, for tests.
var CanaryAlertsQuery = canaryAlertsQuery

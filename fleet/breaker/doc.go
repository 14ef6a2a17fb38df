// Package breaker is the per-cluster circuit breaker of Picchu, the
// multi-cluster progressive delivery operator.
//
// Picchu talks to the API server of every target cluster of every fleet. When
// one of them is down or hung, a request to it can wait for a full client
// timeout, and a reconcile that touches many clusters waits on the slowest.
// Each target cluster therefore gets one Breaker. It watches the outcome of
// the requests sent to its cluster and, after a run of failures, fails
// further requests at once with an *OpenError instead of letting them wait
// on a server that is not answering.
//
// # Policy
//
// A Breaker is Closed while its cluster answers: every request goes through.
// After Policy.Failures consecutive failures (3 by default) it opens. While
// Open, requests fail fast until RetryAt. The open period after the n-th
// consecutive opening is Policy.Backoff: an exponential backoff from
// Policy.MinBackoff (1 s by default) doubling up to Policy.MaxBackoff (5 min
// by default), with "equal jitter" (a random point in the upper half of the
// period) so that many operators, or many breakers, do not probe a
// recovering cluster all at once.
//
// At RetryAt the breaker half-opens and lets exactly one request through as a
// probe; the others keep failing fast. A successful probe closes the breaker
// and resets the backoff; a failed probe opens it again for a longer period.
// A probe that never reports back (a lost goroutine, a hung call) is replaced
// by a new one after Policy.MaxBackoff, so it cannot wedge the breaker.
//
// A failure is a transport error, a timeout, or a 502, 503 or 504
// response; any other response, 4xx, 429 and 500 included, shows the server
// is answering and counts as a success (a Kubernetes API server answers 500
// when one request fails, an admission webhook say, not when it is down). A request canceled by its own caller
// counts as neither.
//
// # Use
//
// Transport wraps the http.RoundTripper of a cluster's client, and works with
// client-go's rest.Config.Wrap:
//
//	b := breaker.New(breaker.Policy{})
//	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
//		return breaker.Transport(rt, b)
//	})
//
// Code that is not HTTP can use Allow, then report the outcome with Success,
// Failure or Abandon. Snapshot gives the breaker's state for status and
// metrics, and WithOnChange reports every state transition.
package breaker

package kit

import (
	"context"
	"sort"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// minReadTimeout is the least time a cluster has to answer a read before it
// counts as down (see ReadTimeout).
const minReadTimeout = time.Second

// NamedClient is a cluster's client and its name.
type NamedClient struct {
	Name   string
	Client client.Client
}

// SortedClients returns clients as NamedClients in name order.
func SortedClients(clients map[string]client.Client) []NamedClient {
	out := make([]NamedClient, 0, len(clients))
	for name, c := range clients {
		out = append(out, NamedClient{Name: name, Client: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ReadTimeout is how long a cluster read every interval has to answer:
// the interval, and at least a second.
func ReadTimeout(interval time.Duration) time.Duration {
	return max(interval, minReadTimeout)
}

// Result is what was read from one cluster.
type Result[T any] struct {
	Cluster string
	Value   T
	Err     error
}

// ReadAll reads every cluster at once, each within timeout, and returns the
// results in the clusters' order.
func ReadAll[T any](ctx context.Context, clusters []NamedClient, timeout time.Duration,
	read func(context.Context, client.Client) (T, error)) []Result[T] {
	results := make([]Result[T], len(clusters))
	var wg sync.WaitGroup
	for i, c := range clusters {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			v, err := read(ctx, c.Client)
			results[i] = Result[T]{Cluster: c.Name, Value: v, Err: err}
		})
	}
	wg.Wait()
	return results
}

// Reporter logs the errors of each cluster when they start or change, and
// when the cluster answers again, so that a cluster that is down does not
// fill the log every interval. It is not safe for concurrent use.
type Reporter struct {
	logf func(format string, args ...any)
	what string            // what is read, to say that it works again
	last map[string]string // last error logged, by cluster
}

// NewReporter returns a Reporter of the reads of what, logging to logf.
func NewReporter(logf func(string, ...any), what string) *Reporter {
	return &Reporter{logf: logf, what: what, last: map[string]string{}}
}

// Failed reports that cluster failed to answer with err.
func (r *Reporter) Failed(cluster string, err error) {
	msg := err.Error()
	if r.last[cluster] == msg {
		return
	}
	r.last[cluster] = msg
	r.logf("cluster %s: %v (skipped until it answers)", cluster, err)
}

// OK reports that cluster answered.
func (r *Reporter) OK(cluster string) {
	if _, failing := r.last[cluster]; failing {
		delete(r.last, cluster)
		r.logf("cluster %s: %s: answering again", cluster, r.what)
	}
}

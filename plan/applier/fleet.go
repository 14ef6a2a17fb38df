package applier

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"sync"
	"time"
)

// Result is the outcome of a plan on one cluster.
type Result struct {
	Cluster string
	Err     error
}

// Results are the outcomes of a plan on every cluster, sorted by cluster name.
type Results []Result

// Err joins the errors of every cluster that failed, or is nil.
func (rs Results) Err() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return errors.Join(errs...)
}

// Failed lists the clusters whose plan failed.
func (rs Results) Failed() []string {
	var out []string
	for _, r := range rs {
		if r.Err != nil {
			out = append(out, r.Cluster)
		}
	}
	return out
}

// ApplyFleet applies p to every cluster at once. Each cluster gets its own
// timeout; one cluster's failure, slowness or panic never stops the others
// and is reported in its Result, naming the cluster.
func ApplyFleet(ctx context.Context, clusters []*Cluster, p Plan, timeout time.Duration) Results {
	results := make(Results, len(clusters))
	var wg sync.WaitGroup
	for i, c := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = Result{Cluster: c.Name(), Err: applyOne(ctx, c, p, timeout)}
		}()
	}
	wg.Wait()
	sort.Slice(results, func(i, j int) bool { return results[i].Cluster < results[j].Cluster })
	return results
}

func applyOne(ctx context.Context, c *Cluster, p Plan, timeout time.Duration) (err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			c.Log.Error(fmt.Errorf("%v", r), "plan panicked", "stack", string(debug.Stack()))
			err = fmt.Errorf("cluster %s: plan panicked: %v", c.Name(), r)
		}
	}()
	if err := p.Apply(ctx, c); err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return fmt.Errorf("cluster %s: plan did not finish within %s: %w", c.Name(), timeout, err)
		}
		return fmt.Errorf("cluster %s: %w", c.Name(), err)
	}
	return nil
}

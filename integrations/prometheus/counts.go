package prometheus

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/medium/picchu/integrations/scope"
)

// SLI is an SLO's indicator as the baseline comparison counts it: its own
// queries, and the series its recording rules write from them.
type SLI struct {
	// TotalQuery and ErrorQuery are the SLO's serviceLevelIndicator
	// queries, each a sum of counters.
	TotalQuery, ErrorQuery string
	// TagKey is the label of the queries' series that holds the build's
	// tag ("tag" when empty).
	TagKey string
	// RecordedTotal and RecordedErrors name the series the SLO's
	// recording rules write from the queries ("<app>:<slo>:total" and
	// "<app>:<slo>:errors"), with the tag in the label "tag". They are
	// counted instead when a query is not countable (CheckCountable), or
	// when the total query's raw series are not there.
	RecordedTotal, RecordedErrors string
}

// SLICounts are the requests and errors of builds over a window, each by
// tag and by the value of the cluster label ("" for series without it).
type SLICounts struct {
	Total, Errors map[string]map[string]float64
	// Recorded says why the counts come from the recorded series, whose
	// increase counts a pod's whole history again when its series leaves
	// the sum; "" when they come from the raw series, per series.
	Recorded string
}

// Counts returns how many requests and errors each of tags counted over
// the window ending now, by tag and cluster: the increase of each raw
// series sli's queries select, added up as the queries add them up, with
// the tag copied from sli.TagKey to the label "tag", by tag and cluster
// label. So a pod that restarts, scales down or is retired in the window
// counts what it served and no more. When a query is not countable, or
// the total query's raw series are not there for any of tags but the
// recorded total is (Prometheus or Thanos holds only the recording rules'
// series), it counts the recorded series instead, and SLICounts.Recorded
// says why. The window is rounded up to a whole ten seconds, so that the
// answer of one run is cached for the next.
//
// Only app's series count: the recorded series of its namespace and fleet
// (scope.App), and, when the Prometheus enforces the namespace label
// (Config.NamespaceEnforced), the raw series of its namespace alone; a
// series whose cluster label names a cluster outside the fleet never does.
func (c *Client) Counts(ctx context.Context, app scope.App, sli SLI, tags []string, window time.Duration) (SLICounts, error) {
	if len(tags) == 0 {
		return SLICounts{Total: map[string]map[string]float64{}, Errors: map[string]map[string]float64{}}, nil
	}
	window = roundWindow(window)
	ps := c.perSeries(app, window)
	totalQuery, totalErr := ps.honestQuery(sli.TotalQuery, sli.TagKey)
	errorQuery, errorErr := ps.honestQuery(sli.ErrorQuery, sli.TagKey)
	switch {
	case totalErr != nil:
		return c.recordedSLICounts(ctx, app, sli, tags, window, "totalQuery "+totalErr.Error())
	case errorErr != nil:
		return c.recordedSLICounts(ctx, app, sli, tags, window, "errorQuery "+errorErr.Error())
	}
	total, err := c.countsOf(ctx, totalQuery, tags)
	if err != nil {
		return SLICounts{}, err
	}
	if len(total) == 0 && sli.RecordedTotal != "" {
		recorded, err := c.recordedCounts(ctx, app, sli.RecordedTotal, tags, window)
		if err != nil {
			return SLICounts{}, err
		}
		if len(recorded) > 0 {
			return c.recordedSLICounts(ctx, app, sli, tags, window, fmt.Sprintf("no raw series of totalQuery at %s, where %s has some", c.address, sli.RecordedTotal))
		}
	}
	errs, err := c.countsOf(ctx, errorQuery, tags)
	if err != nil {
		return SLICounts{}, err
	}
	return SLICounts{Total: total, Errors: errs}, nil
}

// recordedSLICounts counts sli's recorded series over window, for why.
func (c *Client) recordedSLICounts(ctx context.Context, app scope.App, sli SLI, tags []string, window time.Duration, why string) (SLICounts, error) {
	total, err := c.recordedCounts(ctx, app, sli.RecordedTotal, tags, window)
	if err != nil {
		return SLICounts{}, err
	}
	errs, err := c.recordedCounts(ctx, app, sli.RecordedErrors, tags, window)
	if err != nil {
		return SLICounts{}, err
	}
	return SLICounts{Total: total, Errors: errs, Recorded: why}, nil
}

// recordedCounts returns how much metric (an SLO's recorded total or
// errors, with the build's tag in the label "tag") grew over window for
// each of tags, by tag and cluster label: the increase of the recorded
// sum, which takes a series leaving the sum for a counter reset. Only the
// series of app's namespace and fleet count.
func (c *Client) recordedCounts(ctx context.Context, app scope.App, metric string, tags []string, window time.Duration) (map[string]map[string]float64, error) {
	if metric == "" {
		return nil, fmt.Errorf("counting the recorded series of an SLI at %s: no recorded series named", c.address)
	}
	alternatives := make([]string, len(tags))
	for i, t := range tags {
		alternatives[i] = regexp.QuoteMeta(t)
	}
	return c.countsOf(ctx, fmt.Sprintf(`sum by (tag, %s) (increase(%s[%s]))`,
		c.cluster, c.recorded(app, metric, tagLabel+"=~"+quote(strings.Join(alternatives, "|"))), model.Duration(window)), tags)
}

// countsOf returns what query (one series per tag and cluster label)
// says of each of tags, by tag and cluster label; the tags not asked for
// are left out, and a tag with no series has no entry.
func (c *Client) countsOf(ctx context.Context, query string, tags []string) (map[string]map[string]float64, error) {
	vector, err := c.query(ctx, query)
	if err != nil {
		return nil, err
	}
	asked := map[string]bool{}
	for _, t := range tags {
		asked[t] = true
	}
	out := map[string]map[string]float64{}
	for _, sample := range vector {
		tag, cluster := string(sample.Metric[tagLabel]), string(sample.Metric[c.cluster])
		if !asked[tag] {
			continue
		}
		if out[tag] == nil {
			out[tag] = map[string]float64{}
		}
		out[tag][cluster] += float64(sample.Value)
	}
	return out, nil
}

// perSeries is how app's raw series are counted over window: by the
// cluster label, from the app's fleet, and, where the Prometheus enforces
// the namespace label, from the app's namespace.
func (c *Client) perSeries(app scope.App, window time.Duration) perSeries {
	ps := perSeries{window: window, cluster: string(c.cluster), fleet: app.Clusters}
	if c.namespaceEnforced {
		ps.namespace = app.Namespace
	}
	return ps
}

// roundWindow is window rounded up to a whole ten seconds, at least ten.
func roundWindow(window time.Duration) time.Duration {
	return max(((window+10*time.Second-1)/(10*time.Second))*10*time.Second, 10*time.Second)
}

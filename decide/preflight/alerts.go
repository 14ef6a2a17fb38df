package preflight

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// shown is the most firing series an alerts failure names.
const shown = 5

// AlertsQuery is the PromQL query that selects the firing alerts a
// Cluster's preflight names, with its alertLabels; "" when it names none.
func AlertsQuery(p *picchuv1alpha1.ClusterPreflight) string {
	if p == nil || len(p.Alerts) == 0 {
		return ""
	}
	names := slices.Clone(p.Alerts)
	slices.Sort(names)
	matchers := []string{`alertstate="firing"`, "alertname=~" + strconv.Quote(strings.Join(names, "|"))}
	keys := make([]string, 0, len(p.AlertLabels))
	for k := range p.AlertLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		matchers = append(matchers, k+"="+strconv.Quote(p.AlertLabels[k]))
	}
	return "ALERTS{" + strings.Join(matchers, ",") + "}"
}

// Queries are the PromQL queries of a Cluster's preflight: its alerts
// (AlertsQuery), then its query.
func Queries(p *picchuv1alpha1.ClusterPreflight) []string {
	var out []string
	if q := AlertsQuery(p); q != "" {
		out = append(out, q)
	}
	if p != nil && strings.TrimSpace(p.Query) != "" {
		out = append(out, p.Query)
	}
	return out
}

// Answer is what Prometheus said to one of Queries: the series it
// returned (their alert names, or their labels), or why it could not say.
type Answer struct {
	Query  string
	Series []string
	Err    error
}

// CheckAlerts says whether the answers to a Cluster's preflight queries
// let a new build in: nil when every query was answered with no series.
// A query that could not be answered fails the check: no build goes onto
// a cluster whose state cannot be seen.
func CheckAlerts(answers []Answer) *Failure {
	var firing []string
	for _, a := range answers {
		if a.Err != nil {
			return Unreadable(Alerts, a.Err)
		}
		firing = append(firing, a.Series...)
	}
	if len(firing) == 0 {
		return nil
	}
	slices.Sort(firing)
	firing = slices.Compact(firing)
	more := ""
	if len(firing) > shown {
		more = fmt.Sprintf(" and %d more", len(firing)-shown)
		firing = firing[:shown]
	}
	return &Failure{Check: Alerts, Detail: fmt.Sprintf("firing: %s%s", strings.Join(firing, ", "), more)}
}

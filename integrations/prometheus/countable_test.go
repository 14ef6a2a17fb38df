package prometheus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/integrations/scope"
)

// TestHonestQuery_CountsEachRawSeries: the query Counts asks of each
// countable shape takes the increase of every selector before anything
// adds series up, keeps the query's sums and relabellings, copies the tag
// to "tag", and keeps the clusters apart (the cluster label joins every by
// and on list and leaves every without and ignoring list) unless the query
// writes the cluster label itself. Every query it writes parses.
func TestHonestQuery_CountsEachRawSeries(t *testing.T) {
	for _, tc := range []struct {
		name, query, tagKey, want string
	}{
		{"the samples' shape",
			`sum by (destination_version) (istio_requests_total{reporter="destination",destination_app="demo"})`, "destination_version",
			`sum by (tag, cluster) (label_replace(sum by (destination_version, cluster) (increase(istio_requests_total{destination_app="demo",reporter="destination"}[30s])), "tag", "$1", "destination_version", "(.*)"))`},
		{"the cluster written by the query: its groupings as written",
			`sum by (destination_version, cluster) (label_replace(istio_requests_total{destination_app="demo"}, "cluster", "$1", "destination_cluster", "(.*)"))`, "destination_version",
			`sum by (tag, cluster) (label_replace(sum by (destination_version, cluster) (label_replace(increase(istio_requests_total{destination_app="demo"}[30s]), "cluster", "$1", "destination_cluster", "(.*)")), "tag", "$1", "destination_version", "(.*)"))`},
		{"the tag in tag already, a bare selector",
			`requests_total{app="shop"}`, "",
			`sum by (tag, cluster) (increase(requests_total{app="shop"}[30s]))`},
		{"sum without keeps the cluster",
			`sum without (pod, cluster, instance) (requests_total)`, "tag",
			`sum by (tag, cluster) (sum without (pod, instance) (increase(requests_total[30s])))`},
		{"a sum of everything keeps the cluster",
			`(sum(requests_total))`, "tag",
			`sum by (tag, cluster) ((sum by (cluster) (increase(requests_total[30s]))))`},
		{"label_join",
			`sum by (tag) (label_join(requests_total, "tag", "-", "version", "variant"))`, "tag",
			`sum by (tag, cluster) (sum by (tag, cluster) (label_join(increase(requests_total[30s]), "tag", "-", "version", "variant")))`},
		{"errors as all but successes, matched on",
			`sum by (tag) (requests_total) - on (tag) sum by (tag) (requests_total{code!~"5.."})`, "tag",
			`sum by (tag, cluster) (sum by (tag, cluster) (increase(requests_total[30s])) - on (tag, cluster) sum by (tag, cluster) (increase(requests_total{code!~"5.."}[30s])))`},
		{"two counters added, ignoring",
			`sum by (tag) (http_total) + ignoring (cluster) sum by (tag) (grpc_total)`, "tag",
			`sum by (tag, cluster) (sum by (tag, cluster) (increase(http_total[30s])) + sum by (tag, cluster) (increase(grpc_total[30s])))`},
		{"or",
			`sum by (tag) (new_total) or sum by (tag) (old_total)`, "tag",
			`sum by (tag, cluster) (sum by (tag, cluster) (increase(new_total[30s])) or sum by (tag, cluster) (increase(old_total[30s])))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := prometheus.CheckCountable(tc.query); err != nil {
				t.Errorf("CheckCountable: %v, want nil", err)
			}
			got, err := prometheus.HonestQuery(tc.query, tc.tagKey, "cluster", 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("honest query\n got %s\nwant %s", got, tc.want)
			}
			if _, err := parser.ParseExpr(got); err != nil {
				t.Errorf("%s does not parse: %v", got, err)
			}
		})
	}
}

// TestCheckCountable_SaysWhyAShapeCannotBeCounted: every shape whose
// increase is not the sum of its raw series' increases is refused, saying
// which part and why; so is a query that does not parse.
func TestCheckCountable_SaysWhyAShapeCannotBeCounted(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{`sum(rate(requests_total[5m]))`, "rate is not label_replace or label_join"},
		{`sum(increase(requests_total[5m]))`, "increase is not label_replace or label_join"},
		{`max by (tag) (requests_total)`, "is not a sum: the increase of a max is not the max of the increases"},
		{`count(requests_total)`, "is not a sum"},
		{`sum(requests_total offset 5m)`, "reads its series at another time than the window's"},
		{`sum(requests_total @ 1700000000)`, "reads its series at another time than the window's"},
		{`sum(requests_total) * 2`, "* is not +, - or or"},
		{`sum(requests_total) > 0`, "> is not +, - or or"},
		{`sum(requests_total) + 1`, "not an operation between two vectors"},
		{`sum(requests_total) and sum(ok_total)`, "and is not +, - or or"},
		{`sum(requests_total) or vector(0)`, "vector is not label_replace or label_join"},
		{`42`, "is a constant, not a counter"},
		{`-sum(requests_total)`, "only sums, label_replace, label_join"},
		{`sum(label_replace(rate(requests_total[1m]), "tag", "$1", "version", "(.*)"))`, "rate is not label_replace or label_join"},
		{`sum(requests_total`, "does not parse as PromQL"},
	} {
		err := prometheus.CheckCountable(tc.query)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckCountable(%s) = %v, want an error saying %q", tc.query, err, tc.want)
		}
		if _, herr := prometheus.HonestQuery(tc.query, "tag", "cluster", 30*time.Second); herr == nil {
			t.Errorf("HonestQuery(%s) wrote a query for a shape it cannot count", tc.query)
		}
	}
}

// TestHonestQueryIn_SelectsTheAppsNamespaceAndFleet: of an app, every raw
// selector is confined to its fleet's clusters (or series without the
// cluster label), and, when the Prometheus enforces the namespace label,
// to its namespace: another team's series of the same name count for
// neither build.
func TestHonestQueryIn_SelectsTheAppsNamespaceAndFleet(t *testing.T) {
	app := scope.App{Name: "shop", Namespace: "shop-production", Clusters: []string{"east", "west"}}
	query := `sum by (tag) (requests_total) - on (tag) sum by (tag) (requests_total{code!~"5.."})`
	for _, tc := range []struct {
		enforced bool
		want     string
	}{
		{false, `sum by (tag, cluster) (sum by (tag, cluster) (increase(requests_total{cluster=~"east|west|"}[30s])) - on (tag, cluster) sum by (tag, cluster) (increase(requests_total{cluster=~"east|west|",code!~"5.."}[30s])))`},
		{true, `sum by (tag, cluster) (sum by (tag, cluster) (increase(requests_total{cluster=~"east|west|",namespace="shop-production"}[30s])) - on (tag, cluster) sum by (tag, cluster) (increase(requests_total{cluster=~"east|west|",code!~"5..",namespace="shop-production"}[30s])))`},
	} {
		got, err := prometheus.HonestQueryIn(query, "tag", "cluster", app, tc.enforced, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("enforced %v:\n got %s\nwant %s", tc.enforced, got, tc.want)
		}
		if _, err := parser.ParseExpr(got); err != nil {
			t.Errorf("enforced %v: %s does not parse: %v", tc.enforced, got, err)
		}
	}
}

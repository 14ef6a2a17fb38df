package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/medium/picchu/test/kit"
)

// dashboardQuery is one query of a panel of the Grafana dashboard.
type dashboardQuery struct {
	panel, expr string
}

// dashboardQueries reads config/grafana/picchu.json and returns every
// panel's queries, its variables set: $app to app, $target to any target,
// $__rate_interval to a minute.
func dashboardQueries(t *testing.T, app string) []dashboardQuery {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(kit.RepoRoot(), "config", "grafana", "picchu.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("reading the dashboard: %v", err)
	}
	vars := strings.NewReplacer("$app", app, "$target", ".+", "$__rate_interval", "1m")
	var out []dashboardQuery
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.Contains(vars.Replace(q.Expr), "$") {
				t.Errorf("panel %q: a variable the test does not set in %s", p.Title, q.Expr)
			}
			out = append(out, dashboardQuery{panel: p.Title, expr: vars.Replace(q.Expr)})
		}
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no query")
	}
	return out
}

// checkDashboard runs every query of the Grafana dashboard against the
// fleet's Prometheus, which scraped the operator while app released: each
// must run, and return at least one series.
func checkDashboard(t *testing.T, app string) {
	t.Helper()
	queries := dashboardQueries(t, app)
	if err := kit.Poll(context.Background(), time.Second, time.Minute, "every dashboard query returns data", func(ctx context.Context) error {
		var empty []string
		for _, q := range queries {
			n, err := promQuery(ctx, q.expr)
			if err != nil {
				return fmt.Errorf("panel %q: %w", q.panel, err)
			}
			if n == 0 {
				empty = append(empty, fmt.Sprintf("%q (%s)", q.panel, q.expr))
			}
		}
		if len(empty) > 0 {
			return fmt.Errorf("no series for %s", strings.Join(empty, ", "))
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	t.Logf("the dashboard's %d queries all return data", len(queries))
}

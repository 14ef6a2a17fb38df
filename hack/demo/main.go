// Command demo runs Picchu's story on the local fleet (see test/e2e/story):
// it brings the fleet up (reusing what runs), builds and starts the
// operator against the delivery cluster, releases v1, then v2 while v1
// retires, then watches v3's failing canary be rolled back, with a live
// view. It prints a summary and how to explore, leaves the fleet running
// (make fleet-down stops it) and exits 0 when every phase ended within its
// budget.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

func main() {
	kit.RunCommand("demo", func(ctx context.Context, _ []string) error { return run(ctx, os.Stdout) })
}

func run(ctx context.Context, out *os.File) error {
	router := picchuv1alpha1.Router(os.Getenv("ROUTER"))
	switch router {
	case "", picchuv1alpha1.RouterIstio, picchuv1alpha1.RouterGatewayAPI:
	default:
		return fmt.Errorf("ROUTER=%s: want %s or %s", router, picchuv1alpha1.RouterIstio, picchuv1alpha1.RouterGatewayAPI)
	}
	start := time.Now()
	view := story.NewView(out)
	view.Printf("Picchu demo: bringing up the local fleet (delivery, east, west)")
	f, err := fleet.Up(ctx, fleet.Options{Log: out})
	if err != nil {
		return err
	}
	view.Printf("Building and starting the operator against the delivery cluster")
	binary, err := fleet.OperatorBinary(ctx)
	if err != nil {
		return err
	}
	if err := f.StartOperator(ctx, binary); err != nil {
		return err
	}
	view.Printf("Operator ready (log %s). The story: v1 released; v2 canaried and ramped while v1 retires; v3 fails its canary and is rolled back.", f.OperatorLog())
	if router != "" {
		view.Printf("Every build routes with router %s.", router)
	}
	dash, err := serveDashboard(ctx, f)
	if err != nil {
		return err
	}
	defer func() { _ = dash.Stop() }()
	view.Printf("Watch it in your browser: %s (kubectl picchu dashboard, served by the demo while it runs)", dash.Printed)
	res, runErr := story.Run(ctx, story.Options{Fleet: f, Observe: view.Show, Logf: view.Printf, Router: router})
	fmt.Fprintln(out)
	late := summary(out, res, time.Since(start))
	fmt.Fprintln(out)
	fmt.Fprint(out, f.Describe())
	fmt.Fprintf(out, "  The demo's builds: config/samples/demo/revision-v{1,2,3}.yaml; apply your own with:\n    %s\n",
		f.KubectlCommand(f.Delivery, "apply --server-side -f <revision.yaml>"))
	fmt.Fprintf(out, "  Dashboard (the demo served it at %s while it ran): %s\n", dash.URL, f.DashboardCommand())
	fmt.Fprintf(out, "  Grafana: import config/grafana/picchu.json with a Prometheus data source at %s (it scrapes the operator).\n",
		f.PrometheusURL)
	switch {
	case runErr != nil:
		return runErr
	case late > 0:
		return fmt.Errorf("%d phase(s) took longer than their budget", late)
	}
	return nil
}

// serveDashboard serves the dashboard of the fleet's delivery cluster on
// port 3100, as `kubectl picchu dashboard` does, or on a free port when
// that one is taken; what it reports goes to logs/dashboard.log in the fleet's
// directory.
func serveDashboard(ctx context.Context, f *fleet.Fleet) (*fleet.Dashboard, error) {
	log, err := os.Create(filepath.Join(f.Dir, "logs", "dashboard.log"))
	if err != nil {
		return nil, fmt.Errorf("creating the dashboard's log: %w", err)
	}
	dash, err := f.ServeDashboard(ctx, 3100, log)
	if err != nil {
		dash, err = f.ServeDashboard(ctx, 0, log)
	}
	return dash, err
}

// summary prints each phase's timing against its budget and the final
// weights, and returns the number of phases over budget.
func summary(out io.Writer, res *story.Result, total time.Duration) int {
	fmt.Fprintf(out, "Summary (%s in all)\n", total.Round(time.Second))
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PHASE\tTOOK\tDEPLOY\tCONFIGURED DELAYS\tBUDGET (1.2 × DELAYS + DEPLOY)\t")
	late := 0
	for _, p := range res.Phases {
		verdict := "ok"
		if !p.Within() {
			verdict = "OVER BUDGET"
			late++
		}
		took := "unfinished"
		if !p.Ended.IsZero() {
			took = round(p.Took())
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s (%s)\t%s\t%s\n", p.Name, took, round(p.DeployTook()),
			round(p.Delays), p.DelaysExplained, round(p.Budget()), verdict)
	}
	_ = w.Flush()
	forecasts(out, res.Phases)
	fmt.Fprintln(out, "Final weights:")
	for _, c := range res.Final.Clusters {
		routes := c.Routes()
		if c.Err != nil {
			routes = "unreadable: " + c.Err.Error()
		}
		fmt.Fprintf(out, "  %-6s %s\n", c.Name, routes)
	}
	var states []string
	for _, b := range res.Final.Builds {
		s := b.Tag + " " + b.State
		if b.FailedReason != "" {
			s += " (" + b.FailedReason + ")"
		}
		states = append(states, s)
	}
	fmt.Fprintf(out, "Builds: %s\n", strings.Join(states, "; "))
	return late
}

func round(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

// forecasts prints, for each phase, when kubectl picchu plan had its build
// released before it was applied, against how long the phase took. The
// forecast assumes every check passes and pods start at once: a failing
// build's phase ends in a rollback, not in the release forecast.
func forecasts(out io.Writer, phases []story.Phase) {
	fmt.Fprintln(out, "Forecasts (kubectl picchu plan -f, just before each build was applied):")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PHASE\tFORECAST\tTOOK\tOF WHICH DEPLOY\tHOLDS FORECAST\t")
	for _, p := range phases {
		forecast := "none"
		if d, ok := p.ForecastTook(); ok {
			forecast = "released in " + round(d)
		} else if p.Forecast != nil {
			forecast = fmt.Sprintf("%s: %s", p.Forecast.Outcome, p.Forecast.Why)
		}
		took := "unfinished"
		if !p.Ended.IsZero() {
			took = round(p.Took())
		}
		var holds []string
		if p.Forecast != nil {
			for _, h := range p.Forecast.Holds {
				holds = append(holds, h.Cause+" "+h.Detail)
			}
		}
		if len(holds) == 0 {
			holds = []string{"none"}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t\n", p.Name, forecast, took, round(p.DeployTook()), strings.Join(holds, "; "))
	}
	_ = w.Flush()
	fmt.Fprintln(out, "  (a forecast assumes every check passes: a build that fails ends its phase in a rollback instead)")
}

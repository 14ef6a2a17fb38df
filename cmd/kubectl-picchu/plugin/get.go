package plugin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/medium/picchu/decide/release"
)

// clearScreen moves the cursor home and clears a terminal.
const clearScreen = "\x1b[H\x1b[2J"

func (r *runner) newGetCommand() *cobra.Command {
	var watch bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "get [APP]",
		Short: "List the apps' releases, or the builds of one app in each target",
		Long: `List the apps' releases, or the builds of one app in each target.

Without APP, print one row per app and target, from its ReleaseManager: the
build releasing (the newest build taking traffic), its percent and wave.

With APP, print a table per target of the app's builds, newest first: state,
percent of traffic (WEIGHT), the percent each cluster routes to it, its
available and desired pods, its next step (the percent it steps to and when,
"due" when the step waits only on Picchu, "paused" when paused) and the
alerts that fired for it.

With --watch, print again every --interval until interrupted: in place on a
terminal, each time after a blank line otherwise.`,
		Example: `  # List every app of the current namespace, one row per target
  kubectl picchu get

  # Show the builds of app demo in each target
  kubectl picchu get demo -n picchu

  # Follow the release of demo, redrawn every second
  kubectl picchu get demo --watch`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval <= 0 {
				return fmt.Errorf("--interval must be positive, not %s", interval)
			}
			s, err := r.connect()
			if err != nil {
				return err
			}
			render := func(ctx context.Context, w io.Writer) error { return r.getApps(ctx, s, w) }
			if len(args) == 1 {
				render = func(ctx context.Context, w io.Writer) error { return r.getApp(ctx, s, args[0], w) }
			}
			if !watch {
				return render(cmd.Context(), r.Out)
			}
			return r.watch(cmd.Context(), interval, render)
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "Print again every --interval until interrupted.")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "How often --watch prints.")
	return cmd
}

// watch renders a frame every interval until ctx is done.
func (r *runner) watch(ctx context.Context, interval time.Duration, render func(context.Context, io.Writer) error) error {
	tty := isTerminal(r.Out)
	for frame := 0; ; frame++ {
		var buf bytes.Buffer
		if err := render(ctx, &buf); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		prefix := ""
		switch {
		case tty:
			prefix = clearScreen
		case frame > 0:
			prefix = "\n"
		}
		if _, err := r.Out.Write(append([]byte(prefix), buf.Bytes()...)); err != nil {
			return fmt.Errorf("writing the output: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// isTerminal says w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// getApps prints a row per ReleaseManager of the namespace.
func (r *runner) getApps(ctx context.Context, s *session, w io.Writer) error {
	rms, err := s.listManagers(ctx)
	if err != nil {
		return err
	}
	if len(rms) == 0 {
		_, err := fmt.Fprintf(r.ErrOut, "No release managers found in %s namespace.\n", s.namespace)
		return err
	}
	now := r.Now()
	t := newTable(w, "", "APP", "TARGET", "RELEASING", "WAVE", "ETA", "AGE")
	for _, rm := range rms {
		releasing, wave, finish := none, none, none
		if rel := rm.Status.Releasing; rel != nil {
			releasing = rel.Tag + " " + percent(rel.Percent)
			wave = orNone(rel.Wave)
			finish = eta(rel.ForecastFinish, now)
		}
		t.add(rm.Spec.App, rm.Spec.Target, releasing, wave, finish, since(now, rm.CreationTimestamp.Time))
	}
	return t.flush()
}

// getApp prints a table per target of the app's builds.
func (r *runner) getApp(ctx context.Context, s *session, name string, w io.Writer) error {
	a, err := s.loadApp(ctx, name)
	if err != nil {
		return err
	}
	now := r.Now()
	for i, target := range a.targets() {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Target: %s\n", cell(target))
		t := newTable(w, "", "TAG", "STATE", "WEIGHT", "CLUSTERS", "PODS", "NEXT", "ALERTS")
		for _, b := range a.builds(target) {
			current, desired := b.pods()
			t.add(b.tag, orNone(b.state()), percent(b.percent()), clusters(b),
				fmt.Sprintf("%d/%d", current, desired), next(b, now), joined(b.alerts()))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}

// clusters is the percent each cluster routes to the build: "east=40,west=40".
func clusters(b build) string {
	if b.record == nil {
		return none
	}
	var out []string
	for _, c := range b.record.Clusters {
		out = append(out, fmt.Sprintf("%s=%d", c.Name, c.Percent))
	}
	slices.Sort(out)
	return joined(out)
}

// next is the next step of a releasing build: "80% in 3m", "due", or
// "paused"; <none> for a build that is not ramping.
func next(b build, now time.Time) string {
	if b.paused() && !finished(b.state()) {
		return "paused"
	}
	if b.state() != string(release.Releasing) || b.spec == nil || b.record == nil {
		return none
	}
	info, current := b.spec.Release, b.record.CurrentPercent
	if current >= release.MaxPercent(info) {
		return none
	}
	step := percent(release.NextPercent(info, current))
	if b.record.LastUpdated == nil {
		return "due"
	}
	due := b.record.LastUpdated.Add(release.StepDelay(info))
	if !due.After(now) {
		return "due"
	}
	return step + " in " + duration.HumanDuration(due.Sub(now))
}

// finished says a build in state is done with: a pause no longer matters.
func finished(state string) bool {
	return release.State(state).IsFinished()
}

// eta is when a release should be done, as its ReleaseManager forecast it
// (status.releasing.forecastFinish): "in 4m", "late 1m" once that has
// passed, <none> when there is no forecast.
func eta(finish *metav1.Time, now time.Time) string {
	switch {
	case finish == nil:
		return none
	case finish.After(now):
		return "in " + duration.HumanDuration(finish.Sub(now))
	}
	return "late " + duration.HumanDuration(now.Sub(finish.Time))
}

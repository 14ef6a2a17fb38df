package plugin

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

func (r *runner) newStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status APP",
		Short: "Show the current release of an app in each target as a timeline",
		Long: `Show the current release of an app in each target as a timeline.

For each target, print the build releasing, then a line per known time of
its current builds (the builds from the newest down to the oldest that still
takes traffic): when each started deploying, its canary, waiting for its
release schedule and its release ramp, and the last step of each cluster with
its percent. Then the conditions of the target's ReleaseManager other than
Ready=True, which say what it waits on and why.

Last, the Events of the app's Revisions and ReleaseManagers, oldest first.`,
		Example: `  # Show how the release of app demo went, and what it waits on
  kubectl picchu status demo -n picchu`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := r.connect()
			if err != nil {
				return err
			}
			a, err := s.loadApp(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			events, err := s.events(cmd.Context(), a)
			if err != nil {
				return err
			}
			return r.printStatus(r.Out, a, events)
		},
	}
}

// step is one line of a timeline.
type step struct {
	at    time.Time
	order int
	tag   string
	what  string
}

// printStatus prints, for each of a's targets, its release, timeline,
// verdicts and conditions, then events, oldest first, with ages from now.
func (r *runner) printStatus(w io.Writer, a *app, events []corev1.Event) error {
	now := r.Now()
	for i, target := range a.targets() {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := printTarget(w, a, target, now); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	return printEvents(w, events, now)
}

// printTarget prints the release of a in target: the build releasing, the
// timeline and verdicts of its current builds, and the conditions of its
// ReleaseManager.
func printTarget(w io.Writer, a *app, target string, now time.Time) error {
	fmt.Fprintf(w, "Target: %s\n", cell(target))
	rm := a.manager(target)
	fmt.Fprintf(w, "Releasing: %s\n", cell(releasing(rm)))
	if err := printTimeline(w, timeline(currentBuilds(a.builds(target))), now); err != nil {
		return err
	}
	if err := printVerdicts(w, currentBuilds(a.builds(target))); err != nil {
		return err
	}
	return printConditions(w, rm)
}

// releasing says which build rm releases, at which percent and wave;
// none when it releases none, or there is no rm.
func releasing(rm *picchuv1alpha1.ReleaseManager) string {
	if rm == nil || rm.Status.Releasing == nil {
		return none
	}
	rel := rm.Status.Releasing
	out := rel.Tag + " at " + percent(rel.Percent)
	if rel.Wave != "" {
		out += ", wave " + rel.Wave
	}
	return out
}

// printTimeline prints steps, with their ages from now.
func printTimeline(w io.Writer, steps []step, now time.Time) error {
	if len(steps) == 0 {
		fmt.Fprintln(w, "Timeline: <none>")
		return nil
	}
	fmt.Fprintln(w, "Timeline:")
	t := newTable(w, "  ", "AGE", "BUILD", "STEP")
	for _, s := range steps {
		t.add(since(now, s.at), s.tag, s.what)
	}
	return t.flush()
}

// printConditions prints the conditions of rm other than Ready=True.
func printConditions(w io.Writer, rm *picchuv1alpha1.ReleaseManager) error {
	var conditions []metav1.Condition
	if rm != nil {
		for _, c := range rm.Status.Conditions {
			if c.Type != picchuv1alpha1.ConditionReady || c.Status != metav1.ConditionTrue {
				conditions = append(conditions, c)
			}
		}
	}
	if len(conditions) == 0 {
		fmt.Fprintln(w, "Conditions: <none>")
		return nil
	}
	fmt.Fprintln(w, "Conditions:")
	t := newTable(w, "  ", "TYPE", "STATUS", "REASON", "MESSAGE")
	for _, c := range conditions {
		t.add(c.Type, string(c.Status), orNone(c.Reason), orNone(c.Message))
	}
	return t.flush()
}

// printEvents prints events, with how long ago each was last seen and,
// when repeated, how often over how long.
func printEvents(w io.Writer, events []corev1.Event, now time.Time) error {
	if len(events) == 0 {
		_, err := fmt.Fprintln(w, "Events: <none>")
		return err
	}
	fmt.Fprintln(w, "Events:")
	t := newTable(w, "  ", "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE")
	for _, e := range events {
		seen := since(now, eventTime(e))
		if e.Count > 1 && !e.FirstTimestamp.IsZero() {
			seen += fmt.Sprintf(" (x%d over %s)", e.Count, since(now, e.FirstTimestamp.Time))
		}
		object := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
		t.add(seen, e.Type, e.Reason, object, strings.TrimSpace(e.Message))
	}
	return t.flush()
}

// printVerdicts prints, when some build has any, what the judgment holds
// against each build: the figures of its baseline comparison, and per
// cluster the alerts that named it and its verdict there.
func printVerdicts(w io.Writer, builds []build) error {
	type row struct{ tag, cluster, alerts, verdict string }
	var rows []row
	for _, b := range builds {
		rec := b.record
		if rec == nil {
			continue
		}
		if rec.Verdict != "" {
			rows = append(rows, row{b.tag, "*", none, rec.Verdict})
		}
		for _, c := range rec.Clusters {
			if len(c.TriggeredAlerts) > 0 || c.Verdict != "" {
				rows = append(rows, row{b.tag, c.Name, orNone(strings.Join(c.TriggeredAlerts, ",")), orNone(c.Verdict)})
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "Verdicts:")
	t := newTable(w, "  ", "BUILD", "CLUSTER", "ALERTS", "VERDICT")
	for _, r := range rows {
		t.add(r.tag, r.cluster, r.alerts, r.verdict)
	}
	return t.flush()
}

// currentBuilds are the builds of the current release, from builds (newest
// first): from the newest down to the oldest that takes traffic, or the
// newest alone when none does.
func currentBuilds(builds []build) []build {
	last := 0
	for i, b := range builds {
		if b.hasTraffic() {
			last = i
		}
	}
	if len(builds) == 0 {
		return nil
	}
	return builds[:last+1]
}

// timeline is every known time of the builds, oldest first.
func timeline(builds []build) []step {
	var steps []step
	for order, b := range builds {
		rec := b.record
		if rec == nil {
			continue
		}
		add := func(ts *picchuv1alpha1.Timestamp, what string) {
			if ts != nil && !ts.IsZero() {
				steps = append(steps, step{at: ts.Time, order: order, tag: b.tag, what: what})
			}
		}
		add(rec.DeployingStartTimestamp, "deploying started")
		add(rec.CanaryStartTimestamp, "canary started")
		add(rec.PendingReleaseStartTimestamp, "pending release (waiting for its schedule)")
		add(rec.ReleaseStartTimestamp, "release started")
		add(rec.WaveStarted, fmt.Sprintf("wave %d started", rec.Wave+1))
		for _, c := range rec.Clusters {
			add(c.LastUpdated, fmt.Sprintf("%s at %s", c.Name, percent(c.Percent)))
		}
		add(rec.Paused, "paused")
		if ig := rec.IgnoredRollback; ig != nil {
			add(&ig.Time, "rollback to it ignored: "+ig.Reason)
		}
		for _, retry := range rec.Retries {
			add(&retry.Time, fmt.Sprintf("retried (was %s at peak %s)", retry.State, percent(retry.PeakPercent)))
		}
		// A state with a start time of its own is said by the start times above.
		if !release.State(rec.State.Current).HasStartTime() {
			what := rec.State.Current
			if len(rec.TriggeredAlerts) > 0 {
				what += ": " + strings.Join(rec.TriggeredAlerts, ",") + " fired"
				if rec.TriggeredWhere != "" {
					what += " (" + rec.TriggeredWhere + ")"
				}
			}
			add(rec.State.LastUpdated, what)
		}
	}
	slices.SortStableFunc(steps, func(a, b step) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(b.order, a.order))
	})
	return steps
}

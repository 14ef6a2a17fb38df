package plugin

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func (r *runner) newHistoryCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "history APP",
		Short: "List every build of an app, oldest first",
		Long: `List every build of an app, oldest first.

Print a row per Revision of the app: its tag, its age, its state and the
highest percent of traffic it took in each target (a column per target),
why it failed when it did (its failed-reason annotation), and how many times
it was retried (the most retries any target's ReleaseManager records).`,
		Example: `  # List the builds of app demo
  kubectl picchu history demo -n picchu`,
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
			now := r.Now()
			targets := a.targets()
			header := []string{"TAG", "CREATED"}
			for _, target := range targets {
				header = append(header, strings.ToUpper(target))
			}
			// builds[i] are the builds of targets[i] by tag.
			builds := make([]map[string]build, len(targets))
			for i, target := range targets {
				builds[i] = map[string]build{}
				for _, b := range a.builds(target) {
					builds[i][b.tag] = b
				}
			}
			t := newTable(r.Out, "", append(header, "FAILED", "RETRIES")...)
			for _, rev := range a.revisions {
				row := []string{rev.Spec.App.Tag, since(now, rev.CreationTimestamp.Time)}
				retries := 0
				for i := range targets {
					b, ok := builds[i][rev.Spec.App.Tag]
					row = append(row, targetHistory(b, ok))
					if ok && b.record != nil {
						retries = max(retries, len(b.record.Retries))
					}
				}
				failed := none
				if rev.Spec.Failed {
					failed = "yes"
					if reason := rev.Annotations[picchuv1alpha1.AnnotationFailedReason]; reason != "" {
						failed = reason
					}
				}
				t.add(append(row, failed, fmt.Sprint(retries))...)
			}
			return t.flush()
		},
	}
}

// targetHistory is the state and peak percent of a build in a target:
// "released (peak 100%)", or <none> when it has no state there.
func targetHistory(b build, ok bool) string {
	if !ok || b.state() == "" {
		return none
	}
	return fmt.Sprintf("%s (peak %s)", b.state(), percent(b.peak()))
}

package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/forecast"
)

func (r *runner) newPlanCommand() *cobra.Command {
	var file, tag, output string
	cmd := &cobra.Command{
		Use:   "plan [APP]",
		Short: "Forecast a release: every cluster's steps, holds and finish",
		Long: `Forecast a release: every cluster's steps, holds and finish.

For each target of the build, print when each cluster of the target's fleet
takes each step, wave by wave, what holds the build on the way (its canary,
the release schedule, a holiday, a freeze, a wave's bake, a pause) and
until when, and when the release is done.

The forecast runs Picchu's own release decisions forward on a virtual clock
from what the delivery cluster holds now (the Clusters, their labels and
freezes, the waves, the builds running), as if every check passed: no
alert fires, every cluster answers, pods start at once. It reads; it
changes nothing.

With APP, the build is the app's newest (--tag names another). With -f,
it is a Revision not applied yet: the API server admits it in a dry run
first (its defaults, its validation), and a Revision it would refuse is
refused here, with the API server's reason.`,
		Example: `  # Forecast the newest build of app demo
  kubectl picchu plan demo -n picchu

  # Forecast a build before applying it, for a script
  kubectl picchu plan -f revision.yaml -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case file == "" && len(args) == 0:
				return fmt.Errorf("name an app, or a Revision with -f")
			case file != "" && len(args) > 0:
				return fmt.Errorf("name an app or a Revision with -f, not both")
			case output != "" && output != "text" && output != "json" && output != "yaml":
				return fmt.Errorf("--output %q: want text, json or yaml", output)
			}
			s, err := r.connect()
			if err != nil {
				return err
			}
			var forecasts []forecast.Forecast
			if file != "" {
				forecasts, err = s.planFile(cmd.Context(), r, file)
			} else {
				forecasts, err = s.planApp(cmd.Context(), r, args[0], tag)
			}
			if err != nil {
				return err
			}
			return writeForecasts(r.Out, forecasts, output)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "a Revision (YAML or JSON) to forecast before it is applied; - reads standard input")
	cmd.Flags().StringVar(&tag, "tag", "", "the build of APP to forecast (the newest by default)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text, json or yaml")
	return cmd
}

// planApp forecasts the build tag of app (the newest when empty) in each
// of its targets.
func (s *session) planApp(ctx context.Context, r *runner, name, tag string) ([]forecast.Forecast, error) {
	a, err := s.loadApp(ctx, name)
	if err != nil {
		return nil, err
	}
	var rev *picchuv1alpha1.Revision
	switch {
	case tag != "":
		if rev = a.revision(tag); rev == nil {
			return nil, fmt.Errorf("app %q has no Revision with tag %q in namespace %q", name, tag, s.namespace)
		}
	case len(a.revisions) > 0:
		rev = &a.revisions[len(a.revisions)-1]
	default:
		return nil, fmt.Errorf("app %q has no Revision in namespace %q", name, s.namespace)
	}
	return s.forecast(ctx, r, a, rev)
}

// planFile admits the Revision in file in a dry run and forecasts it in
// each of its targets.
func (s *session) planFile(ctx context.Context, r *runner, file string) ([]forecast.Forecast, error) {
	rev, err := readRevision(r.In, file)
	if err != nil {
		return nil, err
	}
	if rev.Namespace == "" {
		rev.Namespace = s.namespace
	}
	s.namespace = rev.Namespace
	if err := s.client.Create(ctx, rev, client.DryRunAll, client.FieldOwner(FieldManager)); apierrors.IsAlreadyExists(err) {
		// A Revision of that name exists: the forecast is of the change.
		existing := &picchuv1alpha1.Revision{}
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(rev), existing); err != nil {
			return nil, fmt.Errorf("reading Revision %s/%s: %w", rev.Namespace, rev.Name, err)
		}
		rev.ResourceVersion = existing.ResourceVersion
		err = s.client.Update(ctx, rev, client.DryRunAll, client.FieldOwner(FieldManager))
		if err != nil {
			return nil, fmt.Errorf("the API server refuses Revision %s/%s: %w", rev.Namespace, rev.Name, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("the API server refuses Revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	a, err := s.loadApp(ctx, rev.Spec.App.Name)
	switch {
	case errors.Is(err, errNoApp):
		// A first build: the app has nothing yet.
		a = &app{name: rev.Spec.App.Name}
	case err != nil:
		return nil, err
	}
	// The build replaces the Revision of its name, if any, and is the newest.
	a.revisions = slices.DeleteFunc(a.revisions, func(o picchuv1alpha1.Revision) bool { return o.Name == rev.Name })
	a.revisions = append(a.revisions, *rev)
	return s.forecast(ctx, r, a, rev)
}

// readRevision reads one Revision from file, or from in when file is "-".
func readRevision(in io.Reader, file string) (*picchuv1alpha1.Revision, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(in)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	rev := &picchuv1alpha1.Revision{}
	if err := yaml.Unmarshal(data, rev); err != nil {
		return nil, fmt.Errorf("reading a Revision from %s: %w", file, err)
	}
	if rev.Kind != "Revision" || rev.APIVersion != picchuv1alpha1.GroupVersion.String() {
		return nil, fmt.Errorf("%s holds a %s %s, want a Revision of %s", file, rev.APIVersion, rev.Kind, picchuv1alpha1.GroupVersion)
	}
	return rev, nil
}

// forecast forecasts rev in each of its targets, from what the delivery
// cluster holds of app a and of the namespace's Clusters.
func (s *session) forecast(ctx context.Context, r *runner, a *app, rev *picchuv1alpha1.Revision) ([]forecast.Forecast, error) {
	clusters := &picchuv1alpha1.ClusterList{}
	if err := s.client.List(ctx, clusters, client.InNamespace(s.namespace)); err != nil {
		return nil, fmt.Errorf("reading the clusters of namespace %q: %w", s.namespace, err)
	}
	now := r.Now()
	var out []forecast.Forecast
	for _, target := range rev.Spec.Targets {
		rm := a.manager(target.Name)
		if rm == nil {
			// The target has not run the app yet.
			rm = &picchuv1alpha1.ReleaseManager{}
			rm.Namespace, rm.Name = s.namespace, picchuv1alpha1.ReleaseManagerName(a.name, target.Name)
			rm.Spec = picchuv1alpha1.ReleaseManagerSpec{App: a.name, Target: target.Name, Fleet: target.Fleet}
		}
		f, err := releasemanager.Forecast(releasemanager.ForecastInput{
			ReleaseManager: rm, Revisions: a.revisions, Clusters: clusters.Items, Tag: rev.Spec.App.Tag, Now: now,
		})
		if err != nil {
			return nil, fmt.Errorf("forecasting %s of %s in %s: %w", rev.Spec.App.Tag, a.name, target.Name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// writeForecasts prints the forecasts as text, or as a JSON or YAML list.
func writeForecasts(w io.Writer, forecasts []forecast.Forecast, output string) error {
	switch output {
	case "json":
		data, err := json.MarshalIndent(forecasts, "", "  ")
		if err != nil {
			return fmt.Errorf("printing the forecast: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	case "yaml":
		data, err := yaml.Marshal(forecasts)
		if err != nil {
			return fmt.Errorf("printing the forecast: %w", err)
		}
		_, err = w.Write(data)
		return err
	}
	for i, f := range forecasts {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := f.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

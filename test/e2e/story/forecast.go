package story

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
	"github.com/medium/picchu/forecast"
	"github.com/medium/picchu/test/e2e/fleet"
)

// Plan is what `kubectl picchu plan -f` says of rev before it is applied
// on the fleet's delivery cluster: its forecast in its first target. The
// plugin runs in-process, as a person would run it.
func Plan(ctx context.Context, f *fleet.Fleet, rev *picchuv1alpha1.Revision) (forecast.Forecast, error) {
	dir, err := os.MkdirTemp("", "picchu-plan-")
	if err != nil {
		return forecast.Forecast{}, err
	}
	defer os.RemoveAll(dir)
	rev = rev.DeepCopy()
	rev.APIVersion, rev.Kind = picchuv1alpha1.GroupVersion.String(), "Revision"
	data, err := yaml.Marshal(rev)
	if err != nil {
		return forecast.Forecast{}, fmt.Errorf("writing %s for kubectl picchu plan: %w", rev.Name, err)
	}
	file := filepath.Join(dir, rev.Name+".yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return forecast.Forecast{}, err
	}
	var out, errOut bytes.Buffer
	cmd := plugin.NewRootCommandWithOptions(plugin.Options{IOStreams: genericiooptions.IOStreams{
		In: strings.NewReader(""), Out: &out, ErrOut: &errOut}})
	cmd.SetArgs([]string{"--kubeconfig", f.Delivery.Kubeconfig, "plan", "-f", file, "-o", "json"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		return forecast.Forecast{}, fmt.Errorf("kubectl picchu plan -f %s: %w (%s)", rev.Name, err, errOut.String())
	}
	var forecasts []forecast.Forecast
	if err := json.Unmarshal(out.Bytes(), &forecasts); err != nil || len(forecasts) == 0 {
		return forecast.Forecast{}, fmt.Errorf("kubectl picchu plan -f %s printed %q: %v", rev.Name, out.String(), err)
	}
	return forecasts[0], nil
}

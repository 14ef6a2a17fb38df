package admission_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/integrations/prometheus"
)

// TestRevision_PortNamesAreKubernetesPortNames sends port names to the API
// server without webhooks: the schema accepts exactly those Kubernetes
// accepts as a container port's name (IANA service names), which is also
// what a Service port's name and target port take.
func TestRevision_PortNamesAreKubernetesPortNames(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{
		"http", "grpc-web", "h2c", "a", "9a", "a9", "x-1-y", "http-for-theapi", "status", "0-a",
		"HTTP", "Http", "http_alt", "http.alt", "-http", "http-", "grpc--web", "8080", "1-2", "http-for-the-api", "é", " http",
	} {
		t.Run(name, func(t *testing.T) {
			want := validation.IsValidPortName(name)
			err := create(ctx, bare.Delivery.Client, object(t, "Revision", revisionJSON(fmt.Sprintf(`"ports": [{"name": %q}]`, name))))
			switch {
			case len(want) == 0 && err != nil:
				t.Errorf("Kubernetes accepts port name %q; the schema rejects it: %v", name, err)
			case len(want) > 0 && err == nil:
				t.Errorf("Kubernetes rejects port name %q (%s); the schema accepts it", name, strings.Join(want, "; "))
			case err != nil && !strings.Contains(err.Error(), "spec.targets[0].ports[0].name"):
				t.Errorf("the rejection does not name spec.targets[0].ports[0].name: %v", err)
			}
		})
	}
}

// TestSamples_AreAccepted creates every Picchu object of config/samples, as
// a dry run, on the API server with webhooks: the samples stay valid, with
// no warning about their SLI queries; every enabled SLO's queries, with a
// baseline or not, are of the shape the baseline comparison counts per raw
// series (prometheus.CheckCountable), as users copy them, and one sample
// shows a baseline comparison.
func TestSamples_AreAccepted(t *testing.T) {
	ctx := context.Background()
	files, err := filepath.Glob("../../../config/samples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	demo, err := filepath.Glob("../../../config/samples/demo/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, demo...)
	if len(files) < 4 {
		t.Fatalf("found only the samples %v", files)
	}
	baselines := 0 // sample Revisions that compare builds with their baseline
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---")) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatalf("%s, document %d: %v", file, i, err)
			}
			if u.GroupVersionKind().Group != picchuv1alpha1.GroupVersion.Group {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", filepath.Base(file), u.GetName()), func(t *testing.T) {
				warnings.take()
				if err := hookedClient.Create(ctx, u, client.DryRunAll); err != nil {
					t.Errorf("rejected: %v", err)
				}
				for _, w := range warnings.take() {
					if strings.Contains(w, "serviceLevelIndicator") {
						t.Errorf("warned: %s", w)
					}
				}
				if u.GetKind() == "Revision" && checkSampleSLIs(t, doc) {
					baselines++
				}
			})
		}
	}
	if baselines == 0 {
		t.Error("no sample compares builds with their baseline (canary.baseline): none shows its queries' shape")
	}
}

// checkSampleSLIs checks that the SLI queries of every enabled SLO of a
// sample Revision are countable per raw series, and says whether one of
// them compares builds with their baseline.
func checkSampleSLIs(t *testing.T, doc []byte) (baseline bool) {
	t.Helper()
	rev := &picchuv1alpha1.Revision{}
	if err := yaml.Unmarshal(doc, rev); err != nil {
		t.Fatal(err)
	}
	for _, target := range rev.Spec.Targets {
		for _, slo := range target.ServiceLevelObjectives {
			if !slo.Enabled {
				continue
			}
			baseline = baseline || slo.ServiceLevelIndicator.Canary.Baseline != nil
			for _, q := range []string{slo.ServiceLevelIndicator.TotalQuery, slo.ServiceLevelIndicator.ErrorQuery} {
				if err := prometheus.CheckCountable(q); err != nil {
					t.Errorf("%s: SLO %s: %s: %v", target.Name, slo.Name, q, err)
				}
			}
		}
	}
	return baseline
}

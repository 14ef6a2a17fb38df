package admission_test

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sampleOverrides are the values this test sets instead of its generic
// sample ("sample", 1, 1.5...). The first group are values the original
// accepted that are likely mistakes: Picchu accepts them as the original
// did and its webhook warns about each; they are here to send them. The
// second group replace a generic sample the original took at admission but
// could not run with (each rejected by our schema, naming the field): no
// manifest the original ran holds one, so none applies unchanged only by
// this swap. Keys are field paths as package crdfields writes them; the
// cases are in docs/api.md, "Where Picchu's admission differs from the
// original's". (The original's own sample manifests are not in this
// repository: its source is not read here.)
var sampleOverrides = map[string]any{
	// Accepted as the original did; the webhook warns about each.
	".spec.targets[].release.schedule":                                                       "weekly",
	".spec.targets[].release.max":                                                            int64(150),
	".spec.targets[].canary.percent":                                                         int64(150),
	".spec.targets[].release.geometricScaling.start":                                         int64(150),
	".spec.targets[].release.linearScaling.increment":                                        int64(150),
	".spec.targets[].serviceLevelObjectives[].serviceLevelIndicator.canary.allowancePercent": 150.5,

	// The original could not run with the generic sample.
	// Prometheus-operator's ServiceMonitor schema, on every cluster, wants a URL.
	".spec.targets[].serviceMonitors[].spec.endpoints[].proxyUrl": "http://proxy.example:3128",
	// A port and the ingress it is exposed on, which defaultIngressPorts
	// must name (the original's webhook refused other names).
	".spec.targets[].ports[].name":        "http",
	".spec.targets[].ports[].ingresses[]": "public",
	".spec.targets[].defaultIngressPorts": map[string]any{"public": "http"},
	// The original's webhook refused what is not "true" or a duration.
	".spec.targets[].karpenterDoNotDisrupt": "30m",
	// Quantities, numbers and percents the original parsed at run time and
	// failed on when they were not.
	".spec.targets[].scale.targetRequestsRate":                                                     "50",
	".spec.targets[].scale.worker.secondsToProcessOneJobString":                                    "3",
	".spec.targets[].serviceLevelObjectives[].objectivePercentString":                              "99.9",
	".spec.targets[].serviceLevelObjectives[].serviceLevelIndicator.canary.allowancePercentString": "150",
	".spec.scalingFactorString":                                                                    "0.5",
	// The sample 1 never ramps (the original's bug 22).
	".spec.targets[].release.geometricScaling.factor": int64(3),
	// A Cluster's API server is a URL; the original could not connect to "sample".
	".spec.config.server": "https://127.0.0.1:6443",
}

// refusedFields are reference fields our schema refuses any value of, each
// with why (docs/api.md, "Still rejected"); no manifest sets them.
var refusedFields = map[string]string{
	// A recording rule among alertRules could write another app's SLO
	// series: another team's build would be judged by it (issue 59).
	".spec.targets[].alertRules[].record": "recording rules could be counted as another app's SLO series",
}

// exclusiveFields lists reference fields that our rules (and the original's
// webhook) forbid together; each group is exercised by a manifest of its own.
var exclusiveFields = [][]string{
	{".spec.targets[].podDisruptionBudget.maxUnavailable", ".spec.targets[].podDisruptionBudget.minAvailable"},
}

// sample builds a value for the reference schema ref at path, setting every
// field ref has. ours is the same field in our schema: where it keeps an
// enum, its first value is taken (each such enum is one the original, or
// the cluster objects it wrote, held to as well: docs/api.md). Our defaults
// are not used: a value is whatever the original took, so that what our
// schema rejects shows. variant picks one field of each exclusive group.
func sample(path string, ref, ours *apiextensionsv1.JSONSchemaProps, variant int, seen map[string]bool) any {
	seen[path] = true
	if v, ok := sampleOverrides[path]; ok {
		return v
	}
	if ours != nil && len(ours.Enum) > 0 {
		var v any
		if err := json.Unmarshal(ours.Enum[0].Raw, &v); err == nil {
			return v
		}
	}
	switch {
	case ref.XIntOrString:
		return "1"
	case ref.Type == "string":
		switch {
		case ref.Format == "date-time":
			return "2026-01-02T03:04:05Z"
		case ref.Format == "byte":
			return "c2FtcGxl"
		case strings.HasSuffix(path, "Delay") || strings.HasSuffix(path, "delay") ||
			strings.HasSuffix(path, "imeout") || strings.HasSuffix(path, "failAfter") ||
			strings.HasSuffix(path, "alertAfter") || strings.HasSuffix(path, "interval") ||
			strings.HasSuffix(path, "scrapeTimeout") || strings.HasSuffix(path, ".for"):
			return "30s"
		}
		return "sample"
	case ref.Type == "integer":
		return int64(1)
	case ref.Type == "number":
		return 1.5
	case ref.Type == "boolean":
		return true
	case ref.Type == "array":
		var item *apiextensionsv1.JSONSchemaProps
		if ours != nil && ours.Items != nil {
			item = ours.Items.Schema
		}
		return []any{sample(path+"[]", ref.Items.Schema, item, variant, seen)}
	case ref.Type == "object" && len(ref.Properties) > 0:
		out := map[string]any{}
		for name, child := range ref.Properties {
			childPath := path + "." + name
			if _, refused := refusedFields[childPath]; refused || excluded(childPath, variant) {
				continue
			}
			var ourChild *apiextensionsv1.JSONSchemaProps
			if ours != nil {
				if c, ok := ours.Properties[name]; ok {
					ourChild = &c
				}
			}
			out[name] = sample(childPath, &child, ourChild, variant, seen)
		}
		return out
	case ref.Type == "object" && ref.AdditionalProperties != nil && ref.AdditionalProperties.Schema != nil:
		return map[string]any{"sample-key": sample(path+"{}", ref.AdditionalProperties.Schema, nil, variant, seen)}
	case ref.XPreserveUnknownFields != nil && *ref.XPreserveUnknownFields:
		return map[string]any{"sample-key": "sample"}
	default:
		// An object schema with no fields (such as an embedded ObjectMeta)
		// keeps no field in either CRD: only its presence can be sent.
		return map[string]any{}
	}
}

func underOverride(path string) bool {
	for p := range sampleOverrides {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func excluded(path string, variant int) bool {
	for _, group := range exclusiveFields {
		for i, p := range group {
			if p == path && i != variant%len(group) {
				return true
			}
		}
	}
	return false
}

// leaves lists every leaf of a JSON value with its path.
func leaves(v any, path string, out map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			leaves(child, path+"."+k, out)
		}
	case []any:
		for i, child := range v {
			leaves(child, path+"["+string(rune('0'+i))+"]", out)
		}
	default:
		out[path] = v
	}
}

func normalize(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCRDs_ReferenceManifestsApply builds, for each kind, manifests that set
// every spec field path of the original's CRD, applies them to a bare API
// server with our CRDs, and checks that every value is stored as sent:
// nothing rejected, nothing pruned.
func TestCRDs_ReferenceManifestsApply(t *testing.T) {
	ctx := context.Background()
	for _, ref := range reference(t) {
		refSchema, err := ref.Schema()
		if err != nil {
			t.Fatalf("rebuilding the reference schema: %v", err)
		}
		refSpec := refSchema.Properties["spec"]
		ourSpec := ours(t, ref).Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		seen := map[string]bool{}
		for variant := range 2 {
			t.Run(ref.Kind+"/"+string(rune('a'+variant)), func(t *testing.T) {
				spec := sample(".spec", &refSpec, &ourSpec, variant, seen).(map[string]any)
				u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
				u.SetAPIVersion(ref.Group + "/v1alpha1")
				u.SetKind(ref.Kind)
				u.SetNamespace("picchu")
				u.SetName(uniqueName(strings.ToLower(ref.Kind)))
				sent := map[string]any{}
				leaves(normalize(t, spec), ".spec", sent)
				if err := bare.Delivery.Client.Create(ctx, u.DeepCopy()); err != nil {
					t.Fatalf("applying a manifest with every reference field: %v", err)
				}
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(u.GroupVersionKind())
				if err := bare.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
					t.Fatalf("reading it back: %v", err)
				}
				stored := map[string]any{}
				leaves(normalize(t, got.Object["spec"]), ".spec", stored)
				var paths []string
				for p := range sent {
					paths = append(paths, p)
				}
				sort.Strings(paths)
				for _, p := range paths {
					if !reflect.DeepEqual(stored[p], sent[p]) {
						t.Errorf("%s: sent %v, stored %v", p, sent[p], stored[p])
					}
				}
				t.Logf("%d values stored as sent", len(paths))
			})
		}
		// Together the manifests set every reference field path, except where
		// a value is given whole (an override such as defaultIngressPorts).
		for _, f := range ref.Fields {
			if _, refused := refusedFields[f.Path]; refused {
				continue
			}
			if p := f.Path; (p == ".spec" || strings.HasPrefix(p, ".spec.")) && !seen[p] && !underOverride(p) {
				t.Errorf("%s: %s is set by no manifest", ref.Kind, p)
			}
		}
	}
}

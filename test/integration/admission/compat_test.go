package admission_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/crdfields"
	"github.com/medium/picchu/test/kit"
)

// referenceFields is where the original operator's field paths and their
// types are kept (written by hack/reference-fields from its CRDs).
var referenceFields = filepath.Join("testdata", "reference-fields.txt")

// reference returns the original operator's CRDs: their names and every
// field path outside status with its type.
func reference(t *testing.T) []crdfields.CRD {
	t.Helper()
	f, err := os.Open(referenceFields)
	if err != nil {
		t.Fatalf("reading the original's field paths: %v", err)
	}
	defer f.Close()
	crds, err := crdfields.Read(f)
	if err != nil {
		t.Fatalf("%s: %v", referenceFields, err)
	}
	if len(crds) != 6 {
		t.Fatalf("%s: want the original's 6 kinds, found %d", referenceFields, len(crds))
	}
	return crds
}

// ours loads our CRD of the reference's kind from config/crd/bases.
func ours(t *testing.T, ref crdfields.CRD) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return loadCRD(t, filepath.Join(kit.RepoRoot(), "config", "crd", "bases", ref.Group+"_"+ref.Plural+".yaml"))
}

func loadCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return crd
}

// fieldType is what must match for a field path: its JSON type, whether it is
// int-or-string, and its format.
type fieldType struct {
	Type        string
	IntOrString bool
	Format      string
}

func typeOf(f crdfields.Field) fieldType {
	return fieldType{Type: f.Type, IntOrString: f.IntOrString, Format: f.Format}
}

// TestCRDs_AcceptEveryReferenceFieldPath checks that every field path of the
// original operator's CRDs (outside status) is in ours with the same type, so
// every manifest written for it is accepted and nothing in it is pruned.
func TestCRDs_AcceptEveryReferenceFieldPath(t *testing.T) {
	for _, ref := range reference(t) {
		t.Run(ref.Kind, func(t *testing.T) {
			crd := ours(t, ref)
			if ref.Kind != crd.Spec.Names.Kind || ref.Group != crd.Spec.Group ||
				ref.Plural != crd.Spec.Names.Plural || ref.Scope != string(crd.Spec.Scope) {
				t.Fatalf("names differ: reference %s %s/%s %s, ours %s %s/%s %s",
					ref.Kind, ref.Group, ref.Plural, ref.Scope,
					crd.Spec.Names.Kind, crd.Spec.Group, crd.Spec.Names.Plural, crd.Spec.Scope)
			}
			if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
				return v.Name == "v1alpha1" && v.Served && v.Storage
			}) {
				t.Fatalf("our CRD has no served storage version v1alpha1")
			}
			got, err := crdfields.FromCRD(crd)
			if err != nil {
				t.Fatalf("listing our field paths: %v", err)
			}
			checked := 0
			for _, want := range ref.Fields {
				checked++
				have, ok := got.Field(want.Path)
				switch {
				case !ok:
					t.Errorf("%s: missing from our CRD (reference type %+v)", want.Path, typeOf(want))
				case typeOf(have) != typeOf(want):
					t.Errorf("%s: type %+v, reference %+v", want.Path, typeOf(have), typeOf(want))
				}
			}
			if checked < 5 {
				t.Fatalf("only %d field paths checked: the reference was not read", checked)
			}
			t.Logf("%d reference field paths present with the same type", checked)
		})
	}
}

// keda's own types (embedded in scale.kedaWorker) document few of their fields.
var undocumentedUpstream = []string{
	".spec.targets[].scale.kedaWorker.advanced.",
	".spec.targets[].scale.kedaWorker.fallback.",
	".spec.targets[].scale.kedaWorker.triggers[].",
}

// TestCRDs_EveryFieldDocumented checks that every field of our CRDs has a
// description for kubectl explain, except inside KEDA's embedded types.
func TestCRDs_EveryFieldDocumented(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(kit.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 6 {
		t.Fatalf("want our 6 CRDs, found %d: %v", len(files), err)
	}
	for _, f := range files {
		crd := loadCRD(t, f)
		var walk func(s *apiextensionsv1.JSONSchemaProps, path string)
		walk = func(s *apiextensionsv1.JSONSchemaProps, path string) {
			for name, child := range s.Properties {
				p := path + "." + name
				if child.Description == "" && p != ".apiVersion" && p != ".kind" && p != ".metadata" && !upstream(p) {
					t.Errorf("%s: %s has no description", crd.Spec.Names.Kind, p)
				}
				walk(&child, p)
			}
			if s.Items != nil && s.Items.Schema != nil {
				walk(s.Items.Schema, path+"[]")
			}
		}
		walk(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, "")
	}
}

func upstream(path string) bool {
	for _, prefix := range undocumentedUpstream {
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

// TestRevision_AcceptsWhatTheOriginalAccepted sends values the original
// accepted, and that are likely mistakes, to the API server with and
// without webhooks: each is stored as sent, and the webhook warns, naming
// the field and saying what Picchu does with it (the same as the
// original). docs/api.md lists them under "Where Picchu's admission differs
// from the original's"; what it still rejects is in
// TestRevision_SchemaRejectsInvalidSpecs, each a value the original broke on
// at run time.
func TestRevision_AcceptsWhatTheOriginalAccepted(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		fields   string
		stored   []string // a field path within the target (such as ports[1].port), then its value as stored
		warnings []string
	}{
		{"unknown schedule", `"release": {"schedule": "weekly"}`,
			[]string{"release.schedule", "weekly"},
			[]string{`spec.targets[0].release.schedule: unknown schedule "weekly" behaves as "always"`}},
		{"release max above 100", `"release": {"max": 150}`,
			[]string{"release.max", "150"},
			[]string{"spec.targets[0].release.max: 150 is above 100"}},
		{"canary percent above 100", `"canary": {"percent": 150, "ttl": 600}`,
			[]string{"canary.percent", "150"},
			[]string{"spec.targets[0].canary.percent: canary percent (150) is above release max (100)"}},
		{"negative canary", `"canary": {"percent": -10, "ttl": -60}`,
			[]string{"canary.ttl", "-60"},
			[]string{"spec.targets[0].canary.percent: -10 is negative: no canary runs", "spec.targets[0].canary.ttl: -60 is negative: no canary runs"}},
		{"geometric start above 100", `"release": {"geometricScaling": {"start": 150}}`,
			[]string{"release.geometricScaling.start", "150"},
			[]string{"spec.targets[0].release.geometricScaling.start: 150 is above 100"}},
		{"linear increment above 100", `"release": {"scalingStrategy": "linear", "linearScaling": {"increment": 150}}`,
			[]string{"release.linearScaling.increment", "150"},
			[]string{"spec.targets[0].release.linearScaling.increment: 150 is above 100"}},
		// 0 is the original's "unset": its defaults (start 10, factor 2,
		// increment 5) apply. Nothing to warn about.
		{"steps of 0", `"release": {"geometricScaling": {"start": 0, "factor": 0}, "linearScaling": {"increment": 0}}`,
			[]string{"release.geometricScaling.factor", "0"}, nil},
		{"SLO allowance above 100", `"serviceLevelObjectives": [{"name": "availability", "serviceLevelIndicator": {"canary": {"enabled": true, "allowancePercent": 150}}},
				{"name": "latency", "serviceLevelIndicator": {"canary": {"enabled": true, "allowancePercentString": "150"}}}]`,
			[]string{"serviceLevelObjectives[0].serviceLevelIndicator.canary.allowancePercent", "150"},
			[]string{
				"spec.targets[0].serviceLevelObjectives[0].serviceLevelIndicator.canary.allowancePercent: 150 is 100 or more: this SLO's canary alert cannot fire",
				"spec.targets[0].serviceLevelObjectives[1].serviceLevelIndicator.canary.allowancePercentString: 150 is 100 or more",
			}},
		{"duplicate port numbers", `"ports": [{"name": "http", "port": 80, "containerPort": 8080}, {"name": "grpc", "port": 80, "containerPort": 8081}], "defaultIngressPorts": {"private": "http"}`,
			[]string{"ports[1].port", "80"},
			[]string{"spec.targets[0].ports[1].port: 80/TCP is also the port of ports[0] (http)"}},
		{"one port number over two protocols", `"ports": [{"name": "dns", "port": 53, "containerPort": 5353, "protocol": "UDP", "mode": "local"}, {"name": "dns-tcp", "port": 53, "containerPort": 5353, "mode": "local"}]`,
			[]string{"ports[1].containerPort", "5353"}, nil},
		{"unknown and repeated ingresses", `"ports": [{"name": "http", "ingresses": ["private", "internet", "private"]}]`,
			[]string{"ports[0].ingresses[1]", "internet"},
			[]string{`spec.targets[0].ports[0].ingresses[1]: "internet" is not an ingress`, `spec.targets[0].ports[0].ingresses[2]: "private" is listed twice`}},
		{"ports all flagged default, the default port named", `"ports": [{"name": "a", "default": true, "port": 80, "containerPort": 80}, {"name": "b", "default": true, "port": 81, "containerPort": 81}], "defaultIngressPorts": {"private": "b"}`,
			[]string{"ports[1].default", "true"},
			[]string{"spec.targets[0].ports: ports a, b exposed on the private ingress are all flagged default: the flags are ignored"}},
		{"ports all flagged default, one named http", `"ports": [{"name": "a", "default": true, "port": 80, "containerPort": 80}, {"name": "http", "default": true, "port": 81, "containerPort": 81}]`,
			[]string{"defaultIngressPorts.private", "http"},
			[]string{"spec.targets[0].ports: ports a, http exposed on the private ingress are all flagged default: the flags are ignored, http is its default port"}},
		// 0 is the original's "unset": the webhook stores what it read it as.
		{"port numbers of 0", `"ports": [{"name": "http", "port": 0, "containerPort": 0, "ingressPort": 0}]`,
			[]string{"ports[0].ingressPort", "443"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := create(ctx, bare.Delivery.Client, object(t, "Revision", revisionJSON(tt.fields))); err != nil {
				t.Fatalf("the schema rejects what the original accepted: %v", err)
			}
			warnings.take()
			u := object(t, "Revision", revisionJSON(tt.fields))
			if err := hookedClient.Create(ctx, u); err != nil {
				t.Fatalf("the webhook rejects what the original accepted: %v", err)
			}
			got := warnings.take()
			joined := strings.Join(got, "\n")
			for _, want := range tt.warnings {
				if !strings.Contains(joined, want) {
					t.Errorf("warnings lack %q:\n%s", want, joined)
				}
			}
			if len(got) != len(tt.warnings) {
				t.Errorf("%d warnings, want %d:\n%s", len(got), len(tt.warnings), joined)
			}
			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(u.GroupVersionKind())
			if err := hookedClient.Get(ctx, client.ObjectKeyFromObject(u), stored); err != nil {
				t.Fatal(err)
			}
			targets, _, _ := unstructured.NestedSlice(stored.Object, "spec", "targets")
			if len(targets) != 1 {
				t.Fatalf("stored targets %v", targets)
			}
			if v := lookup(targets[0], tt.stored[0]); fmt.Sprint(v) != tt.stored[1] {
				t.Errorf("stored %s = %v, want %s", tt.stored[0], v, tt.stored[1])
			}
		})
	}
}

// lookup follows a path such as "ports[1].port" in a decoded JSON value.
func lookup(v any, path string) any {
	for part := range strings.SplitSeq(path, ".") {
		name, index, indexed := strings.Cut(strings.TrimSuffix(part, "]"), "[")
		m, _ := v.(map[string]any)
		v = m[name]
		if indexed {
			i, err := strconv.Atoi(index)
			list, _ := v.([]any)
			if err != nil || i >= len(list) {
				return nil
			}
			v = list[i]
		}
	}
	return v
}

// TestCRDs_KindsWithNothingToDoWithoutASpecAcceptNone: a Cluster or a
// FaultInjector without spec was accepted by the original and did nothing
// (a disabled Cluster, no fault): so here. The other kinds still need one:
// without it the original failed (no app, no cluster to mirror to, no
// source namespace).
func TestCRDs_KindsWithNothingToDoWithoutASpecAcceptNone(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"Cluster", "FaultInjector", "Revision", "Mirror", "ClusterSecrets", "ReleaseManager"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(picchuv1alpha1.GroupVersion.String())
		u.SetKind(kind)
		u.SetNamespace("picchu")
		u.SetName(uniqueName(strings.ToLower(kind)))
		err := hookedClient.Create(ctx, u)
		switch want := kind == "Cluster" || kind == "FaultInjector"; {
		case want && err != nil:
			t.Errorf("%s without spec rejected: %v", kind, err)
		case !want && err == nil:
			t.Errorf("%s without spec accepted", kind)
		}
	}
}

// Package argocd_test checks health.lua, Argo CD's health check for
// Picchu's Revisions and ReleaseManagers, in gopher-lua (the interpreter
// Argo CD runs it in, set up as Argo CD sets it up) against Revisions
// whose conditions the Revision controller's own SetConditions wrote.
package argocd_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/revision"
	"github.com/medium/picchu/decide/release"
)

// health is what the script returns.
type health struct{ Status, Message string }

// toLua converts a decoded JSON or unstructured value as Argo CD does:
// objects and arrays become tables (arrays from 1), numbers LNumber.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

// run runs script on obj in a Lua state like Argo CD's for custom health
// checks: only the package, base and table libraries (no string library),
// obj as a global, a time limit, and a table returned.
func run(t *testing.T, script string, obj map[string]any) health {
	t.Helper()
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable,
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			t.Fatal(err)
		}
	}
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		t.Fatalf("running health.lua: %v", err)
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %s, want a table", l.Get(-1).Type())
	}
	out := health{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}
	switch out.Status {
	case "Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown":
	default:
		t.Errorf("status %q is not one Argo CD knows", out.Status)
	}
	return out
}

func script(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("health.lua")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// object is obj as Argo CD hands it to the script: its JSON, decoded.
func object(t *testing.T, obj runtime.Object) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// revisionIn returns a Revision of one target whose target records state
// at percent, with the conditions the Revision controller sets.
func revisionIn(state release.State, percent int32, eligible bool) *picchuv1alpha1.Revision {
	rev := &picchuv1alpha1.Revision{
		TypeMeta:   metav1.TypeMeta{APIVersion: picchuv1alpha1.GroupVersion.String(), Kind: "Revision"},
		ObjectMeta: metav1.ObjectMeta{Name: "shop-v2", Namespace: "picchu", Generation: 1},
		Spec: picchuv1alpha1.RevisionSpec{
			App: picchuv1alpha1.RevisionApp{Name: "shop", Tag: "v2", Image: "shop:v2"},
			Targets: []picchuv1alpha1.RevisionTarget{
				{Name: "production", Release: picchuv1alpha1.ReleaseInfo{Eligible: eligible}},
			},
		},
	}
	rev.Status.ObservedGeneration = 1
	rev.Status.Targets = []picchuv1alpha1.RevisionTargetStatus{{Name: "production", State: string(state),
		Release: picchuv1alpha1.RevisionReleaseStatus{CurrentPercent: percent, PeakPercent: percent}}}
	revision.SetConditions(rev, now)
	return rev
}

func TestHealth_Revision(t *testing.T) {
	lua := script(t)
	failed := revisionIn(release.Failing, 10, true)
	failed.Spec.Failed = true
	failed.Annotations = map[string]string{picchuv1alpha1.AnnotationFailedReason: "SLO alerts firing: availability_canary in production"}
	revision.SetConditions(failed, now)

	noStatus := revisionIn(release.Released, 100, true)
	noStatus.Status = picchuv1alpha1.RevisionStatus{}

	// The spec changed since Picchu last wrote the status.
	stale := revisionIn(release.Released, 100, true)
	stale.Generation = 2

	// A value Picchu cannot decode: it says so on the Revision, and
	// writes no observedGeneration.
	undecodable := revisionIn(release.Released, 100, true)
	undecodable.Status = picchuv1alpha1.RevisionStatus{}
	for _, c := range []metav1.Condition{
		{Type: picchuv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonUndecodable,
			Message: "spec.targets[0].scale.min: not a number", ObservedGeneration: 1},
		{Type: picchuv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: picchuv1alpha1.ReasonUndecodable,
			Message: "spec.targets[0].scale.min: not a number", ObservedGeneration: 1},
	} {
		meta.SetStatusCondition(&undecodable.Status.Conditions, c)
	}

	for _, tc := range []struct {
		name string
		rev  *picchuv1alpha1.Revision
		want health
	}{
		{"no status", noStatus, health{"Progressing", "Waiting for Picchu to report on this Revision"}},
		{"pending", revisionIn("", 0, true), health{"Progressing", "production: pending"}},
		{"canarying", revisionIn(release.Canarying, 10, true), health{"Progressing", "production: canarying 10%"}},
		{"releasing", revisionIn(release.Releasing, 40, true), health{"Progressing", "production: releasing 40%"}},
		{"released", revisionIn(release.Released, 100, true), health{"Healthy", "production: released"}},
		{"deployed, not eligible", revisionIn(release.Deployed, 0, false), health{"Healthy", "production: deployed"}},
		{"retired", revisionIn(release.Retired, 0, true), health{"Healthy", "production: retired"}},
		{"failed", failed, health{"Degraded", "SLO alerts firing: availability_canary in production"}},
		{"timing out", revisionIn(release.TimingOut, 0, true), health{"Degraded", "timed out in production"}},
		{"stale", stale, health{"Progressing", "Waiting for Picchu to act on generation 2 of this Revision"}},
		{"undecodable", undecodable, health{"Degraded", "spec.targets[0].scale.min: not a number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, lua, object(t, tc.rev)); got != tc.want {
				t.Errorf("health %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestHealth_ReleaseManager(t *testing.T) {
	lua := script(t)
	rm := func(conditions ...metav1.Condition) *picchuv1alpha1.ReleaseManager {
		out := &picchuv1alpha1.ReleaseManager{
			TypeMeta:   metav1.TypeMeta{APIVersion: picchuv1alpha1.GroupVersion.String(), Kind: "ReleaseManager"},
			ObjectMeta: metav1.ObjectMeta{Name: "shop-production", Namespace: "picchu", Generation: 4},
		}
		out.Status.ObservedGeneration = 4
		for _, c := range conditions {
			c.ObservedGeneration = 4
			meta.SetStatusCondition(&out.Status.Conditions, c)
		}
		return out
	}
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name string
		rm   *picchuv1alpha1.ReleaseManager
		want health
	}{
		{"synced", rm(cond("Ready", metav1.ConditionTrue, "Synced", "every build is in its state on every cluster")),
			health{"Healthy", "every build is in its state on every cluster"}},
		{"progressing", rm(cond("Ready", metav1.ConditionFalse, "Progressing", "v2 releasing 40%"),
			cond("Reconciling", metav1.ConditionTrue, "Progressing", "v2 releasing 40%")),
			health{"Progressing", "v2 releasing 40%"}},
		{"clusters unavailable", rm(cond("Ready", metav1.ConditionFalse, "ClustersUnavailable", "not synced on west"),
			cond("Reconciling", metav1.ConditionTrue, "ClustersUnavailable", "not synced on west")),
			health{"Progressing", "not synced on west"}},
		{"timed out", rm(cond("Stalled", metav1.ConditionTrue, "TimedOut", "timed out: v3"),
			cond("Ready", metav1.ConditionFalse, "TimedOut", "timed out: v3")),
			health{"Degraded", "timed out: v3"}},
		{"no conditions", rm(), health{"Progressing", "Waiting for Picchu to report on this ReleaseManager"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, lua, object(t, tc.rm)); got != tc.want {
				t.Errorf("health %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestArgoCDConfigMap_ShipsTheScript checks that argocd-cm.yaml, the patch
// people merge into Argo CD's argocd-cm, holds health.lua as it is for both
// kinds.
func TestArgoCDConfigMap_ShipsTheScript(t *testing.T) {
	data, err := os.ReadFile("argocd-cm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string
		Metadata   struct{ Name string }
		Data       map[string]string
	}
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Kind != "ConfigMap" || cm.Metadata.Name != "argocd-cm" || len(cm.Data) != 2 {
		t.Errorf("argocd-cm.yaml is a %s %q with %d keys, want the ConfigMap argocd-cm with 2", cm.Kind, cm.Metadata.Name, len(cm.Data))
	}
	want := script(t)
	for _, kind := range []string{"Revision", "ReleaseManager"} {
		key := "resource.customizations.health.picchu.medium.engineering_" + kind
		if cm.Data[key] != want {
			t.Errorf("argocd-cm.yaml's %s is not health.lua: copy health.lua there, indented by four spaces", key)
		}
	}
}

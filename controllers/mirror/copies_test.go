package mirror

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/access"
)

var mirrorKey = Origin{NamespacedName: types.NamespacedName{Namespace: "picchu", Name: "dr"}, Instance: "home-a"}

func revision(mut ...func(*picchuv1alpha1.Revision)) *picchuv1alpha1.Revision {
	rev := &picchuv1alpha1.Revision{
		ObjectMeta: metav1.ObjectMeta{
			Name: "echo-v1", Namespace: "picchu", UID: "uid", ResourceVersion: "7", Generation: 3,
			Labels: map[string]string{
				picchuv1alpha1.LabelApp:                                  "echo",
				picchuv1alpha1.LabelFleetPrefix + "production":           "",
				picchuv1alpha1.LabelTargetDeletablePrefix + "staging":    "true",
				picchuv1alpha1.LabelTargetDeletablePrefix + "production": "true",
				"team": "platform",
			},
			Annotations: map[string]string{
				picchuv1alpha1.AnnotationGitCommitterTimestamp: "2026-11-02T09:00:00Z",
				picchuv1alpha1.AnnotationFailedAt:              "2026-11-02T10:00:00Z",
				picchuv1alpha1.AnnotationFailedReason:          "SLO violation",
				picchuv1alpha1.AnnotationPause:                 "2026-11-02T10:00:00Z",
				picchuv1alpha1.AnnotationPromote:               "next@2026-11-02T10:00:00Z",
				picchuv1alpha1.AnnotationRollback:              "2026-11-02T10:00:00Z",
				picchuv1alpha1.AnnotationRollbackAt:            "2026-11-02T10:00:01Z",
				picchuv1alpha1.AnnotationControlBy:             "alice",
				annotationLastApplied:                          "{}",
				"owner":                                        "platform",
			},
			Finalizers: []string{"x"},
		},
		Spec: picchuv1alpha1.RevisionSpec{
			App:    picchuv1alpha1.RevisionApp{Name: "echo", Tag: "v1", Image: "registry.example/echo:v1"},
			Failed: true,
			Targets: []picchuv1alpha1.RevisionTarget{
				{Name: "production", Fleet: "production", ExternalTest: picchuv1alpha1.ExternalTest{Enabled: true, Started: true}},
				{Name: "staging", Fleet: "staging"},
			},
		},
		Status: picchuv1alpha1.RevisionStatus{Summary: "production=released 100%"},
	}
	for _, m := range mut {
		m(rev)
	}
	return rev
}

func TestDecide(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name     string
		rev      *picchuv1alpha1.Revision
		deployed bool
		want     Skip
	}{
		{"deployed", revision(), true, SkipNone},
		{"not deployed", revision(), false, SkipNotDeployed},
		{"mirroring disabled", revision(func(r *picchuv1alpha1.Revision) { r.Spec.DisableMirroring = true }), true, SkipDisabled},
		{"disabled and not deployed", revision(func(r *picchuv1alpha1.Revision) { r.Spec.DisableMirroring = true }), false, SkipDisabled},
		{"being deleted", revision(func(r *picchuv1alpha1.Revision) { r.DeletionTimestamp = &now }), true, SkipDeleting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.rev, tc.deployed); got != tc.want {
				t.Errorf("Decide = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDeployed(t *testing.T) {
	rm := func(app, tag string, current, desired int32) *picchuv1alpha1.ReleaseManager {
		return &picchuv1alpha1.ReleaseManager{
			ObjectMeta: metav1.ObjectMeta{Namespace: "picchu", Name: app + "-production"},
			Spec:       picchuv1alpha1.ReleaseManagerSpec{App: app, Target: "production"},
			Status: picchuv1alpha1.ReleaseManagerStatus{Revisions: []picchuv1alpha1.ReleaseManagerRevisionStatus{{
				Tag: tag, Scale: picchuv1alpha1.ReleaseManagerRevisionScaleStatus{Current: current, Desired: desired},
			}}},
		}
	}
	withStatus := func(current, desired int32) *picchuv1alpha1.Revision {
		return revision(func(r *picchuv1alpha1.Revision) {
			r.Status.Targets = []picchuv1alpha1.RevisionTargetStatus{
				{Name: "staging"},
				{Name: "production", Scale: picchuv1alpha1.RevisionScaleStatus{Current: current, Desired: desired}},
			}
		})
	}
	for _, tc := range []struct {
		name string
		rev  *picchuv1alpha1.Revision
		rms  []*picchuv1alpha1.ReleaseManager
		want bool
	}{
		{"nothing recorded", revision(), nil, false},
		{"status counts desired replicas", withStatus(0, 2), nil, true},
		{"status counts available replicas", withStatus(1, 0), nil, true},
		{"status counts none", withStatus(0, 0), nil, false},
		{"release manager asks for replicas before the status says so", revision(), []*picchuv1alpha1.ReleaseManager{rm("echo", "v1", 0, 2)}, true},
		{"release manager counts none", revision(), []*picchuv1alpha1.ReleaseManager{rm("echo", "v1", 0, 0)}, false},
		{"another tag's replicas", revision(), []*picchuv1alpha1.ReleaseManager{rm("echo", "v2", 2, 2)}, false},
		{"another app's release manager", revision(), []*picchuv1alpha1.ReleaseManager{rm("other", "v1", 2, 2)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Deployed(tc.rev, tc.rms); got != tc.want {
				t.Errorf("Deployed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRevisionCopy(t *testing.T) {
	rev := revision()
	before := rev.DeepCopy()
	u, err := RevisionCopy(rev, mirrorKey)
	if err != nil {
		t.Fatal(err)
	}
	// The source is left as it is (the original's copy was the object it read).
	if rev.Spec.Targets[0].ExternalTest != before.Spec.Targets[0].ExternalTest || !maps.Equal(rev.Labels, before.Labels) {
		t.Errorf("the source changed: %+v", rev)
	}
	if u.GroupVersionKind() != RevisionKind || u.GetNamespace() != "picchu" || u.GetName() != "echo-v1" {
		t.Errorf("copy is %s %s/%s", u.GroupVersionKind(), u.GetNamespace(), u.GetName())
	}
	for _, field := range []string{"status", "uid", "resourceVersion", "generation", "finalizers", "creationTimestamp"} {
		if _, ok := u.Object[field]; ok {
			t.Errorf("the copy has %s", field)
		}
		if _, ok := u.Object["metadata"].(map[string]any)[field]; ok {
			t.Errorf("the copy has metadata.%s", field)
		}
	}
	wantLabels := map[string]string{picchuv1alpha1.LabelApp: "echo", "team": "platform", LabelMirrored: "true"}
	if !maps.Equal(u.GetLabels(), wantLabels) {
		t.Errorf("labels %v, want %v", u.GetLabels(), wantLabels)
	}
	a := u.GetAnnotations()
	delete(a, AnnotationMirrorHash)
	wantAnnotations := map[string]string{
		picchuv1alpha1.AnnotationGitCommitterTimestamp: "2026-11-02T09:00:00Z",
		"owner":                  "platform",
		AnnotationMirror:         "picchu/dr",
		AnnotationMirrorInstance: "home-a",
	}
	if !maps.Equal(a, wantAnnotations) {
		t.Errorf("annotations %v, want %v", a, wantAnnotations)
	}
	// The spec is the source's, every external test disabled, and the
	// field set (not left out) so the copy owns it false.
	var spec picchuv1alpha1.RevisionSpec
	data, _ := json.Marshal(u.Object["spec"])
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	want := before.Spec.DeepCopy()
	for i := range want.Targets {
		want.Targets[i].ExternalTest.Enabled = false
	}
	wantData, _ := json.Marshal(want)
	gotData, _ := json.Marshal(spec)
	if string(gotData) != string(wantData) {
		t.Errorf("spec\n%s\nwant\n%s", gotData, wantData)
	}
	for i := range want.Targets {
		enabled, found, err := unstructured.NestedFieldNoCopy(u.Object["spec"].(map[string]any)["targets"].([]any)[i].(map[string]any), "externalTest", "enabled")
		if err != nil || !found || enabled != false {
			t.Errorf("target %d: externalTest.enabled is %v (set: %v, %v), want false set", i, enabled, found, err)
		}
	}
}

func TestCopiedMeta(t *testing.T) {
	l := map[string]string{
		"app": "echo", LabelMirrored: "true",
		picchuv1alpha1.LabelFleetPrefix + "production":        "",
		picchuv1alpha1.LabelTargetDeletablePrefix + "staging": "true",
	}
	a := map[string]string{
		"owner": "platform", annotationLastApplied: "{}", AnnotationMirror: "other/m", AnnotationMirrorHash: "x",
		picchuv1alpha1.AnnotationPause: "t", picchuv1alpha1.AnnotationControlBy: "alice",
	}
	for _, tc := range []struct {
		name     string
		revision bool
		wantL    map[string]string
		wantA    map[string]string
	}{
		{
			name: "revision", revision: true,
			wantL: map[string]string{"app": "echo"},
			wantA: map[string]string{"owner": "platform"},
		},
		{
			name: "config keeps what only a Revision's bookkeeping means",
			wantL: map[string]string{
				"app": "echo",
				picchuv1alpha1.LabelFleetPrefix + "production":        "",
				picchuv1alpha1.LabelTargetDeletablePrefix + "staging": "true",
			},
			wantA: map[string]string{"owner": "platform", picchuv1alpha1.AnnotationPause: "t", picchuv1alpha1.AnnotationControlBy: "alice"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotL, gotA := CopiedMeta(l, a, tc.revision)
			if !maps.Equal(gotL, tc.wantL) || !maps.Equal(gotA, tc.wantA) {
				t.Errorf("CopiedMeta = %v, %v; want %v, %v", gotL, gotA, tc.wantL, tc.wantA)
			}
		})
	}
}

func TestConfigCopies(t *testing.T) {
	immutable := true
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: "picchu", UID: "u", ResourceVersion: "3",
			Labels: map[string]string{"config": "echo"}, Annotations: map[string]string{annotationLastApplied: "{}"},
			OwnerReferences: []metav1.OwnerReference{{Name: "o"}}},
		Data:       map[string]string{"MODE": "dr"},
		BinaryData: map[string][]byte{"blob": {1, 2}},
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: "picchu", Labels: map[string]string{"config": "echo"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"TOKEN": []byte("t")},
		Immutable:  &immutable,
	}
	es := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": "vault", "namespace": "picchu", "uid": "u", "labels": map[string]any{"config": "echo"}},
		"spec":     map[string]any{"refreshInterval": "1h", "target": map[string]any{"name": "vault"}},
		"status":   map[string]any{"refreshTime": "x"},
	}}
	cmCopy, err := ConfigMapCopy(cm, mirrorKey)
	if err != nil {
		t.Fatal(err)
	}
	sCopy, err := SecretCopy(s, mirrorKey)
	if err != nil {
		t.Fatal(err)
	}
	esCopy, err := ExternalSecretCopy(es, mirrorKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		copy *unstructured.Unstructured
		want string
	}{
		{"config map", cmCopy, `{"apiVersion":"v1","binaryData":{"blob":"AQI="},"data":{"MODE":"dr"},"kind":"ConfigMap","metadata":{"annotations":{"picchu.medium.engineering/mirror":"picchu/dr","picchu.medium.engineering/mirror-instance":"home-a"},"labels":{"config":"echo","picchu.medium.engineering/mirrored":"true"},"name":"env","namespace":"picchu"}}`},
		{"secret", sCopy, `{"apiVersion":"v1","data":{"TOKEN":"dA=="},"immutable":true,"kind":"Secret","metadata":{"annotations":{"picchu.medium.engineering/mirror":"picchu/dr","picchu.medium.engineering/mirror-instance":"home-a"},"labels":{"config":"echo","picchu.medium.engineering/mirrored":"true"},"name":"keys","namespace":"picchu"},"type":"Opaque"}`},
		{"external secret", esCopy, `{"apiVersion":"external-secrets.io/v1","kind":"ExternalSecret","metadata":{"annotations":{"picchu.medium.engineering/mirror":"picchu/dr","picchu.medium.engineering/mirror-instance":"home-a"},"labels":{"config":"echo","picchu.medium.engineering/mirrored":"true"},"name":"vault","namespace":"picchu"},"spec":{"refreshInterval":"1h","target":{"name":"vault"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.copy.DeepCopy()
			if Hash(c) == "" {
				t.Error("no hash")
			}
			a := c.GetAnnotations()
			delete(a, AnnotationMirrorHash)
			c.SetAnnotations(a)
			got, _ := json.Marshal(c.Object)
			if string(got) != tc.want {
				t.Errorf("copy\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestHashFollowsContent(t *testing.T) {
	base, _ := RevisionCopy(revision(), mirrorKey)
	same, _ := RevisionCopy(revision(func(r *picchuv1alpha1.Revision) {
		// What the copy does not carry does not change it.
		r.Status.Summary = "other"
		r.ResourceVersion = "8"
		r.Labels[picchuv1alpha1.LabelTargetDeletablePrefix+"production"] = "false"
		r.Annotations[picchuv1alpha1.AnnotationPause] = "later"
	}), mirrorKey)
	image, _ := RevisionCopy(revision(func(r *picchuv1alpha1.Revision) { r.Spec.App.Image = "registry.example/echo:v1b" }), mirrorKey)
	label, _ := RevisionCopy(revision(func(r *picchuv1alpha1.Revision) { delete(r.Labels, "team") }), mirrorKey)
	otherMirror, _ := RevisionCopy(revision(), Origin{NamespacedName: types.NamespacedName{Namespace: "picchu", Name: "other"}, Instance: "home-a"})
	if Hash(base) != Hash(same) {
		t.Error("the hash moved with what the copy leaves out")
	}
	for name, u := range map[string]*unstructured.Unstructured{"image": image, "label": label, "mirror": otherMirror} {
		if Hash(u) == Hash(base) {
			t.Errorf("the hash did not move with the %s", name)
		}
	}
}

// TestOurs checks that a Mirror owns only the copies it wrote, and not
// those a Mirror of the same name on another home cluster (another Picchu)
// wrote; a copy written before copies named their Picchu is adopted.
func TestOurs(t *testing.T) {
	ours, err := RevisionCopy(revision(), mirrorKey)
	if err != nil {
		t.Fatal(err)
	}
	twin := mirrorKey
	twin.Instance = "home-b"
	theirs, _ := RevisionCopy(revision(), twin)
	legacy := ours.DeepCopy()
	a := legacy.GetAnnotations()
	delete(a, AnnotationMirrorInstance)
	legacy.SetAnnotations(a)
	unmarked := ours.DeepCopy()
	unmarked.SetLabels(nil)
	for name, tc := range map[string]struct {
		live *unstructured.Unstructured
		want bool
	}{
		"its own copy":                      {ours, true},
		"the same Mirror of another Picchu": {theirs, false},
		"a copy from before instances":      {legacy, true},
		"not labelled a copy":               {unmarked, false},
	} {
		if got := Ours(tc.live, mirrorKey); got != tc.want {
			t.Errorf("%s: Ours = %v, want %v", name, got, tc.want)
		}
	}
	if ours.GetAnnotations()[AnnotationMirrorInstance] != "home-a" {
		t.Errorf("copy annotations %v, want the instance", ours.GetAnnotations())
	}
}

func TestSelectors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		a       picchuv1alpha1.AdditionalConfigSelector
		wantNS  string
		matches map[string]string
		want    bool
		err     bool
	}{
		{
			name:   "app and tag labels alone, in the Mirror's namespace",
			a:      picchuv1alpha1.AdditionalConfigSelector{AppLabelName: "app.example/name", TagLabelName: "app.example/version"},
			wantNS: "picchu", matches: map[string]string{"app.example/name": "echo", "app.example/version": "v1"}, want: true,
		},
		{
			name:   "another tag",
			a:      picchuv1alpha1.AdditionalConfigSelector{AppLabelName: "app.example/name", TagLabelName: "app.example/version"},
			wantNS: "picchu", matches: map[string]string{"app.example/name": "echo", "app.example/version": "v2"},
		},
		{
			name: "with a label selector, in another namespace",
			a: picchuv1alpha1.AdditionalConfigSelector{Namespace: "shared", AppLabelName: "app", TagLabelName: "tag",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"mirror": "yes"}}},
			wantNS: "shared", matches: map[string]string{"app": "echo", "tag": "v1", "mirror": "yes"}, want: true,
		},
		{
			name: "the label selector must match too",
			a: picchuv1alpha1.AdditionalConfigSelector{AppLabelName: "app", TagLabelName: "tag",
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"mirror": "yes"}}},
			wantNS: "picchu", matches: map[string]string{"app": "echo", "tag": "v1"},
		},
		{name: "no app label name", a: picchuv1alpha1.AdditionalConfigSelector{TagLabelName: "tag"}, err: true},
		{name: "a bad label name", a: picchuv1alpha1.AdditionalConfigSelector{AppLabelName: "a b", TagLabelName: "tag"}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, sel, err := AdditionalSelector(tc.a, "picchu", "echo", "v1")
			if tc.err {
				if err == nil {
					t.Errorf("selector %v parsed", sel)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ns != tc.wantNS {
				t.Errorf("namespace %q, want %q", ns, tc.wantNS)
			}
			if sel.Matches(labels.Set(tc.matches)) != tc.want {
				t.Errorf("%v matches %v: %v, want %v", sel, tc.matches, !tc.want, tc.want)
			}
		})
	}
}

func TestCredentials(t *testing.T) {
	clusters := map[string]bool{"dr": true}
	for _, tc := range []struct {
		name   string
		secret corev1.Secret
		want   bool
	}{
		{"config", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "keys"}, Type: corev1.SecretTypeOpaque}, false},
		{"a cluster's", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dr"}}, true},
		{"labelled", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{access.LabelCredentials: "true"}}}, true},
		{"a token", corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sa"}, Type: corev1.SecretTypeServiceAccountToken}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := access.Credentials(&tc.secret, clusters); (got != "") != tc.want {
				t.Errorf("Credentials = %q, want credentials: %v", got, tc.want)
			}
		})
	}
}

func TestUnchanged(t *testing.T) {
	desired, err := RevisionCopy(revision(), mirrorKey)
	if err != nil {
		t.Fatal(err)
	}
	// live is desired as a mirror stores it: through JSON, with what the
	// mirror adds.
	live := func(mut func(map[string]any)) *unstructured.Unstructured {
		data, _ := json.Marshal(desired.Object)
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		if mut != nil {
			mut(u.Object)
		}
		return u
	}
	target := func(o map[string]any) map[string]any {
		return o["spec"].(map[string]any)["targets"].([]any)[0].(map[string]any)
	}
	for _, tc := range []struct {
		name string
		live *unstructured.Unstructured
		want bool
	}{
		{"as applied", live(nil), true},
		{"with the mirror's defaults, status and labels", live(func(o map[string]any) {
			target(o)["newField"] = "default"
			o["status"] = map[string]any{"summary": "production=deployed 0%"}
			md := o["metadata"].(map[string]any)
			md["resourceVersion"] = "12"
			md["labels"].(map[string]any)[picchuv1alpha1.LabelFleetPrefix+"production"] = ""
		}), true},
		{"external test enabled on the mirror", live(func(o map[string]any) {
			target(o)["externalTest"].(map[string]any)["enabled"] = true
		}), false},
		{"an empty field left out", live(func(o map[string]any) {
			delete(target(o)["externalTest"].(map[string]any), "enabled")
		}), true},
		{"spec edited on the mirror", live(func(o map[string]any) {
			o["spec"].(map[string]any)["app"].(map[string]any)["image"] = "other"
		}), false},
		{"a copied label removed", live(func(o map[string]any) {
			delete(o["metadata"].(map[string]any)["labels"].(map[string]any), "team")
		}), false},
		{"an older copy", live(func(o map[string]any) {
			o["metadata"].(map[string]any)["annotations"].(map[string]any)[AnnotationMirrorHash] = "old"
		}), false},
		{"a target more", live(func(o map[string]any) {
			spec := o["spec"].(map[string]any)
			spec["targets"] = append(spec["targets"].([]any), map[string]any{"name": "canary"})
		}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unchanged(desired, tc.live); got != tc.want {
				t.Errorf("Unchanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestContains(t *testing.T) {
	for _, tc := range []struct {
		name       string
		have, want any
		ok         bool
	}{
		{"equal strings", "a", "a", true},
		{"different strings", "a", "b", false},
		{"numbers of two types", int64(2), float64(2), true},
		{"different numbers", int64(2), int64(3), false},
		{"a number and a string", int64(2), "2", false},
		{"zero held by nothing", nil, int64(0), true},
		{"false held by nothing", nil, false, true},
		{"empty map held by nothing", nil, map[string]any{}, true},
		{"a value not held by nothing", nil, "a", false},
		{"submap", map[string]any{"a": "1", "b": "2"}, map[string]any{"a": "1"}, true},
		{"missing key", map[string]any{"b": "2"}, map[string]any{"a": "1"}, false},
		{"lists item by item", []any{map[string]any{"a": "1", "x": "y"}}, []any{map[string]any{"a": "1"}}, true},
		{"longer list", []any{"a", "b"}, []any{"a"}, false},
		{"a map for a list", map[string]any{}, []any{"a"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := contains(tc.have, tc.want); got != tc.ok {
				t.Errorf("contains(%v, %v) = %v, want %v", tc.have, tc.want, got, tc.ok)
			}
		})
	}
}

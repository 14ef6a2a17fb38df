package plugin_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
)

// envtestUser is the user envtest's kubeconfig authenticates as, which
// the API server's SelfSubjectReview names.
const envtestUser = "admin"

// TestControl runs each action on the demo app (see createDemo) in a
// namespace of its own, and checks what it printed and changed on the
// Revisions, or how it refused.
func TestControl(t *testing.T) {
	stamp := now.Format(time.RFC3339)
	for _, tc := range []struct {
		name string
		// before runs actions first, each to succeed.
		before [][]string
		args   []string
		opts   plugin.Options
		// want is the output, or wantErr the error; warn starts a
		// warning the command prints.
		want, wantErr, warn string
		// changed are the annotations of the Revision of tag changed (nil
		// for removed), and failed its spec.failed.
		tag     string
		changed map[string]*string
		failed  bool
		by      string
	}{
		{
			name: "pause the build of a tag",
			args: []string{"pause", "demo", "--tag", "v2"},
			want: "revision.picchu.medium.engineering/demo-v2 paused\n",
			tag:  "v2", changed: map[string]*string{picchuv1alpha1.AnnotationPause: &stamp},
		},
		{
			name:    "pause refuses a paused build",
			args:    []string{"pause", "demo"},
			wantErr: "revision.picchu.medium.engineering/demo-v4 is already paused (kubectl picchu resume demo)",
		},
		{
			name: "resume every paused build",
			args: []string{"resume", "demo"},
			want: "revision.picchu.medium.engineering/demo-v4 resumed\n",
			tag:  "v4", changed: map[string]*string{picchuv1alpha1.AnnotationPause: nil},
		},
		{
			name:    "resume refuses when nothing is paused",
			before:  [][]string{{"resume", "demo"}},
			args:    []string{"resume", "demo"},
			wantErr: `no build of app "demo" is paused`,
		},
		{
			name: "promote the newest build that is not failed",
			args: []string{"promote", "demo"},
			want: "revision.picchu.medium.engineering/demo-v4 promoted\n",
			tag:  "v4", changed: map[string]*string{picchuv1alpha1.AnnotationPromote: ptr(picchuv1alpha1.PromoteRequest(false, now))},
		},
		{
			name: "promote a tag fully",
			args: []string{"promote", "demo", "--tag", "v2", "--full"},
			want: "revision.picchu.medium.engineering/demo-v2 promoted (full)\n",
			tag:  "v2", changed: map[string]*string{picchuv1alpha1.AnnotationPromote: ptr(picchuv1alpha1.PromoteRequest(true, now))},
		},
		{
			name:    "promote refuses a failed build",
			args:    []string{"promote", "demo", "--tag", "v3"},
			wantErr: "revision.picchu.medium.engineering/demo-v3 (tag v3) is failed: retry it first (kubectl picchu retry demo --tag v3)",
		},
		{
			name: "abort the newest build",
			args: []string{"abort", "demo", "--reason", "p99 latency doubled"},
			want: "revision.picchu.medium.engineering/demo-v4 aborted\n",
			tag:  "v4", failed: true, changed: map[string]*string{
				picchuv1alpha1.AnnotationFailedReason: ptr("aborted: p99 latency doubled"),
				picchuv1alpha1.AnnotationFailedAt:     nil,
			},
		},
		{
			name:    "abort refuses without a reason",
			args:    []string{"abort", "demo"},
			wantErr: "abort needs --reason: say why the build is aborted (it is kept in the failed-reason annotation)",
		},
		{
			name: "retry the newest failed build",
			args: []string{"retry", "demo"},
			want: "revision.picchu.medium.engineering/demo-v3 retried\n",
			tag:  "v3", failed: false, changed: map[string]*string{
				picchuv1alpha1.AnnotationFailedReason: nil,
				picchuv1alpha1.AnnotationFailedAt:     nil,
			},
		},
		{
			name:    "retry refuses when nothing failed",
			before:  [][]string{{"retry", "demo"}},
			args:    []string{"retry", "demo"},
			wantErr: `app "demo" has no failed build: there is nothing to retry`,
		},
		{
			name:    "retry refuses a build that is not failed",
			args:    []string{"retry", "demo", "--tag", "v2"},
			wantErr: "revision.picchu.medium.engineering/demo-v2 (tag v2) is not failed: there is nothing to retry",
		},
		{
			name: "roll back to a tag",
			args: []string{"rollback", "demo", "--to", "v1"},
			want: "revision.picchu.medium.engineering/demo-v1 rollback requested\n",
			// This API server serves no webhook to stamp the request.
			warn: "Warning: no webhook stamped when the request was received: Picchu orders it by this machine's clock",
			tag:  "v1", changed: map[string]*string{picchuv1alpha1.AnnotationRollback: ptr(picchuv1alpha1.RollbackRequest(now))},
		},
		{
			name:    "rollback refuses a failed tag",
			args:    []string{"rollback", "demo", "--to", "v3"},
			wantErr: "revision.picchu.medium.engineering/demo-v3 (tag v3) is failed: retry it first (kubectl picchu retry demo --tag v3)",
		},
		{
			name:    "rollback refuses an unknown tag",
			args:    []string{"rollback", "demo", "--to", "v9"},
			wantErr: `app "demo" has no build with tag "v9"`,
		},
		{
			name:    "rollback refuses without a tag",
			args:    []string{"rollback", "demo"},
			wantErr: "rollback needs --to: the tag of the build to roll back to",
		},
		{
			name:    "an action refuses an unknown app",
			args:    []string{"pause", "nope"},
			wantErr: `app "nope" not found in namespace "NS": it has no Revision and no ReleaseManager`,
		},
		{
			name: "a change is made by unknown when the API server does not say who",
			args: []string{"pause", "demo", "--tag", "v2"},
			opts: plugin.Options{WhoAmI: failingUser},
			want: "revision.picchu.medium.engineering/demo-v2 paused\n",
			tag:  "v2", changed: map[string]*string{picchuv1alpha1.AnnotationPause: &stamp},
			by: "unknown",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			createDemo(t, ns)
			for _, args := range tc.before {
				if res := kubectlPicchu(t, append(args, "-n", ns)...); res.err != nil {
					t.Fatalf("kubectl picchu %s: %v", strings.Join(args, " "), res.err)
				}
			}
			before := revisions(t, ns)
			res := kubectlPicchuWith(t, tc.opts, append(tc.args, "-n", ns)...)
			if tc.wantErr != "" {
				want := strings.ReplaceAll(tc.wantErr, "NS", ns)
				if res.err == nil || res.err.Error() != want {
					t.Fatalf("kubectl picchu %s: got error %v, want %q", strings.Join(tc.args, " "), res.err, want)
				}
				if after := revisions(t, ns); !sameRevisions(before, after) {
					t.Errorf("kubectl picchu %s changed a Revision when it refused", strings.Join(tc.args, " "))
				}
				return
			}
			if res.err != nil {
				t.Fatalf("kubectl picchu %s: %v\n%s", strings.Join(tc.args, " "), res.err, res.errOut)
			}
			if res.out != tc.want {
				t.Errorf("kubectl picchu %s printed %q, want %q", strings.Join(tc.args, " "), res.out, tc.want)
			}
			if tc.warn != "" && !strings.Contains(res.errOut, tc.warn) {
				t.Errorf("kubectl picchu %s warned %q, want %q", strings.Join(tc.args, " "), res.errOut, tc.warn)
			}
			by := cmp.Or(tc.by, envtestUser)
			if by == "unknown" && !strings.Contains(res.errOut, `Warning: recording the change as made by "unknown"`) {
				t.Errorf("kubectl picchu %s did not warn that the user is unknown: %q", strings.Join(tc.args, " "), res.errOut)
			}
			after := revisions(t, ns)
			rev := after[tc.tag]
			for key, want := range tc.changed {
				got, ok := rev.Annotations[key]
				switch {
				case want == nil && ok:
					t.Errorf("revision %s kept annotation %s=%q, want it removed", rev.Name, key, got)
				case want != nil && got != *want:
					t.Errorf("revision %s has annotation %s=%q, want %q", rev.Name, key, got, *want)
				}
			}
			if got := rev.Annotations[picchuv1alpha1.AnnotationControlBy]; got != by {
				t.Errorf("revision %s has %s=%q, want %q", rev.Name, picchuv1alpha1.AnnotationControlBy, got, by)
			}
			if rev.Spec.Failed != tc.failed {
				t.Errorf("revision %s has spec.failed=%v, want %v", rev.Name, rev.Spec.Failed, tc.failed)
			}
			if !slices.ContainsFunc(rev.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == plugin.FieldManager }) {
				t.Errorf("revision %s has no fields managed by %s: %+v", rev.Name, plugin.FieldManager, rev.ManagedFields)
			}
			for tag, other := range before {
				if tag != tc.tag && other.ResourceVersion != after[tag].ResourceVersion {
					t.Errorf("kubectl picchu %s changed revision %s too", strings.Join(tc.args, " "), other.Name)
				}
			}
		})
	}
}

// revisions reads the demo app's Revisions of ns by tag.
func revisions(t *testing.T, ns string) map[string]*picchuv1alpha1.Revision {
	t.Helper()
	list := &picchuv1alpha1.RevisionList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{picchuv1alpha1.LabelApp: "demo"}); err != nil {
		t.Fatalf("reading the revisions of %s: %v", ns, err)
	}
	out := map[string]*picchuv1alpha1.Revision{}
	for i := range list.Items {
		out[list.Items[i].Spec.App.Tag] = &list.Items[i]
	}
	return out
}

func sameRevisions(a, b map[string]*picchuv1alpha1.Revision) bool {
	if len(a) != len(b) {
		return false
	}
	for tag, rev := range a {
		if b[tag] == nil || b[tag].ResourceVersion != rev.ResourceVersion {
			return false
		}
	}
	return true
}

func ptr(s string) *string { return &s }

package plugin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
)

// TestViews checks the output of every read-only command on the demo app.
func TestViews(t *testing.T) {
	ns := newNamespace(t)
	createDemo(t, ns)
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"get", []string{"get"}},
		{"get-app", []string{"get", "demo"}},
		{"status", []string{"status", "demo"}},
		{"history", []string{"history", "demo"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			res := kubectlPicchu(t, append(tc.args, "-n", ns)...)
			if res.err != nil {
				t.Fatalf("kubectl picchu %s: %v\n%s", strings.Join(tc.args, " "), res.err, res.errOut)
			}
			if res.errOut != "" {
				t.Errorf("kubectl picchu %s wrote to stderr: %s", strings.Join(tc.args, " "), res.errOut)
			}
			golden(t, tc.golden, res.out)
		})
	}
}

func TestGet_EmptyNamespaceSaysSo(t *testing.T) {
	ns := newNamespace(t)
	res := kubectlPicchu(t, "get", "-n", ns)
	if res.err != nil || res.out != "" || res.errOut != "No release managers found in "+ns+" namespace.\n" {
		t.Errorf("kubectl picchu get in an empty namespace: err %v, stdout %q, stderr %q", res.err, res.out, res.errOut)
	}
}

func TestGet_UnknownAppFails(t *testing.T) {
	ns := newNamespace(t)
	res := kubectlPicchu(t, "get", "nope", "-n", ns)
	want := `app "nope" not found in namespace "` + ns + `": it has no Revision and no ReleaseManager`
	if res.err == nil || res.err.Error() != want {
		t.Errorf("kubectl picchu get nope: got error %v, want %q", res.err, want)
	}
}

// TestGet_WatchPrintsFramesUntilCanceled checks that --watch prints a frame
// per interval, after a blank line when the output is not a terminal, and
// ends without an error when its context is canceled.
func TestGet_WatchPrintsFramesUntilCanceled(t *testing.T) {
	ns := newNamespace(t)
	createDemo(t, ns)
	once := kubectlPicchu(t, "get", "demo", "-n", ns)
	if once.err != nil {
		t.Fatal(once.err)
	}
	// Canceled, as an interrupt cancels it, rather than given a deadline:
	// a rate limiter refuses at once a wait that would pass a deadline.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer time.AfterFunc(2*time.Second, cancel).Stop()
	res := runPlugin(ctx, plugin.Options{}, "get", "demo", "-n", ns, "--watch", "--interval", "100ms")
	if res.err != nil {
		t.Fatalf("kubectl picchu get demo --watch: %v", res.err)
	}
	frames := strings.Count(res.out, once.out)
	if frames < 2 || res.out != once.out+strings.Repeat("\n"+once.out, frames-1) {
		t.Errorf("kubectl picchu get demo --watch printed %d frames, want at least 2 frames separated by a blank line:\n%s", frames, res.out)
	}
	if strings.Contains(res.out, "\x1b") {
		t.Errorf("kubectl picchu get demo --watch cleared a screen that is not a terminal:\n%q", res.out)
	}
}

// TestHelp checks the help of the root command and of each subcommand.
func TestHelp(t *testing.T) {
	for _, sub := range []string{"", "get", "status", "history", "plan", "pause", "resume", "promote", "abort", "retry", "rollback", "dashboard"} {
		name := "help-" + sub
		args := []string{sub, "--help"}
		if sub == "" {
			name, args = "help", []string{"--help"}
		}
		t.Run(name, func(t *testing.T) {
			res := kubectlPicchu(t, args...)
			if res.err != nil {
				t.Fatal(res.err)
			}
			for _, want := range []string{"Usage:\n  kubectl picchu " + sub, "Examples:\n  # ", "\n  kubectl picchu " + sub} {
				if !strings.Contains(res.out, want) {
					t.Errorf("kubectl picchu %s --help lacks %q:\n%s", sub, want, res.out)
				}
			}
			golden(t, name, res.out)
		})
	}
	cmd := plugin.NewRootCommand(plugin.Options{}.IOStreams)
	for _, c := range append(cmd.Commands(), cmd) {
		if c.Use == "" || c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("command %q lacks Use, Short, Long or Example", c.CommandPath())
		}
	}
}

// TestGet_BuildNotYetInTheReleaseManager checks that a build no
// ReleaseManager records yet is shown from its Revision's status.
func TestGet_BuildNotYetInTheReleaseManager(t *testing.T) {
	ns := newNamespace(t)
	rev := revision(ns, "fresh", "v1")
	rev.Spec.Targets = rev.Spec.Targets[:1]
	create(t, rev)
	rev.Status.Targets = []picchuv1alpha1.RevisionTargetStatus{{
		Name: "production", State: "deploying",
		Scale: picchuv1alpha1.RevisionScaleStatus{Current: 1, Desired: 3},
	}}
	if err := k8s.Status().Update(context.Background(), rev); err != nil {
		t.Fatalf("writing the status of revision %s: %v", rev.Name, err)
	}
	res := kubectlPicchu(t, "get", "fresh", "-n", ns)
	want := `Target: production
TAG   STATE       WEIGHT   CLUSTERS   PODS   NEXT     ALERTS
v1    deploying   0%       <none>     1/3    <none>   <none>
`
	if res.err != nil || res.out != want {
		t.Errorf("kubectl picchu get fresh: err %v, output\n%s\nwant\n%s", res.err, res.out, want)
	}
}

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
	"github.com/medium/picchu/test/slackfake"
)

// picchu runs `kubectl picchu args...` against the delivery cluster, as a
// person would, and returns what it printed.
func picchu(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := plugin.NewRootCommandWithOptions(plugin.Options{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}})
	cmd.SetArgs(append([]string{"--kubeconfig", lab.Delivery.Kubeconfig, "-n", lab.Namespace}, args...))
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("kubectl picchu %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("kubectl picchu %s\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// withSlack restarts the operator posting to a Slack fake, until the test ends.
func withSlack(t *testing.T) *slackfake.Slack {
	t.Helper()
	ctx := context.Background()
	const token = "xoxb-e2e"
	fake := slackfake.New(t, token)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: lab.Namespace, Name: "slack-e2e"}, Data: map[string][]byte{"token": []byte(token)}}
	if err := kit.Apply(ctx, lab.Delivery.Client, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.StartOperator(ctx, operatorBinary); err != nil {
			t.Error(err)
		}
		if err := lab.Delivery.Client.Delete(ctx, secret); err != nil {
			t.Error(err)
		}
	})
	if err := lab.StartOperator(ctx, operatorBinary, "--slack-token-secret="+lab.Namespace+"/slack-e2e",
		"--slack-channel=#releases", "--slack-api-url="+fake.URL()); err != nil {
		t.Fatal(err)
	}
	return fake
}

// TestOperateThroughThePlugin steers app "steer" only through kubectl
// picchu: v2 paused mid-ramp holds its weight past two step delays,
// resumes, and is promoted to 100 %; v3 is aborted during its canary and
// the app rolled back to v1 by tag. Each action shows in `status` (its
// event names who asked) and in the Slack fake's thread of its build, and
// the dashboard's queries all return data.
func TestOperateThroughThePlugin(t *testing.T) {
	ctx := context.Background()
	const app = "steer"
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := story.Reset(ctx, lab, app); err != nil {
			t.Error(err)
		}
	})
	fake := withSlack(t)
	who, err := plugin.SelfSubjectReviewUser(ctx, lab.Delivery.Config)
	if err != nil {
		t.Fatal(err)
	}

	apply(t, app, "v1", nil)
	until(t, 2*time.Minute, app, "v1 released", releasedEverywhere("v1"))
	rev := apply(t, app, "v2", nil)
	delay := release.StepDelay(rev.Spec.Targets[0].Release)

	// Paused mid-ramp, v2 holds its weight past two step delays.
	until(t, 2*time.Minute, app, "v2 ramping", func(s story.Snapshot) error {
		if b := s.Build("v2"); b.State != "releasing" || b.Percent == 0 || b.Percent >= 50 {
			return fmt.Errorf("v2 %s at %d%%", b.State, b.Percent)
		}
		return nil
	})
	picchu(t, "pause", app)
	held := until(t, 30*time.Second, app, "v2 paused", func(s story.Snapshot) error {
		if rec, err := buildRecord(ctx, app, "v2"); err != nil || rec.Paused == nil {
			return fmt.Errorf("v2 not recorded paused (%v)", err)
		}
		return nil
	}).Build("v2").Percent
	pausedAt := time.Now()
	holdFor(t, 2*delay+2*time.Second, app, "v2", held)
	t.Logf("v2 held at %d%% for %s (step delay %s)", held, time.Since(pausedAt).Round(time.Millisecond), delay)
	if out := picchu(t, "get", app); !strings.Contains(out, "paused") {
		t.Errorf("get does not show v2 paused:\n%s", out)
	}

	// Resumed, it ramps on; promoted, it goes to 100 %.
	picchu(t, "resume", app)
	until(t, 30*time.Second, app, "v2 ramping on", func(s story.Snapshot) error {
		if p := s.Build("v2").Percent; p <= held {
			return fmt.Errorf("v2 at %d%%", p)
		}
		return nil
	})
	picchu(t, "promote", app, "--full")
	until(t, time.Minute, app, "v2 released", releasedEverywhere("v2"))

	// v3, aborted during its canary, is rolled back; then the app goes
	// back to v1 by tag, and v2 retires.
	apply(t, app, "v3", func(r *picchuv1alpha1.Revision) { r.Spec.Targets[0].Canary.TTL = 600 })
	until(t, 2*time.Minute, app, "v3 canarying", func(s story.Snapshot) error {
		if b := s.Build("v3"); b.State != "canarying" || b.Percent == 0 {
			return fmt.Errorf("v3 %s at %d%%", b.State, b.Percent)
		}
		return nil
	})
	picchu(t, "abort", app, "--reason", "bad build")
	until(t, time.Minute, app, "v3 failed", func(s story.Snapshot) error {
		if b := s.Build("v3"); b.State != "failed" {
			return fmt.Errorf("v3 %s", b.State)
		}
		return nil
	})
	picchu(t, "rollback", app, "--to", "v1")
	until(t, 2*time.Minute, app, "v1 released again", releasedEverywhere("v1"))
	until(t, time.Minute, app, "v2 retired", func(s story.Snapshot) error {
		if b := s.Build("v2"); b.State != "retired" {
			return fmt.Errorf("v2 %s", b.State)
		}
		return nil
	})

	// Each action is in the release's events, naming who asked.
	status := picchu(t, "status", app)
	for _, want := range []string{
		"v2 paused at", "v2 resumed at", "v2 promoted (full)", "v3 aborted (aborted: bad build)", "v1 brought back",
	} {
		if !strings.Contains(status, want) {
			t.Errorf("status does not show %q", want)
		}
	}
	if n := strings.Count(status, "by "+who); n < 5 {
		t.Errorf("status names %s %d times, want every action (5)", who, n)
	}
	picchu(t, "history", app)

	// And in Slack, each in the thread of its build.
	fake.WaitPosts(t, 30*time.Second, "the notices of "+app, func(posts []slackfake.Post) error {
		threads, told := map[string]string{}, map[string][]string{}
		for _, p := range posts {
			prefix := fmt.Sprintf("*%s* `", app)
			if !strings.HasPrefix(p.Text, prefix) {
				continue
			}
			tag, what, _ := strings.Cut(strings.TrimPrefix(p.Text, prefix), "` in "+story.Target+": ")
			if first, ok := threads[tag]; !ok {
				threads[tag] = p.TS
			} else if p.Thread != first {
				return fmt.Errorf("%s's notice %q in thread %q, want %s", tag, what, p.Thread, first)
			}
			told[tag] = append(told[tag], what)
		}
		for tag, wants := range map[string][]string{
			"v2": {"paused by " + who, "resumed by " + who, "promoted by " + who, "released"},
			"v3": {"canary started", "failed (aborted: bad build); rolling back"},
			"v1": {"rolled back to by " + who, "released"},
		} {
			for _, w := range wants {
				if !slices.Contains(told[tag], w) {
					return fmt.Errorf("%s's thread %q lacks %q", tag, told[tag], w)
				}
			}
		}
		return nil
	})
	checkDashboard(t, app)
}

// holdFor watches app for d and fails the test if tag's recorded percent,
// or its weight in any target cluster, ever differs from percent. It
// samples, as anything that checks that something does not happen must.
func holdFor(t *testing.T, d time.Duration, app, tag string, percent int32) {
	t.Helper()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for start := time.Now(); ; {
		s := story.Observe(ctx, lab, app)
		if ctx.Err() != nil {
			return
		}
		if s.Err == nil {
			if p := s.Build(tag).Percent; p != percent {
				t.Fatalf("%s moved from %d%% to %d%% %s into the hold", tag, percent, p, time.Since(start).Round(time.Millisecond))
			}
		}
		for _, c := range s.Clusters {
			if w := c.Weights[tag]; c.Err == nil && w != percent {
				t.Fatalf("%s routes %d%% to %s %s into the hold, want %d%%", c.Name, w, tag, time.Since(start).Round(time.Millisecond), percent)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

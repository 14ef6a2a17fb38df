package release_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/slackfake"
)

// TestSlack_EachReleaseToldInItsThread runs the operator with Slack on
// (its token in a Secret, Slack's API a fake that checks every request)
// while app "told" releases v1, canaries and releases v2, and v3 is
// aborted mid-ramp with a reason that would ping the whole channel:
// each build's notices are one thread in the default channel, in the
// order things happened, and the reason arrives escaped, pinging no one.
func TestSlack_EachReleaseToldInItsThread(t *testing.T) {
	ctx := context.Background()
	const app = "told"
	const token = "xoxb-told"
	fake := slackfake.New(t, token)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "slack"}, Data: map[string][]byte{"token": []byte(token)}}
	if err := env.Delivery.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		running.Restart(t)
		if err := env.Delivery.Client.Delete(ctx, secret); err != nil {
			t.Error(err)
		}
	})
	running.Restart(t, func(o *operator.Options) {
		o.SlackTokenSecret, o.SlackChannel, o.SlackAPIURL = env.Namespace+"/slack", "#releases", fake.URL()
	})

	create(t, build{app: app, tag: "v1", commit: 1, delay: time.Second})
	state(t, 30*time.Second, app, "v1", "released")
	traffic.Set(app, "v2", 5, 0)
	create(t, build{app: app, tag: "v2", commit: 2, delay: time.Second, canary: 2 * time.Second})
	state(t, 30*time.Second, app, "v2", "released")
	v3 := create(t, build{app: app, tag: "v3", commit: 3, delay: time.Second})
	percentAtLeast(t, app, "v3", 20)
	// As kubectl picchu abort does it, with what a person may type.
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v3), v3); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(v3.DeepCopy())
	v3.Spec.Failed = true
	if v3.Annotations == nil {
		v3.Annotations = map[string]string{}
	}
	v3.Annotations[picchuv1alpha1.AnnotationFailedReason] = "aborted: <!channel> & <@U123>"
	if err := env.Delivery.Client.Patch(ctx, v3, patch); err != nil {
		t.Fatal(err)
	}
	state(t, 10*time.Second, app, "v3", "failed")

	want := map[string][]string{
		"v1": {"ramping up", "released"},
		"v2": {"canary started", "canary passed", "ramping up", "released"},
		"v3": {"ramping up", "failed", "rolled back"},
	}
	posts := fake.WaitPosts(t, 10*time.Second, "every notice of "+app, func(posts []slackfake.Post) error {
		threads := map[string]string{} // tag → thread
		got := map[string][]string{}
		for _, p := range posts {
			prefix := fmt.Sprintf("*%s* `", app)
			if !strings.HasPrefix(p.Text, prefix) {
				continue
			}
			tag, what, _ := strings.Cut(strings.TrimPrefix(p.Text, prefix), "` in production: ")
			if p.Channel != "#releases" {
				return fmt.Errorf("%s posted to %s, want #releases", tag, p.Channel)
			}
			switch thread, ok := threads[tag]; {
			case !ok && p.Thread != "":
				return fmt.Errorf("%s's first notice answers thread %s", tag, p.Thread)
			case !ok:
				threads[tag] = p.TS
			case p.Thread != thread:
				return fmt.Errorf("%s's notice %q in thread %q, want %s", tag, what, p.Thread, thread)
			}
			what, _, _ = strings.Cut(what, " (")
			what, _, _ = strings.Cut(what, ";")
			what, _, _ = strings.Cut(what, ",")
			got[tag] = append(got[tag], what)
		}
		for tag, w := range want {
			if !slices.Equal(got[tag], w) {
				return fmt.Errorf("%s told %q, want %q", tag, got[tag], w)
			}
		}
		return nil
	})
	// v2's ramp started with the forecast of its end.
	const ramping = "*told* `v2` in production: ramping up, to be released by "
	if !slices.ContainsFunc(posts, func(p slackfake.Post) bool { return strings.HasPrefix(p.Text, ramping) }) {
		t.Errorf("no post %q… among %q", ramping, posts)
	}
	const failed = "*told* `v3` in production: failed (aborted: &lt;!channel&gt; &amp; &lt;@U123&gt;); rolling back"
	i := slices.IndexFunc(posts, func(p slackfake.Post) bool { return p.Text == failed })
	if i < 0 {
		t.Errorf("no post %q among %q", failed, posts)
	} else if text, _ := posts[i].Blocks[0]["text"].(map[string]any); text["text"] != failed {
		t.Errorf("v3's failure: block %v, want %q", posts[i].Blocks[0], failed)
	}
	for _, p := range posts {
		if strings.Contains(p.Text, "<!channel>") || strings.Contains(p.Text, "<@U123>") {
			t.Errorf("a post pings: %q", p.Text)
		}
	}
}

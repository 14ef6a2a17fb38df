package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/medium/picchu/test/kit"
	"github.com/medium/picchu/test/slackfake"
)

const token = "xoxb-test"

// started runs a Notifier against f until the test ends.
func started(t *testing.T, f *slackfake.Slack, tok func(context.Context) (string, error)) *Notifier {
	n, err := New(Options{Token: tok, Channel: "#releases", APIURL: f.URL(), Rate: 1000, Burst: 100, Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return n
}

func staticToken(context.Context) (string, error) { return token, nil }

// TestNotifier_OneThreadPerRelease: a release's notices go to its app's
// channel, the first starting a thread that the others answer; another
// release starts its own; a notice without a channel goes to the default.
func TestNotifier_OneThreadPerRelease(t *testing.T) {
	f := slackfake.New(t, token)
	n := started(t, f, staticToken)
	for _, k := range []Kind{Started, CanaryPassed, Ramping, Released} {
		n.Notify(Notice{App: "shop", Target: "production", Tag: "v2", Kind: k, Channel: "#shop"})
	}
	n.Notify(Notice{App: "shop", Target: "production", Tag: "v3", Kind: Failed, Channel: "#shop", Alerts: []string{"shop_availability"}})
	n.Notify(Notice{App: "blog", Target: "production", Tag: "v1", Kind: Started})
	posts := f.WaitPosts(t, 10*time.Second, "6 posts", slackfake.AtLeast(6))
	for i, p := range posts[:4] {
		if p.Channel != "#shop" || (i == 0) != (p.Thread == "") || (i > 0 && p.Thread != posts[0].TS) {
			t.Errorf("post %d: channel %s, thread %q; want #shop in the thread of %s", i, p.Channel, p.Thread, posts[0].TS)
		}
	}
	if !strings.Contains(posts[0].Text, "*shop* `v2` in production: canary started") || !strings.Contains(posts[3].Text, "released") {
		t.Errorf("texts %q, %q", posts[0].Text, posts[3].Text)
	}
	if p := posts[4]; p.Thread != "" || !strings.Contains(p.Text, "failed (alerts firing: shop_availability); rolling back") {
		t.Errorf("v3's failure: thread %q, text %q; want a thread of its own naming its alert", p.Thread, p.Text)
	}
	if p := posts[5]; p.Channel != "#releases" || p.Thread != "" {
		t.Errorf("blog: channel %s, thread %q; want the default channel, a thread of its own", p.Channel, p.Thread)
	}
	if text, _ := posts[0].Blocks[0]["text"].(map[string]any); text["type"] != "mrkdwn" || text["text"] != posts[0].Text {
		t.Errorf("block %v, want the text as markdown", posts[0].Blocks[0])
	}
	if got := testutil.ToFloat64(n.outcome.WithLabelValues("sent")); got != 6 {
		t.Errorf("%v sent, want 6", got)
	}
}

// TestNotifier_EscapesWhatUsersWrote: the parts of a notice that come
// from users (a failure's reason, its alerts, who asked) reach Slack
// escaped as its markdown requires, so a reason holding <!channel> pings
// no one; Picchu's own markup (the app in bold, the tag as code) still is.
func TestNotifier_EscapesWhatUsersWrote(t *testing.T) {
	f := slackfake.New(t, token)
	n := started(t, f, staticToken)
	n.Notify(Notice{App: "shop", Target: "production", Tag: "v3", Kind: Failed,
		Alerts: []string{"latency>1s"}, Reason: "aborted: <!channel> & <@U123>"})
	n.Notify(Notice{App: "shop", Target: "production", Tag: "v3", Kind: Paused, By: "<https://evil.example|alice>"})
	n.Notify(Notice{App: "shop", Target: "production", Tag: "v4", Kind: Stuck, Reason: "cluster <!here> unreachable"})
	posts := f.WaitPosts(t, 10*time.Second, "3 posts", slackfake.AtLeast(3))
	want := []string{
		"*shop* `v3` in production: failed (alerts firing: latency&gt;1s; aborted: &lt;!channel&gt; &amp; &lt;@U123&gt;); rolling back",
		"*shop* `v3` in production: paused by &lt;https://evil.example|alice&gt;",
		"*shop* `v4` in production: stuck, cluster &lt;!here&gt; unreachable",
	}
	for i, p := range posts {
		if p.Text != want[i] {
			t.Errorf("post %d: %q, want %q", i, p.Text, want[i])
		}
		text, _ := p.Blocks[0]["text"].(map[string]any)
		if text["type"] != "mrkdwn" || text["text"] != want[i] {
			t.Errorf("post %d: block %v, want %q as markdown", i, p.Blocks[0], want[i])
		}
	}
}

// TestNotifier_Duplicates: a notice that repeats its release's last one
// (a run that wrote the same transition again) is not posted.
func TestNotifier_Duplicates(t *testing.T) {
	f := slackfake.New(t, token)
	n := started(t, f, staticToken)
	for _, k := range []Kind{Failed, Failed, RolledBack} {
		n.Notify(Notice{App: "shop", Target: "production", Tag: "v2", Kind: k})
	}
	posts := f.WaitPosts(t, 10*time.Second, "2 posts", slackfake.AtLeast(2))
	kit.Eventually(t, 5*time.Second, "the duplicate counted", func() error {
		if got := testutil.ToFloat64(n.outcome.WithLabelValues("duplicate")); got != 1 {
			return fmt.Errorf("%v duplicates", got)
		}
		return nil
	})
	if len(posts) != 2 || !strings.Contains(posts[1].Text, "rolled back") {
		t.Errorf("posts %+v, want the failure then the rollback", posts)
	}
}

// TestNotifier_SlackFailures: Slack answering 500, a bad token and a token
// that cannot be read each cost one failed notice, never a blocked
// Notify; Slack rate-limiting is waited out once; then posts go on.
func TestNotifier_SlackFailures(t *testing.T) {
	f := slackfake.New(t, token)
	var mu sync.Mutex
	tok, tokErr := token, error(nil)
	n := started(t, f, func(context.Context) (string, error) { mu.Lock(); defer mu.Unlock(); return tok, tokErr })
	failed := func(want float64) {
		t.Helper()
		kit.Eventually(t, 10*time.Second, fmt.Sprintf("%v failed", want), func() error {
			if got := testutil.ToFloat64(n.outcome.WithLabelValues("failed")); got != want {
				return fmt.Errorf("%v failed", got)
			}
			return nil
		})
	}
	f.FailWith(func() slackfake.Failure { return slackfake.Failure{Status: http.StatusInternalServerError} })
	n.Notify(Notice{App: "shop", Target: "production", Tag: "v1", Kind: Started})
	failed(1)

	f.FailWith(nil)
	mu.Lock()
	tok = "xoxb-revoked"
	mu.Unlock()
	n.Notify(Notice{App: "shop", Target: "production", Tag: "v2", Kind: Started})
	failed(2)

	mu.Lock()
	tok, tokErr = "", errors.New(`secret "slack" not found`)
	mu.Unlock()
	n.Notify(Notice{App: "shop", Target: "production", Tag: "v3", Kind: Started})
	failed(3)

	mu.Lock()
	tok, tokErr = token, nil
	mu.Unlock()
	limited := true
	f.FailWith(func() slackfake.Failure {
		if limited {
			limited = false
			return slackfake.Failure{Status: http.StatusTooManyRequests, RetryAfter: 1}
		}
		return slackfake.Failure{}
	})
	n.Notify(Notice{App: "shop", Target: "production", Tag: "v4", Kind: Started})
	if posts := f.WaitPosts(t, 10*time.Second, "v4 posted", slackfake.AtLeast(1)); !strings.Contains(posts[0].Text, "`v4`") {
		t.Errorf("posts %+v, want v4's after the rate limit", posts)
	}
	failed(3)
}

// TestNotifier_NeverBlocks: with the queue full (nothing posting), Notify
// returns false at once and counts the notice dropped.
func TestNotifier_NeverBlocks(t *testing.T) {
	n, err := New(Options{Token: staticToken, Channel: "#releases", Queue: 1, Log: testr.New(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !n.Notify(Notice{App: "shop", Tag: "v1", Kind: Started}) {
		t.Fatal("the first notice was dropped")
	}
	if n.Notify(Notice{App: "shop", Tag: "v2", Kind: Started}) {
		t.Error("a notice past a full queue was queued")
	}
	if got := testutil.ToFloat64(n.outcome.WithLabelValues("dropped")); got != 1 {
		t.Errorf("%v dropped, want 1", got)
	}
}

func TestNew_NeedsATokenAndAChannel(t *testing.T) {
	if _, err := New(Options{Channel: "#releases"}); err == nil {
		t.Error("no error without a token")
	}
	if _, err := New(Options{Token: staticToken}); err == nil {
		t.Error("no error without a default channel")
	}
}

// TestNotice_RampingSaysWhenItShouldBeDone: a ramping notice with a
// forecast finish says it, in UTC to the minute.
func TestNotice_RampingSaysWhenItShouldBeDone(t *testing.T) {
	n := Notice{App: "shop", Target: "production", Tag: "v2", Kind: Ramping}
	if got, want := n.Text(), "*shop* `v2` in production: ramping up"; got != want {
		t.Errorf("without a forecast: %q, want %q", got, want)
	}
	n.Finish = time.Date(2026, 11, 24, 10, 14, 30, 0, time.FixedZone("PST", -8*3600))
	if got, want := n.Text(), "*shop* `v2` in production: ramping up, to be released by 2026-11-24 18:14 UTC"; got != want {
		t.Errorf("with a forecast: %q, want %q", got, want)
	}
}

// Package slackfake is Slack's Web API for chat.postMessage, for tests: an
// httptest server that checks every request (method, path, token, channel,
// text and blocks), records the posts and answers each with a timestamp of
// its own, or with the failure a test sets.
package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medium/picchu/test/kit"
)

// Post is a chat.postMessage request the fake took.
type Post struct {
	Channel, Text, Thread, TS string
	Blocks                    []map[string]any
}

// Failure is how the fake answers a post instead of taking it: with an
// HTTP status (and a Retry-After, in seconds, when set), or Slack's error.
type Failure struct {
	Status     int
	SlackError string
	RetryAfter int
}

// Slack is the fake API.
type Slack struct {
	t     testing.TB
	token string
	srv   *httptest.Server

	mu    sync.Mutex
	posts []Post
	fail  func() Failure
}

// New starts a fake that takes the bot token token; it stops when the
// test ends.
func New(t testing.TB, token string) *Slack {
	f := &Slack{t: t, token: token}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the API's base URL, for slack.Options.APIURL.
func (f *Slack) URL() string { return f.srv.URL + "/api/" }

// FailWith makes the fake answer each post with what fail returns; a zero
// Failure takes the post. nil takes every post.
func (f *Slack) FailWith(fail func() Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fail
}

// Posts are the posts taken so far.
func (f *Slack) Posts() []Post {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Post(nil), f.posts...)
}

// WaitPosts waits until the posts taken pass check, and returns them.
func (f *Slack) WaitPosts(t testing.TB, timeout time.Duration, what string, check func([]Post) error) []Post {
	t.Helper()
	var out []Post
	if err := kit.Poll(context.Background(), 50*time.Millisecond, timeout, what, func(context.Context) error {
		out = f.Posts()
		return check(out)
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// AtLeast is a WaitPosts check: n posts or more.
func AtLeast(n int) func([]Post) error {
	return func(posts []Post) error {
		if len(posts) < n {
			return fmt.Errorf("%d posts, want %d", len(posts), n)
		}
		return nil
	}
}

func (f *Slack) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/chat.postMessage" {
		f.t.Errorf("slackfake: unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		f.t.Errorf("slackfake: parsing the form: %v", err)
	}
	answer := func(v map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token && r.PostForm.Get("token") != f.token {
		answer(map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	p := Post{Channel: r.PostForm.Get("channel"), Text: r.PostForm.Get("text"), Thread: r.PostForm.Get("thread_ts")}
	if p.Channel == "" || strings.TrimSpace(p.Text) == "" {
		f.t.Errorf("slackfake: a post without channel or text: %v", r.PostForm)
	}
	if err := json.Unmarshal([]byte(r.PostForm.Get("blocks")), &p.Blocks); err != nil || len(p.Blocks) == 0 {
		f.t.Errorf("slackfake: blocks %q: %v", r.PostForm.Get("blocks"), err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		if fl := f.fail(); fl != (Failure{}) {
			if fl.RetryAfter > 0 {
				w.Header().Set("Retry-After", fmt.Sprint(fl.RetryAfter))
			}
			if fl.Status != 0 {
				w.WriteHeader(fl.Status)
				return
			}
			answer(map[string]any{"ok": false, "error": fl.SlackError})
			return
		}
	}
	p.TS = fmt.Sprintf("1700000000.%06d", len(f.posts)+1)
	f.posts = append(f.posts, p)
	answer(map[string]any{"ok": true, "channel": p.Channel, "ts": p.TS})
}

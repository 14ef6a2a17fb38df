package dashboard_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
)

// startDashboard runs `kubectl picchu dashboard --port 0` in-process with
// the kubeconfig config and args until the test ends, and returns its
// address and the URL it printed, which holds its secret.
func startDashboard(t *testing.T, config string, args ...string) (base, printed string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	var errOut strings.Builder
	done := make(chan error, 1)
	go func() {
		cmd := plugin.NewRootCommandWithOptions(plugin.Options{
			IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: outW, ErrOut: &syncWriter{w: &errOut}},
		})
		cmd.SetArgs(append([]string{"--kubeconfig", config, "dashboard", "--port", "0"}, args...))
		err := cmd.ExecuteContext(ctx)
		_ = outW.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kubectl picchu dashboard: %v", err)
		}
	})
	first := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(outR)
		if lines.Scan() {
			first <- lines.Text()
		}
		close(first)
		_, _ = io.Copy(io.Discard, outR)
	}()
	select {
	case line, ok := <-first:
		m := regexp.MustCompile(`(http://127\.0\.0\.1:\d+/)\?token=[0-9a-f]{64}\b`).FindStringSubmatch(line)
		if !ok || m == nil {
			t.Fatalf("the dashboard printed %q, with no URL and secret", line)
		}
		return m[1], m[0]
	case <-time.After(time.Minute):
		t.Fatal("kubectl picchu dashboard printed no URL within a minute")
	}
	return "", ""
}

// open opens the URL a dashboard at base printed, as its owner does: the
// dashboard keeps its secret in a cookie the page's script cannot read, and
// sends the browser on to base, without the secret in its address.
func (b *browser) open(base, printed string) {
	b.t.Helper()
	b.do("opening the printed URL", chromedp.Navigate(printed), chromedp.WaitReady("body"))
	if at, err := eval[string](b, `location.href`); err != nil || at != base {
		b.t.Fatalf("after opening %s, the browser is at %q (%v), want %s", printed, at, err, base)
	}
	if cookies, err := eval[string](b, `document.cookie`); err != nil || cookies != "" {
		b.t.Errorf("the page's script reads the cookies %q (%v)", cookies, err)
	}
}

// syncWriter is a writer safe for the dashboard's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// browser is a headless Chromium tab, with the JavaScript dialogs it
// opened (none, unless a page runs script it should not).
type browser struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	dialogs []string
}

// newBrowser starts Chromium for the test, with a new profile, closed when
// the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	home := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(filepath.Join(home, "profile")),
		// Its caches and settings (fontconfig's among them) in the test's
		// own directory, not the user's home.
		chromedp.Env("HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "XDG_CONFIG_HOME="+filepath.Join(home, "config")),
		// As root, and with no network beyond loopback: no sandbox, no GPU,
		// no QUIC, no component updates.
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			b.mu.Lock()
			b.dialogs = append(b.dialogs, string(d.Type)+": "+d.Message)
			b.mu.Unlock()
			// Close it, or the page waits for it.
			go func() { _, _ = chromedp.Run(b.ctx, chromedp.Func(dismiss)) }()
		}
	}))
	b.ctx = ctx
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first run starts the browser, on a context with no deadline.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium (%s): %v", chromium, err)
	}
	return b
}

// dismiss closes the dialog a page opened.
func dismiss(ctx context.Context, t *chromedp.Target) error {
	_, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
	return err
}

// do runs steps, with a minute for them all.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.screenshot("failed")
		text, _ := eval[string](b, `location.href + "\n" + document.body.innerText`)
		b.t.Fatalf("%s: %v; the page:\n%s", what, err, text)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, expression string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expression))
}

// until evaluates expression in the page until check accepts its value,
// for at most timeout, and returns the value accepted.
func until[T any](b *browser, timeout time.Duration, what, expression string, check func(T) error) T {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := eval[T](b, expression)
		if err == nil {
			if err = check(v); err == nil {
				return v
			}
		}
		if time.Now().After(deadline) {
			b.screenshot("timed-out")
			b.t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		<-tick.C
	}
}

// text is the text of the page's main section.
func (b *browser) text() string {
	b.t.Helper()
	s, err := eval[string](b, `document.getElementById("main").innerText`)
	if err != nil {
		b.t.Fatalf("reading the page: %v", err)
	}
	return s
}

// screenshot writes the whole page, as a PNG named name, to the test's
// artifacts and to -screenshots when set.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	dirs := []string{b.t.ArtifactDir()}
	if *screenshots != "" {
		dirs = append(dirs, *screenshots)
	}
	for _, dir := range dirs {
		if err := os.WriteFile(filepath.Join(dir, "dashboard-"+name+".png"), png, 0o644); err != nil {
			b.t.Errorf("writing screenshot %s: %v", name, err)
		}
	}
}

// noDialogs fails the test if a page opened a JavaScript dialog.
func (b *browser) noDialogs() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		b.t.Errorf("a page ran script and opened dialogs: %q", b.dialogs)
	}
}

// cells are the percents, by cluster, of build tag in target's matrix on
// the app page, as the browser shows them.
func cells(target, tag string) string {
	return fmt.Sprintf(`Object.fromEntries(Array.from(document.querySelectorAll(
		'section[aria-labelledby="target-%s"] tr[data-build="%s"] td[data-cluster]')).map(td => [td.dataset.cluster, td.textContent.trim()]))`,
		target, tag)
}

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medium/picchu/test/e2e/fleet"
)

// pageFollower is a page of `kubectl picchu dashboard` followed as its
// script follows it: at each server-sent event, the page's main section is
// asked for again. It keeps what each answer said of the release.
type pageFollower struct {
	cancel context.CancelFunc
	done   chan error
	// client is the dashboard owner's browser.
	client *http.Client

	mu sync.Mutex
	// releasing are the "Releasing: <tag> at <n>%" lines, in the order shown.
	releasing []string
	// states are the states each build was shown in, in order, by tag.
	states map[string][]string
}

var (
	releasingLine = regexp.MustCompile(`Releasing: <strong>([^<]*)</strong>`)
	buildState    = regexp.MustCompile(`<tr [^>]*data-build="([^"]+)"[^>]*>\s*<th scope="row">[^<]*</th><td class="state">([^<]*)</td>`)
)

// followPage follows the dashboard page at path until stop, with its
// owner's browser.
func followPage(t *testing.T, dash *fleet.Dashboard, path string) *pageFollower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	base := dash.URL
	p := &pageFollower{cancel: cancel, done: make(chan error, 1), states: map[string][]string{}, client: dash.Client}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("following the dashboard's events: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("following the dashboard's events: %s", resp.Status)
	}
	if err := p.read(ctx, base+path); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer resp.Body.Close()
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "event: changed") {
				if err := p.read(ctx, base+path); err != nil {
					p.done <- err
					return
				}
			}
		}
		p.done <- nil
	}()
	return p
}

// read asks for the page's main section, as the page's script does, and
// keeps what it shows.
func (p *pageFollower) read(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Picchu-Fragment", "main")
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("reading %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode == http.StatusNotFound {
		return nil // the app has nothing yet
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reading %s: %s %v: %s", url, resp.Status, err, body)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := releasingLine.FindSubmatch(body); m != nil {
		if s := string(m[1]); len(p.releasing) == 0 || p.releasing[len(p.releasing)-1] != s {
			p.releasing = append(p.releasing, s)
		}
	}
	for _, m := range buildState.FindAllSubmatch(body, -1) {
		tag, state := string(m[1]), string(m[2])
		if ss := p.states[tag]; len(ss) == 0 || ss[len(ss)-1] != state {
			p.states[tag] = append(ss, state)
		}
	}
	return nil
}

// shown is what the page showed so far.
func (p *pageFollower) shown() ([]string, map[string][]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	states := map[string][]string{}
	for tag, ss := range p.states {
		states[tag] = slices.Clone(ss)
	}
	return slices.Clone(p.releasing), states
}

// stop stops following and returns what the page showed.
func (p *pageFollower) stop(t *testing.T) ([]string, map[string][]string) {
	t.Helper()
	p.cancel()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("following the dashboard: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("following the dashboard: it did not stop within 10 s")
	}
	return p.shown()
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// profiler fetches the operator's profiles (--pprof-bind-address) over the
// first seconds of each phase, into files of dir.
type profiler struct {
	url string // the operator's /debug/pprof/ base
	dir string
	// seconds is how long each profile lasts from the phase's start.
	seconds int
}

// profiles are the ones fetched: a CPU profile, and the goroutines' waits
// on channels and locks (block) and the locks' contention (mutex) over the
// same span.
var profiles = []string{"profile", "block", "mutex"}

// start fetches every profile of the phase tag in the background; wait
// waits for them and returns what failed.
func (p *profiler) start(ctx context.Context, tag string) (wait func() error) {
	if p == nil {
		return func() error { return nil }
	}
	var wg sync.WaitGroup
	errs := make([]error, len(profiles))
	for i, name := range profiles {
		wg.Go(func() {
			path := filepath.Join(p.dir, fmt.Sprintf("%s-%s.pprof", tag, name))
			errs[i] = p.fetch(ctx, fmt.Sprintf("%s%s?seconds=%d", p.url, name, p.seconds), path)
		})
	}
	return func() error {
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("profiling %s: %w", tag, err)
		}
		logf("%s: profiles of the phase's first %d s in %s (go tool pprof -top FILE)", tag, p.seconds, p.dir)
		return nil
	}
}

// heap writes the operator's heap profile, at the moment the benchmark
// reads its resident memory after both releases, to heap.pprof (read it
// with go tool pprof -sample_index=inuse_space -top FILE).
func (p *profiler) heap(ctx context.Context) error {
	if p == nil {
		return nil
	}
	path := filepath.Join(p.dir, "heap.pprof")
	if err := p.fetch(ctx, p.url+"heap?gc=1", path); err != nil {
		return fmt.Errorf("profiling the heap: %w", err)
	}
	logf("the operator's heap after both releases in %s", path)
	return nil
}

// fetch writes what url answers to path.
func (p *profiler) fetch(ctx context.Context, url, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.seconds)*time.Second+time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("reading %s: %w", url, err)
	}
	return f.Close()
}

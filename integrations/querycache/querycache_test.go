package querycache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/medium/picchu/integrations/querycache"
)

func wrap(query string, err error) error { return fmt.Errorf("query %s: %w", query, err) }

// TestGet_CachesAnswersNotErrors checks an answer is fetched once while it
// is cached, and an error is returned as it is and fetched again.
func TestGet_CachesAnswersNotErrors(t *testing.T) {
	c := querycache.New[int](8, time.Hour, wrap)
	fetches := 0
	fetch := func(context.Context) (int, error) { fetches++; return 42, nil }
	for range 3 {
		if v, err := c.Get(context.Background(), "q", fetch); v != 42 || err != nil {
			t.Fatalf("Get = %d, %v; want 42", v, err)
		}
	}
	if fetches != 1 || c.Len() != 1 {
		t.Errorf("%d fetches, %d cached; want 1 and 1", fetches, c.Len())
	}
	boom := errors.New("boom")
	failing := func(context.Context) (int, error) { fetches++; return 0, boom }
	for range 2 {
		if _, err := c.Get(context.Background(), "other", failing); err != boom {
			t.Errorf("Get = %v, want the fetch's own error", err)
		}
	}
	if fetches != 3 {
		t.Errorf("%d fetches, want 3: a failed fetch is not cached", fetches)
	}
}

// TestGet_CallersShareOneFetchAndLeaveAlone checks that callers missing
// the cache together share one fetch, and that one caller whose context
// ends gets its wrapped context error without failing the others.
func TestGet_CallersShareOneFetchAndLeaveAlone(t *testing.T) {
	c := querycache.New[string](8, time.Hour, wrap)
	const callers = 4
	joined := make(chan struct{}, callers+1)
	c.OnJoined(func(string) { joined <- struct{}{} })
	release := make(chan struct{})
	var fetches atomic.Int32
	fetch := func(ctx context.Context) (string, error) {
		fetches.Add(1)
		<-release
		return "answer", ctx.Err()
	}
	leaving, leave := context.WithCancel(context.Background())
	leftErr := make(chan error, 1)
	go func() {
		_, err := c.Get(leaving, "q", fetch)
		leftErr <- err
	}()
	<-joined
	var wg sync.WaitGroup
	answers := make(chan string, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Get(context.Background(), "q", fetch)
			if err != nil {
				t.Errorf("Get: %v", err)
			}
			answers <- v
		}()
	}
	for range callers {
		<-joined
	}
	leave()
	if err := <-leftErr; !errors.Is(err, context.Canceled) || err.Error() != "query q: context canceled" {
		t.Errorf("the caller that left got %v, want its wrapped context error", err)
	}
	close(release)
	wg.Wait()
	close(answers)
	for v := range answers {
		if v != "answer" {
			t.Errorf("a caller got %q", v)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
	if c.Waiting() != 0 {
		t.Errorf("%d callers still waiting", c.Waiting())
	}
}

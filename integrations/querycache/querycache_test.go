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

// TestGet_NotBefore checks that a caller asking for answers fetched since a
// time (a build whose judgment starts over) never gets one kept from before
// it, and that the answer it causes serves every caller after.
func TestGet_NotBefore(t *testing.T) {
	c := querycache.New[string](8, time.Hour, wrap)
	answer := "alert"
	fetches := 0
	fetch := func(context.Context) (string, error) { fetches++; return answer, nil }
	if v, err := c.Get(context.Background(), "q", fetch); v != "alert" || err != nil {
		t.Fatalf("Get = %q, %v; want alert", v, err)
	}
	answer = "ok"
	retried := time.Now()
	if v, err := c.Get(context.Background(), "q", fetch); v != "alert" || err != nil || fetches != 1 {
		t.Fatalf("Get without NotBefore = %q, %v after %d fetches; want the cached alert", v, err, fetches)
	}
	if v, err := c.Get(querycache.NotBefore(context.Background(), retried), "q", fetch); v != "ok" || err != nil || fetches != 2 {
		t.Fatalf("Get NotBefore the retry = %q, %v after %d fetches; want ok, fetched again", v, err, fetches)
	}
	if v, err := c.Get(querycache.NotBefore(context.Background(), retried), "q", fetch); v != "ok" || err != nil || fetches != 2 {
		t.Errorf("Get NotBefore the retry again = %q, %v after %d fetches; want ok from the cache", v, err, fetches)
	}
}

// TestGet_NotBeforeWaitsOutAnOlderFlight checks that a caller asking for
// answers since a time does not take the answer of a fetch that began
// before it, but fetches again once that fetch ends.
func TestGet_NotBeforeWaitsOutAnOlderFlight(t *testing.T) {
	c := querycache.New[string](8, time.Hour, wrap)
	joined := make(chan struct{}, 4)
	c.OnJoined(func(string) { joined <- struct{}{} })
	started, release := make(chan struct{}), make(chan struct{})
	var fetches atomic.Int32
	fetch := func(context.Context) (string, error) {
		if fetches.Add(1) == 1 {
			close(started)
			<-release
			return "before", nil
		}
		return "after", nil
	}
	first := make(chan string, 1)
	go func() {
		v, _ := c.Get(context.Background(), "q", fetch)
		first <- v
	}()
	<-started // the first flight is under way
	<-joined
	since := time.Now()
	second := make(chan string, 1)
	go func() {
		v, err := c.Get(querycache.NotBefore(context.Background(), since), "q", fetch)
		if err != nil {
			v = err.Error()
		}
		second <- v
	}()
	<-joined // the second caller joined the first flight
	close(release)
	if v := <-first; v != "before" {
		t.Errorf("first caller got %q, want before", v)
	}
	if v := <-second; v != "after" {
		t.Errorf("caller asking since the flight began got %q, want after", v)
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

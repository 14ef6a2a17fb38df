package breaker_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medium/picchu/fleet/breaker"
)

// fakeClock is a clock the tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// The policy of the state machine tests. With a jitter draw of 0.5 the open
// periods are 1s, 1.5s, 3s, 6s, then 7.5s from the fifth opening on.
var testPolicy = breaker.Policy{Failures: 3, MinBackoff: time.Second, MaxBackoff: 10 * time.Second}

// step is one action on a breaker, and what should follow from it.
type step struct {
	name string // what the step does, for failure messages
	run  func(t *testing.T, b *breaker.Breaker, c *fakeClock)
}

// expectState fails t unless b is in state want.
func expectState(t *testing.T, b *breaker.Breaker, want breaker.State) {
	t.Helper()
	if got := b.Snapshot().State; got != want {
		t.Fatalf("state %v, want %v", got, want)
	}
}

// allowed calls Allow, expects it to let the request through (as a probe
// or not) and the breaker to be in state want afterwards.
func allowed(probe bool, want breaker.State) step {
	return step{fmt.Sprintf("allowed(probe=%v)", probe), func(t *testing.T, b *breaker.Breaker, _ *fakeClock) {
		t.Helper()
		got, err := b.Allow()
		if err != nil || got != probe {
			t.Fatalf("Allow() = %v, %v; want %v, nil", got, err, probe)
		}
		expectState(t, b, want)
	}}
}

// denied calls Allow and expects it to fail fast with an *OpenError
// carrying the breaker's RetryAt, leaving it in state want.
func denied(want breaker.State) step {
	return step{"denied", func(t *testing.T, b *breaker.Breaker, _ *fakeClock) {
		t.Helper()
		probe, err := b.Allow()
		var open *breaker.OpenError
		if probe || !errors.Is(err, breaker.ErrOpen) || !errors.As(err, &open) {
			t.Fatalf("Allow() = %v, %v; want false, an *OpenError", probe, err)
		}
		if s := b.Snapshot(); !open.RetryAt.Equal(s.RetryAt) || open.LastError != s.LastError {
			t.Fatalf("OpenError %+v does not match snapshot %+v", open, s)
		}
		expectState(t, b, want)
	}}
}

// fail reports a failure and expects state want afterwards.
func fail(want breaker.State) step {
	return step{"fail", func(t *testing.T, b *breaker.Breaker, _ *fakeClock) {
		t.Helper()
		b.Failure(errors.New("dial tcp 10.0.0.1:443: i/o timeout"))
		expectState(t, b, want)
	}}
}

// failN reports n failures, expecting the breaker to stay Closed through
// all but the last, after which it must be in state want.
func failN(n int, want breaker.State) []step {
	var steps []step
	for range n - 1 {
		steps = append(steps, fail(breaker.Closed))
	}
	return append(steps, fail(want))
}

// succeed reports a success, which always closes the breaker.
func succeed() step {
	return step{"succeed", func(t *testing.T, b *breaker.Breaker, _ *fakeClock) {
		t.Helper()
		b.Success(20 * time.Millisecond)
		expectState(t, b, breaker.Closed)
		if s := b.Snapshot(); s.Latency != 20*time.Millisecond || s.LastError != "" || s.Opens != 0 {
			t.Fatalf("after Success: %+v", s)
		}
	}}
}

// abandon reports an abandoned request and expects state want afterwards.
func abandon(probe bool, want breaker.State) step {
	return step{fmt.Sprintf("abandon(probe=%v)", probe), func(t *testing.T, b *breaker.Breaker, _ *fakeClock) {
		t.Helper()
		b.Abandon(probe)
		expectState(t, b, want)
	}}
}

// wait moves the clock forward by d.
func wait(d time.Duration) step {
	return step{"wait " + d.String(), func(t *testing.T, _ *breaker.Breaker, c *fakeClock) {
		c.Advance(d)
	}}
}

// openFor expects the breaker to be Open for exactly d after its n-th
// consecutive opening.
func openFor(n int, d time.Duration) step {
	return step{fmt.Sprintf("openFor(%d, %v)", n, d), func(t *testing.T, b *breaker.Breaker, _ *fakeClock) {
		t.Helper()
		s := b.Snapshot()
		if s.State != breaker.Open || s.Opens != n || s.RetryAt.Sub(s.Since) != d {
			t.Fatalf("snapshot %v, Opens %d, open for %v; want Open, %d, %v",
				s.State, s.Opens, s.RetryAt.Sub(s.Since), n, d)
		}
	}}
}

// failures expects n consecutive failures.
func failures(n int) step {
	return step{fmt.Sprintf("failures(%d)", n), func(t *testing.T, b *breaker.Breaker, _ *fakeClock) {
		t.Helper()
		if got := b.Snapshot().ConsecutiveFailures; got != n {
			t.Fatalf("ConsecutiveFailures %d, want %d", got, n)
		}
	}}
}

// join flattens steps and lists of steps into one list.
func join(parts ...any) []step {
	var steps []step
	for _, p := range parts {
		switch p := p.(type) {
		case step:
			steps = append(steps, p)
		case []step:
			steps = append(steps, p...)
		}
	}
	return steps
}

// Shorthands for the transitions OnChange should see.
const (
	closedToOpen = "Closed>Open"
	openToHalf   = "Open>HalfOpen"
	halfToOpen   = "HalfOpen>Open"
	halfToClosed = "HalfOpen>Closed"
	openToClosed = "Open>Closed"
)

// machineCase is a case of TestStateMachine: steps on a breaker following
// testPolicy, and the transitions OnChange should see.
type machineCase struct {
	name        string
	steps       []step
	transitions []string
}

// machineCases returns the cases of TestStateMachine.
func machineCases() []machineCase {
	return []machineCase{
		{"closed below the threshold", join(
			failN(2, breaker.Closed), allowed(false, breaker.Closed), failures(2),
		), nil},
		{"opens at the threshold", join(
			failN(3, breaker.Open), openFor(1, time.Second), failures(3),
		), []string{closedToOpen}},
		{"fails fast while open", join(
			failN(3, breaker.Open), denied(breaker.Open),
			wait(999*time.Millisecond), denied(breaker.Open), openFor(1, time.Second),
		), []string{closedToOpen}},
		{"half-opens at RetryAt with exactly one probe", join(
			failN(3, breaker.Open), wait(time.Second-time.Nanosecond), denied(breaker.Open), wait(time.Nanosecond),
			allowed(true, breaker.HalfOpen), denied(breaker.HalfOpen), denied(breaker.HalfOpen),
		), []string{closedToOpen, openToHalf}},
		{"probe success closes and resets the backoff", join(
			failN(3, breaker.Open), wait(time.Second), allowed(true, breaker.HalfOpen),
			succeed(), failures(0), allowed(false, breaker.Closed),
			failN(3, breaker.Open), openFor(1, time.Second),
		), []string{closedToOpen, openToHalf, halfToClosed, closedToOpen}},
		{"probe failure re-opens with a longer backoff", join(
			failN(3, breaker.Open), wait(time.Second), allowed(true, breaker.HalfOpen),
			fail(breaker.Open), openFor(2, 1500*time.Millisecond), denied(breaker.Open),
			wait(1500*time.Millisecond), allowed(true, breaker.HalfOpen),
			fail(breaker.Open), openFor(3, 3*time.Second),
		), []string{closedToOpen, openToHalf, halfToOpen, openToHalf, halfToOpen}},
		{"lost probe re-allowed after MaxBackoff", join(
			failN(3, breaker.Open), wait(time.Second), allowed(true, breaker.HalfOpen),
			wait(10*time.Second-time.Nanosecond), denied(breaker.HalfOpen),
			wait(time.Nanosecond), allowed(true, breaker.HalfOpen), denied(breaker.HalfOpen),
		), []string{closedToOpen, openToHalf}},
		{"abandoned probe lets the next one through", join(
			failN(3, breaker.Open), wait(time.Second), allowed(true, breaker.HalfOpen),
			abandon(false, breaker.HalfOpen), denied(breaker.HalfOpen),
			abandon(true, breaker.HalfOpen), allowed(true, breaker.HalfOpen), denied(breaker.HalfOpen),
		), []string{closedToOpen, openToHalf}},
		{"success in Closed resets the consecutive count", join(
			failN(2, breaker.Closed), succeed(), failN(2, breaker.Closed), failures(2),
			fail(breaker.Open),
		), []string{closedToOpen}},
		{"late success while Open closes", join(
			failN(3, breaker.Open), succeed(), failures(0), allowed(false, breaker.Closed),
		), []string{closedToOpen, openToClosed}},
		{"late failure while Open is only counted", join(
			failN(3, breaker.Open), fail(breaker.Open), failures(4), openFor(1, time.Second),
		), []string{closedToOpen}},
	}
}

func TestStateMachine(t *testing.T) {
	for _, tt := range machineCases() {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClock()
			var seen []string
			var b *breaker.Breaker
			b = breaker.New(testPolicy,
				breaker.WithClock(c.Now),
				breaker.WithRand(func() float64 { return 0.5 }),
				breaker.WithOnChange(func(from, to breaker.State, s breaker.Snapshot) {
					// Snapshot here checks that the callback runs without the lock.
					if s.State != to || !s.Since.Equal(c.Now()) || b.Snapshot().State != to || from == to {
						t.Errorf("OnChange(%v, %v) at %v with snapshot %+v", from, to, c.Now(), s)
					}
					seen = append(seen, from.String()+">"+to.String())
				}))
			for i, s := range tt.steps {
				t.Logf("step %d: %s", i, s.name)
				s.run(t, b, c)
			}
			if strings.Join(seen, " ") != strings.Join(tt.transitions, " ") {
				t.Fatalf("transitions %q, want %q", seen, tt.transitions)
			}
		})
	}
}

func TestOpenError(t *testing.T) {
	c := newFakeClock()
	b := breaker.New(breaker.Policy{Failures: 1}, breaker.WithClock(c.Now))
	b.Failure(errors.New("GET cluster-a: connection refused"))
	_, err := b.Allow()
	var open *breaker.OpenError
	if !errors.As(err, &open) || !errors.Is(fmt.Errorf("wrapped: %w", err), breaker.ErrOpen) {
		t.Fatalf("Allow() error %v is not an *OpenError matching ErrOpen", err)
	}
	msg := err.Error()
	for _, want := range []string{"circuit breaker open", "connection refused", open.RetryAt.Format(time.RFC3339Nano)} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if !open.RetryAt.Equal(c.Now().Add(time.Second)) {
		t.Errorf("RetryAt %v, want one second (the first open period) after %v", open.RetryAt, c.Now())
	}
}

func TestFailureWithoutError(t *testing.T) {
	b := breaker.New(breaker.Policy{})
	b.Failure(nil)
	if s := b.Snapshot(); s.LastError == "" || s.ConsecutiveFailures != 1 {
		t.Fatalf("after Failure(nil): %+v", s)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[breaker.State]string{
		breaker.Closed: "Closed", breaker.HalfOpen: "HalfOpen", breaker.Open: "Open", 7: "State(7)",
	} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

func TestPolicyDefaults(t *testing.T) {
	b := breaker.New(breaker.Policy{}, breaker.WithRand(func() float64 { return 0 }))
	for range breaker.DefaultFailures - 1 {
		b.Failure(errors.New("boom"))
	}
	if s := b.Snapshot(); s.State != breaker.Closed {
		t.Fatalf("opened after %d failures, want %d", s.ConsecutiveFailures, breaker.DefaultFailures)
	}
	b.Failure(errors.New("boom"))
	if s := b.Snapshot(); s.State != breaker.Open || s.RetryAt.Sub(s.Since) != breaker.DefaultMinBackoff {
		t.Fatalf("after %d failures: %+v", breaker.DefaultFailures, s)
	}
	var zero breaker.Policy
	if got := zero.Backoff(math.MaxInt, math.Nextafter(1, 0)); got > breaker.DefaultMaxBackoff || got < breaker.DefaultMaxBackoff/2 {
		t.Fatalf("zero Policy's longest backoff %v, want within (%v, %v]",
			got, breaker.DefaultMaxBackoff/2, breaker.DefaultMaxBackoff)
	}
}

// almostOne is the largest jitter draw below 1: the backoff's upper envelope.
var almostOne = math.Nextafter(1, 0)

func TestBackoffProperties(t *testing.T) {
	policies := []breaker.Policy{
		{}, // the defaults
		{MinBackoff: time.Second, MaxBackoff: 5 * time.Minute},
		{MinBackoff: 3 * time.Nanosecond, MaxBackoff: 1000 * time.Nanosecond},
		{MinBackoff: time.Second, MaxBackoff: time.Second},
		{MinBackoff: time.Minute, MaxBackoff: time.Second}, // Max below Min: raised to Min
		{MinBackoff: time.Millisecond, MaxBackoff: time.Duration(math.MaxInt64)},
	}
	draws := []float64{0, 1e-12, 0.25, 0.5, 0.75, almostOne, 1, 2, -1, math.NaN(), math.Inf(1)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		draws = append(draws, rng.Float64())
	}
	for _, p := range policies {
		lo, hi := normalized(p)
		prev := time.Duration(0)
		for _, n := range counts() {
			for _, u := range draws {
				if d := p.Backoff(n, u); d < lo || d > hi {
					t.Fatalf("%+v.Backoff(%d, %v) = %v, outside [%v, %v]", p, n, u, d, lo, hi)
				}
			}
			top := p.Backoff(n, almostOne)
			if top < prev {
				t.Fatalf("%+v: upper envelope falls from %v to %v at n=%d", p, prev, top, n)
			}
			prev = top
		}
	}
}

// counts returns the openings the backoff is checked at: every one up to
// 200 (so past the doubling's saturation), then some huge ones.
func counts() []int {
	var ns []int
	for n := -1; n <= 200; n++ {
		ns = append(ns, n)
	}
	return append(ns, 1<<20, 1<<40, math.MaxInt-1, math.MaxInt)
}

// normalized returns the bounds p's backoff must stay within.
func normalized(p breaker.Policy) (lo, hi time.Duration) {
	lo, hi = p.MinBackoff, p.MaxBackoff
	if lo <= 0 {
		lo = breaker.DefaultMinBackoff
	}
	if hi <= 0 {
		hi = breaker.DefaultMaxBackoff
	}
	return lo, max(hi, lo)
}

func TestBackoffFormula(t *testing.T) {
	p := breaker.Policy{MinBackoff: time.Second, MaxBackoff: 5 * time.Minute}
	tests := []struct {
		n    int
		u    float64
		want time.Duration
	}{
		{1, 0, time.Second}, // d/2 is below MinBackoff: raised to it
		{1, almostOne, time.Second},
		{2, 0, time.Second},
		{2, 0.5, 1500 * time.Millisecond},
		{4, 0, 4 * time.Second},
		{4, 0.5, 6 * time.Second},
		{9, 0, 128 * time.Second},
		{10, 0, 150 * time.Second}, // 512s capped at 300s, halved
		{10, 0.5, 225 * time.Second},
		{math.MaxInt, 0.5, 225 * time.Second},
	}
	for _, tt := range tests {
		if got := p.Backoff(tt.n, tt.u); got != tt.want {
			t.Errorf("Backoff(%d, %v) = %v, want %v", tt.n, tt.u, got, tt.want)
		}
	}
}

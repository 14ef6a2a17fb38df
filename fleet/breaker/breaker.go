package breaker

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// State is where a Breaker stands: Closed, HalfOpen or Open.
type State int

const (
	// Closed lets every request through: the cluster is answering.
	Closed State = iota
	// HalfOpen lets one probe request through to learn whether the cluster
	// is back; the others fail fast.
	HalfOpen
	// Open fails every request fast until the backoff period ends.
	Open
)

// String returns "Closed", "HalfOpen" or "Open".
func (s State) String() string {
	switch s {
	case Closed:
		return "Closed"
	case HalfOpen:
		return "HalfOpen"
	case Open:
		return "Open"
	default:
		return fmt.Sprintf("State(%d)", int(s))
	}
}

// The defaults of a Policy's zero fields.
const (
	// DefaultFailures is the number of consecutive failures that opens a
	// breaker when Policy.Failures is not set.
	DefaultFailures = 3
	// DefaultMinBackoff is the first open period when Policy.MinBackoff is
	// not set.
	DefaultMinBackoff = time.Second
	// DefaultMaxBackoff is the longest open period when Policy.MaxBackoff is
	// not set.
	DefaultMaxBackoff = 5 * time.Minute
)

// Policy says when a Breaker opens and for how long. Zero (or negative)
// fields take their defaults; a MaxBackoff below MinBackoff is raised to it.
type Policy struct {
	// Failures is the number of consecutive failures that opens the breaker
	// (DefaultFailures when 0).
	Failures int
	// MinBackoff is the open period after the first opening
	// (DefaultMinBackoff when 0).
	MinBackoff time.Duration
	// MaxBackoff caps the open period (DefaultMaxBackoff when 0). It is also
	// how long a probe may stay unanswered before another one is let through.
	MaxBackoff time.Duration
}

// withDefaults returns p with its zero fields set to the defaults.
func (p Policy) withDefaults() Policy {
	if p.Failures <= 0 {
		p.Failures = DefaultFailures
	}
	if p.MinBackoff <= 0 {
		p.MinBackoff = DefaultMinBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = p.MinBackoff
	}
	return p
}

// Backoff returns the open period after the n-th consecutive opening
// (n < 1 counts as 1), given a jitter draw u in [0, 1). It uses "equal
// jitter": with d = min(MaxBackoff, MinBackoff*2^(n-1)) it returns
// d/2 + u*d/2, never below MinBackoff and never above MaxBackoff. A u
// outside [0, 1) is clamped into it (NaN counts as 0). Any n, however large,
// is safe: the doubling saturates at MaxBackoff instead of overflowing.
func (p Policy) Backoff(n int, u float64) time.Duration {
	p = p.withDefaults()
	d := p.ceiling(n)
	half := d / 2
	b := half + time.Duration(unit(u)*float64(d-half))
	return min(max(b, p.MinBackoff), p.MaxBackoff)
}

// ceiling returns min(MaxBackoff, MinBackoff*2^(n-1)) without overflowing.
// p must have its defaults set.
func (p Policy) ceiling(n int) time.Duration {
	shift := max(n, 1) - 1
	// MinBackoff<<shift > MaxBackoff exactly when MinBackoff > MaxBackoff>>shift,
	// and the right-hand side cannot overflow.
	if shift >= 63 || p.MinBackoff > p.MaxBackoff>>shift {
		return p.MaxBackoff
	}
	return p.MinBackoff << shift
}

// unit clamps u into [0, 1); NaN becomes 0.
func unit(u float64) float64 {
	switch {
	case !(u >= 0): // also catches NaN
		return 0
	case u >= 1:
		return math.Nextafter(1, 0)
	default:
		return u
	}
}

// ErrOpen is the error an open breaker fails requests with: every *OpenError
// matches it under errors.Is.
var ErrOpen = errors.New("circuit breaker open")

// OpenError is the error of a request that a breaker did not let through.
type OpenError struct {
	// LastError is the text of the last failure the breaker saw.
	LastError string
	// RetryAt is when the breaker lets its next probe through.
	RetryAt time.Time
}

// Error says that the breaker is open, what its last error was, and when it
// lets the next probe through.
func (e *OpenError) Error() string {
	if e == nil {
		return ErrOpen.Error()
	}
	last := e.LastError
	if last == "" {
		last = "none recorded"
	}
	return fmt.Sprintf("%s (last error: %s), next probe at %s",
		ErrOpen, last, e.RetryAt.Format(time.RFC3339Nano))
}

// Is reports whether target is ErrOpen, so that errors.Is(err, ErrOpen)
// holds for every *OpenError, wrapped or not.
func (e *OpenError) Is(target error) bool {
	return target == ErrOpen
}

// Snapshot is a copy of a breaker's state at one instant.
type Snapshot struct {
	// State is the breaker's state.
	State State
	// Since is when the breaker entered State.
	Since time.Time
	// LastError is the text of the last failure, or "" when there has been
	// none since the last success.
	LastError string
	// ConsecutiveFailures is the number of failures since the last success.
	ConsecutiveFailures int
	// Opens is the number of consecutive openings without a success; it
	// drives the backoff.
	Opens int
	// RetryAt is, when Open, when the breaker lets a probe through; when
	// HalfOpen, when an unanswered probe is given up and another one let
	// through. It is zero when Closed.
	RetryAt time.Time
	// Latency is the latency of the last successful request.
	Latency time.Duration
}

// Option configures a Breaker made by New.
type Option func(*Breaker)

// WithClock makes the breaker read the time from now instead of time.Now.
// now is called with the breaker's lock held, so it must not call the
// breaker. A nil now is ignored.
func WithClock(now func() time.Time) Option {
	return func(b *Breaker) {
		if now != nil {
			b.now = now
		}
	}
}

// WithRand makes the breaker draw its backoff jitter, in [0, 1), from draw
// instead of math/rand/v2. draw is called with the breaker's lock held, so
// it must not call the breaker. A nil draw is ignored.
func WithRand(draw func() float64) Option {
	return func(b *Breaker) {
		if draw != nil {
			b.draw = draw
		}
	}
}

// WithOnChange makes the breaker call onChange on every state transition,
// with the states left and entered and a snapshot taken at the transition.
// It is called without the breaker's lock held, so it may call the breaker
// (Snapshot, say); when several goroutines use the breaker, calls may come
// in a different order than the transitions (the snapshot's Since orders
// them).
func WithOnChange(onChange func(from, to State, s Snapshot)) Option {
	return func(b *Breaker) {
		b.onChange = onChange
	}
}

// Breaker is a circuit breaker guarding one cluster. It is safe for
// concurrent use. Make one with New.
type Breaker struct {
	policy   Policy
	now      func() time.Time
	draw     func() float64
	onChange func(from, to State, s Snapshot)

	mu        sync.Mutex
	state     State
	since     time.Time
	lastError string
	failures  int
	opens     int
	retryAt   time.Time
	latency   time.Duration
	probing   bool // a probe was let through and has not reported yet
}

// New returns a Closed breaker following policy p.
func New(p Policy, opts ...Option) *Breaker {
	b := &Breaker{policy: p.withDefaults(), now: time.Now, draw: rand.Float64}
	for _, opt := range opts {
		if opt != nil {
			opt(b)
		}
	}
	b.since = b.now()
	return b
}

// Allow asks whether a request may go ahead. A nil error lets it through;
// probe is true when it is the one probe of a HalfOpen breaker. Either way
// the caller must report the outcome with Success, Failure or Abandon.
//
// An Open breaker fails the request at once with an *OpenError until its
// RetryAt; from then on it half-opens and lets one probe through. While the
// probe is outstanding other requests fail fast, until the probe reports or
// Policy.MaxBackoff passes without a report, when another probe is let
// through.
func (b *Breaker) Allow() (probe bool, err error) {
	b.update(func(now time.Time) {
		probe, err = b.allowLocked(now)
	})
	return probe, err
}

// allowLocked is Allow with the lock held.
func (b *Breaker) allowLocked(now time.Time) (bool, error) {
	switch b.state {
	case Closed:
		return false, nil
	case Open:
		if now.Before(b.retryAt) {
			return false, b.openError()
		}
		b.enter(HalfOpen, now)
	default: // HalfOpen
		if b.probing && now.Before(b.retryAt) {
			return false, b.openError()
		}
	}
	b.probing = true
	b.retryAt = now.Add(b.policy.MaxBackoff)
	return true, nil
}

// openError returns the error of a request that is not let through.
func (b *Breaker) openError() *OpenError {
	return &OpenError{LastError: b.lastError, RetryAt: b.retryAt}
}

// Success reports that a request got an answer from the cluster after
// latency. It closes the breaker, whatever its state, and resets its
// failure count and backoff: the cluster is answering.
func (b *Breaker) Success(latency time.Duration) {
	b.update(func(now time.Time) {
		b.failures = 0
		b.opens = 0
		b.lastError = ""
		b.latency = max(latency, 0)
		b.probing = false
		b.retryAt = time.Time{}
		b.enter(Closed, now)
	})
}

// Failure reports that a request failed with err. A Closed breaker opens
// after Policy.Failures consecutive failures; a HalfOpen one opens again
// with the next, longer backoff (any failure reported while HalfOpen is taken
// for the probe's: only the probe is let through then). An Open breaker only
// records it: it comes from a request let through before the breaker opened.
func (b *Breaker) Failure(err error) {
	b.update(func(now time.Time) {
		b.lastError = errorText(err)
		if b.failures < math.MaxInt {
			b.failures++
		}
		switch {
		case b.state == Closed && b.failures >= b.policy.Failures,
			b.state == HalfOpen:
			b.open(now)
		}
	})
}

// errorText returns the text of err, or says that there was none.
func errorText(err error) string {
	if err == nil {
		return "failure reported without an error"
	}
	return err.Error()
}

// open opens the breaker for the backoff period of its next opening.
func (b *Breaker) open(now time.Time) {
	if b.opens < math.MaxInt {
		b.opens++
	}
	b.probing = false
	b.retryAt = now.Add(b.policy.Backoff(b.opens, b.draw()))
	b.enter(Open, now)
}

// Abandon reports that a request let through by Allow ended without telling
// anything about the cluster: its caller canceled it, say. probe is what
// Allow returned. An abandoned probe lets the next Allow send another probe
// at once; any other abandoned request changes nothing.
func (b *Breaker) Abandon(probe bool) {
	b.update(func(now time.Time) {
		if probe && b.state == HalfOpen && b.probing {
			b.probing = false
			b.retryAt = now
		}
	})
}

// Snapshot returns a copy of the breaker's state.
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.snapshotLocked()
}

// snapshotLocked is Snapshot with the lock held.
func (b *Breaker) snapshotLocked() Snapshot {
	return Snapshot{
		State:               b.state,
		Since:               b.since,
		LastError:           b.lastError,
		ConsecutiveFailures: b.failures,
		Opens:               b.opens,
		RetryAt:             b.retryAt,
		Latency:             b.latency,
	}
}

// enter moves the breaker to state to at now, unless it is there already.
func (b *Breaker) enter(to State, now time.Time) {
	if b.state != to {
		b.state = to
		b.since = now
	}
}

// update runs f with the lock held and the current time, then, if f changed
// the state, calls the OnChange callback without the lock.
func (b *Breaker) update(f func(now time.Time)) {
	b.mu.Lock()
	from := b.state
	f(b.now())
	to, snap := b.state, b.snapshotLocked()
	b.mu.Unlock()
	if from != to && b.onChange != nil {
		b.onChange(from, to, snap)
	}
}

package breaker_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/medium/picchu/fleet/breaker"
)

// The operations a fuzz input is decoded into, one per byte after the two
// that choose the policy: the byte modulo 5 picks the operation, and the
// rest of it (byte / 5) its argument.
const (
	opAllow = iota
	opSuccess
	opFailure
	opAbandon // argument odd: a probe
	opAdvance // argument: how far, in quarter seconds; 50 means MaxBackoff
	opCount
)

func FuzzBreaker(f *testing.F) {
	f.Add([]byte{2, 3})
	// Open, fail fast, wait, probe, fail the probe, probe again, succeed.
	f.Add([]byte{2, 3, opFailure, opFailure, opFailure, opAllow, opAdvance + 5*4, opAllow, opAllow,
		opFailure, opAdvance + 5*50, opAllow, opSuccess, opAllow})
	// A lost probe, replaced after MaxBackoff, and an abandoned one.
	f.Add([]byte{0, 1, opFailure, opAdvance + 5*50, opAllow, opAdvance + 5*4, opAllow,
		opAdvance + 5*50, opAllow, opAbandon + 5*1, opAllow, opAbandon, opAllow})
	// Many openings in a row, up to the cap.
	f.Add([]byte{1, 7, opFailure, opFailure, opAdvance + 5*50, opAllow, opFailure, opAdvance + 5*50,
		opAllow, opFailure, opAdvance + 5*50, opAllow, opFailure, opAdvance + 5*50, opAllow,
		opFailure, opAdvance + 5*50, opAllow, opFailure, opAdvance + 5*50, opAllow, opSuccess})
	f.Fuzz(func(t *testing.T, input []byte) {
		if len(input) < 2 {
			return
		}
		r := newFuzzRun(t, input[0], input[1], uint64(len(input)))
		for i, op := range input[2:] {
			r.do(i, op)
			r.check(i)
		}
	})
}

// fuzzRun is a breaker driven by a fuzz input, with what the test knows of
// it.
type fuzzRun struct {
	t      *testing.T
	clock  *fakeClock
	policy breaker.Policy
	b      *breaker.Breaker

	state    breaker.State // as told by OnChange
	probing  bool          // a probe was let through and has not reported
	probedAt time.Time
}

// newFuzzRun returns a run whose policy is chosen by two bytes.
func newFuzzRun(t *testing.T, failures, maxShift byte, seed uint64) *fuzzRun {
	r := &fuzzRun{
		t:     t,
		clock: newFakeClock(),
		policy: breaker.Policy{
			Failures:   1 + int(failures%4),
			MinBackoff: time.Second,
			MaxBackoff: time.Second << (maxShift % 8),
		},
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	r.b = breaker.New(r.policy,
		breaker.WithClock(r.clock.Now),
		breaker.WithRand(rng.Float64),
		breaker.WithOnChange(r.onChange))
	return r
}

// onChange checks that each transition leaves the state the previous one
// entered. Calls come in order: the fuzz test uses one goroutine.
func (r *fuzzRun) onChange(from, to breaker.State, s breaker.Snapshot) {
	if from != r.state || from == to || s.State != to {
		r.t.Fatalf("OnChange(%v, %v) with snapshot %v, after entering %v", from, to, s.State, r.state)
	}
	r.state = to
}

// do runs operation op, the i-th.
func (r *fuzzRun) do(i int, op byte) {
	arg := int(op / opCount)
	switch op % opCount {
	case opAllow:
		r.allow(i)
	case opSuccess:
		r.b.Success(time.Duration(arg) * time.Millisecond)
	case opFailure:
		r.b.Failure(errors.New("fuzzed failure"))
	case opAbandon:
		r.b.Abandon(arg%2 == 1)
		if arg%2 == 1 {
			r.probing = false
		}
	case opAdvance:
		if arg == 50 {
			r.clock.Advance(r.policy.MaxBackoff)
		} else {
			r.clock.Advance(time.Duration(arg) * time.Second / 4)
		}
	}
}

// allow calls Allow, the i-th operation, and checks its answer against the
// state before the call.
func (r *fuzzRun) allow(i int) {
	before, now := r.b.Snapshot(), r.clock.Now()
	probe, err := r.b.Allow()
	var open *breaker.OpenError
	switch {
	case err != nil && (probe || !errors.Is(err, breaker.ErrOpen) || !errors.As(err, &open)):
		r.t.Fatalf("op %d: Allow() = %v, %v; a refusal must be an *OpenError", i, probe, err)
	case before.State == breaker.Open && now.Before(before.RetryAt) && err == nil:
		r.t.Fatalf("op %d: Open until %v, but Allow let a request through at %v", i, before.RetryAt, now)
	case before.State == breaker.Closed && (err != nil || probe):
		r.t.Fatalf("op %d: Closed, but Allow() = %v, %v", i, probe, err)
	case before.State != breaker.Closed && err == nil && !probe:
		r.t.Fatalf("op %d: %v, but Allow let a request through that is not a probe", i, before.State)
	case probe && r.probing && now.Before(r.probedAt.Add(r.policy.MaxBackoff)):
		r.t.Fatalf("op %d: a second probe at %v while the one from %v is outstanding", i, now, r.probedAt)
	case probe:
		r.probing, r.probedAt = true, now
	}
}

// check tests the invariants of the breaker's state after the i-th
// operation.
func (r *fuzzRun) check(i int) {
	s := r.b.Snapshot()
	if s.State != r.state {
		r.t.Fatalf("op %d: state %v, but OnChange last entered %v", i, s.State, r.state)
	}
	switch s.State {
	case breaker.Closed:
		if s.ConsecutiveFailures >= r.policy.Failures || s.Opens != 0 || !s.RetryAt.IsZero() {
			r.t.Fatalf("op %d: Closed with %+v", i, s)
		}
	case breaker.Open:
		if d := s.RetryAt.Sub(s.Since); d < r.policy.MinBackoff || d > r.policy.MaxBackoff || s.Opens < 1 {
			r.t.Fatalf("op %d: Open for %v with %d openings; want within [%v, %v]",
				i, d, s.Opens, r.policy.MinBackoff, r.policy.MaxBackoff)
		}
	case breaker.HalfOpen:
		if s.Opens < 1 {
			r.t.Fatalf("op %d: HalfOpen with no openings: %+v", i, s)
		}
	}
	if s.State != breaker.HalfOpen {
		r.probing = false // Success and Failure end a probe by leaving HalfOpen
	}
}

package inprocess

import (
	"fmt"
	"slices"
	"testing"

	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
)

// Runner is the operator of a package's tests: started once for the
// suite, stopped after the tests, and started again by a test that needs
// other options.
type Runner struct {
	env  *harness.Env
	opts operator.Options
	// afterStop runs after each stop of the operator.
	afterStop func(*Operator)
	current   *Operator
}

// RunOption changes how a Runner runs the operator.
type RunOption func(*Runner)

// AfterStop has after run each time the operator has stopped (and
// dropped its clients of env's targets): to drop what else it holds.
func AfterStop(after func(*Operator)) RunOption {
	return func(r *Runner) { r.afterStop = after }
}

// Run starts the operator with opts against the suite's Env, and stops it
// after the tests, before the Env stops.
func Run(s *harness.Suite, opts operator.Options, runOpts ...RunOption) (*Runner, error) {
	r := &Runner{env: s.Env, opts: opts}
	for _, o := range runOpts {
		o(r)
	}
	if err := r.start(); err != nil {
		return nil, fmt.Errorf("starting the operator: %w", err)
	}
	s.OnStop(r.stop)
	return r, nil
}

// Operator is the operator running now.
func (r *Runner) Operator() *Operator { return r.current }

// Restart stops the operator and starts it again, with Run's options
// changed by change (none: the same options).
func (r *Runner) Restart(t testing.TB, change ...func(*operator.Options)) {
	t.Helper()
	if err := r.stop(); err != nil {
		t.Fatalf("stopping the operator: %v", err)
	}
	if err := r.start(change...); err != nil {
		t.Fatalf("starting the operator again: %v", err)
	}
}

func (r *Runner) start(change ...func(*operator.Options)) error {
	opts := r.opts
	opts.Namespaces = slices.Clone(opts.Namespaces)
	for _, c := range change {
		c(&opts)
	}
	op, err := Start(r.env, opts)
	if err != nil {
		return err
	}
	r.current = op
	return nil
}

func (r *Runner) stop() error {
	err := r.current.Stop()
	if r.afterStop != nil {
		r.afterStop(r.current)
	}
	return err
}

package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Suite is what a package's tests share: its Env, and what to stop after
// the tests.
type Suite struct {
	// Ctx is canceled once the tests and every OnStop function have run.
	Ctx context.Context
	// Env is the package's delivery cluster and targets.
	Env   *Env
	stops []func() error
}

// OnStop has stop run after the tests, before the Env stops; stops run in
// the reverse order of their registration. An error fails the run.
func (s *Suite) OnStop(stop func() error) {
	s.stops = append(s.stops, stop)
}

// ServeReplicaSets reports the ReplicaSets of every target available, as a
// ReplicaSet controller would, until the tests end (see
// Server.ServeReplicaSets). A failure is written to stderr.
func (s *Suite) ServeReplicaSets() {
	for _, target := range s.Env.Targets {
		go func() {
			if err := target.ServeReplicaSets(s.Ctx); err != nil {
				fmt.Fprintf(os.Stderr, "%s: serving ReplicaSets: %v\n", target.Name, err)
			}
		}()
	}
}

// KeepEnv is the setup of a package whose tests need the Env alone: it
// keeps the Env in *env.
func KeepEnv(env **Env) func(*Suite) error {
	return func(s *Suite) error {
		*env = s.Env
		return nil
	}
}

// Main runs a package's tests on an Env started with opts, as its TestMain:
//
//	func TestMain(m *testing.M) { harness.Main(m, harness.Options{Targets: 2}, setup) }
//
// It sends the logs of controller-runtime at error level to stderr, starts
// the Env, calls setup (which keeps s.Env, starts what else the tests need
// and registers how to stop it), runs the tests, stops everything and
// exits: with the tests' code, or 1 when something fails to start or stop.
func Main(m *testing.M, opts Options, setup func(s *Suite) error) {
	os.Exit(run(m, opts, setup))
}

func run(m *testing.M, opts Options, setup func(s *Suite) error) (code int) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	ctx, cancel := context.WithCancel(context.Background())
	s := &Suite{Ctx: ctx}
	defer func() {
		var errs []error
		for _, stop := range slices.Backward(s.stops) {
			errs = append(errs, stop())
		}
		cancel()
		if err := s.Env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping clusters: %w", err))
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	var err error
	if s.Env, err = Start(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "starting clusters:", err)
		return 1
	}
	if err := setup(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

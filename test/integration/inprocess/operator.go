// Package inprocess runs the operator in a test process, assembled as main
// assembles it (package operator), against the delivery cluster of a
// harness environment. It can be stopped and started again, as an operator
// restart.
package inprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
)

// Operator is a running manager with Picchu's controllers.
type Operator struct {
	// Registry holds the operator's clients of the target clusters.
	Registry *access.Registry
	// Client is the manager's client of the delivery cluster: it reads
	// from the operator's own cache.
	Client client.Client
	env    *harness.Env
	cancel context.CancelFunc
	done   chan error
}

// Start starts the operator against env's delivery cluster, with Secrets
// and ConfigMaps read from env's namespace only, and those opts.Namespaces
// add (as main with --namespaces). Unless opts say otherwise, target
// clusters are checked every 10 s, with a 2 s deadline.
func Start(env *harness.Env, opts operator.Options) (*Operator, error) {
	opts.Namespaces = append([]string{env.Namespace}, slices.DeleteFunc(slices.Clone(opts.Namespaces),
		func(ns string) bool { return ns == env.Namespace })...)
	if opts.ClusterHealthPeriod == 0 {
		opts.ClusterHealthPeriod = 10 * time.Second
	}
	if opts.ClusterHealthTimeout == 0 {
		opts.ClusterHealthTimeout = 2 * time.Second
	}
	mgr, err := ctrl.NewManager(env.Delivery.Config, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   operator.DeliveryCache(opts.Namespaces),
		// A restarted operator registers its controllers again in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	registry, err := operator.Setup(mgr, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Operator{Registry: registry, Client: mgr.GetClient(), env: env, cancel: cancel, done: make(chan error, 1)}
	go func() { o.done <- mgr.Start(ctx) }()
	return o, nil
}

// Stop stops the operator, waits until it has, and drops its clients of the
// target clusters.
func (o *Operator) Stop() error {
	o.cancel()
	err := <-o.done
	for _, target := range o.env.Targets {
		o.Registry.Remove(types.NamespacedName{Namespace: o.env.Namespace, Name: target.Name})
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// Something did not stop within the manager's grace period: say
		// what, with every goroutine's stack.
		path := filepath.Join(os.TempDir(), fmt.Sprintf("picchu-stop-%d.txt", time.Now().UnixNano()))
		if f, ferr := os.Create(path); ferr == nil {
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
			err = fmt.Errorf("%w (every goroutine's stack: %s)", err, path)
		}
	}
	return err
}

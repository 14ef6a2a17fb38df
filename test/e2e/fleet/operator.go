package fleet

import (
	"context"
	"net"
	"strconv"

	"github.com/medium/picchu/test/kit"
)

// OperatorBinary builds the operator (the repository's main package) into
// bin/picchu and returns its path.
func OperatorBinary(ctx context.Context) (string, error) {
	return build(ctx, ".", "picchu")
}

// OperatorArgs are the flags the fleet runs the operator with, before any
// extra ones: the delivery cluster's kubeconfig, the fleet's namespace, no webhooks (the fleet has
// no cert-manager; the CRD schemas still validate), loopback ports, and the
// fleet's Prometheus, asked again every second.
func (f *Fleet) OperatorArgs() []string {
	return f.operatorArgs(f.state.OperatorPort, f.state.ProbePort)
}

func (f *Fleet) operatorArgs(metricsPort, probePort int) []string {
	return []string{
		"--kubeconfig=" + f.Delivery.Kubeconfig,
		"--namespaces=" + f.Namespace,
		"--enable-webhooks=false",
		"--metrics-addr=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probePort),
		"--prometheus-query-address=" + f.PrometheusURL,
		"--prometheus-query-ttl=1s",
	}
}

// OperatorMetricsURL is the operator's /metrics endpoint.
func (f *Fleet) OperatorMetricsURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(f.state.OperatorPort)) + "/metrics"
}

// OperatorLog is the operator's log file.
func (f *Fleet) OperatorLog() string { return daemon{f.Dir, operatorDaemon}.LogFile() }

// StartOperator stops the operator if it runs, starts binary with
// OperatorArgs and extra flags, and waits until it is ready. It keeps
// running after this process ends, until StopOperator or Down.
func (f *Fleet) StartOperator(ctx context.Context, binary string, extra ...string) error {
	return f.StartOperatorWithEnv(ctx, binary, nil, extra...)
}

// StartOperatorWithEnv is StartOperator with env ("NAME=value") added to
// the operator's environment.
func (f *Fleet) StartOperatorWithEnv(ctx context.Context, binary string, env []string, extra ...string) error {
	d := daemon{f.Dir, operatorDaemon}
	if err := d.stop(); err != nil {
		return err
	}
	f.logf("starting the operator (log %s)", d.LogFile())
	if err := d.start(append(append([]string{binary}, f.OperatorArgs()...), extra...), env...); err != nil {
		return err
	}
	return f.waitHTTP(ctx, d, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(f.state.ProbePort))+"/readyz")
}

// StopOperator stops the operator (SIGTERM, then SIGKILL).
func (f *Fleet) StopOperator() error { return daemon{f.Dir, operatorDaemon}.stop() }

// KillOperator kills the operator at once, as a crash or an evicted pod would.
func (f *Fleet) KillOperator() error {
	d := daemon{f.Dir, operatorDaemon}
	if pid, ok := d.running(); ok {
		if err := killPid(pid); err != nil {
			return err
		}
	}
	return d.stop()
}

// OperatorPID is the running operator's process ID.
func (f *Fleet) OperatorPID() (int, bool) { return daemon{f.Dir, operatorDaemon}.running() }

// Replica is one more operator process, started beside or instead of the
// fleet's operator (replicas of a sharded operator), with ports of its own.
type Replica struct {
	f *Fleet
	d daemon
}

// StartReplica starts binary as the operator replica name, with the
// fleet's operator flags (on free ports) and extra ones, and waits until it
// is ready. Down stops it with the fleet.
func (f *Fleet) StartReplica(ctx context.Context, name, binary string, extra ...string) (*Replica, error) {
	ports := make([]int, 2)
	for i := range ports {
		p, err := kit.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	r := &Replica{f: f, d: daemon{f.Dir, operatorDaemon + "-" + name}}
	if err := r.d.stop(); err != nil {
		return nil, err
	}
	f.logf("starting operator replica %s (log %s)", name, r.d.LogFile())
	if err := r.d.start(append(append([]string{binary}, f.operatorArgs(ports[0], ports[1])...), extra...)); err != nil {
		return nil, err
	}
	return r, f.waitHTTP(ctx, r.d, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))+"/readyz")
}

// Log is the replica's log file.
func (r *Replica) Log() string { return r.d.LogFile() }

// Stop stops the replica (SIGTERM, then SIGKILL) and returns once it is gone.
func (r *Replica) Stop() error { return r.d.stop() }

// Kill kills the replica at once, as a crash or a lost node would.
func (r *Replica) Kill() error {
	if pid, ok := r.d.running(); ok {
		if err := killPid(pid); err != nil {
			return err
		}
	}
	return r.d.stop()
}

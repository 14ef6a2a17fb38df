package fleet

import (
	"context"
	"net"
	"strconv"
)

// OperatorBinary builds the operator (the repository's main package) into
// bin/picchu and returns its path.
func OperatorBinary(ctx context.Context) (string, error) {
	return build(ctx, ".", "picchu")
}

// OperatorArgs are the flags the fleet runs the operator with, before any
// extra ones: the delivery cluster's kubeconfig, no webhooks (the fleet has
// no cert-manager; the CRD schemas still validate), loopback ports, and the
// fleet's Prometheus, asked again every second.
func (f *Fleet) OperatorArgs() []string {
	return []string{
		"--kubeconfig=" + f.Delivery.Kubeconfig,
		"--enable-webhooks=false",
		"--metrics-addr=127.0.0.1:" + strconv.Itoa(f.state.OperatorPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(f.state.ProbePort),
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
	d := daemon{f.Dir, operatorDaemon}
	if err := d.stop(); err != nil {
		return err
	}
	f.logf("starting the operator (log %s)", d.LogFile())
	if err := d.start(append(append([]string{binary}, f.OperatorArgs()...), extra...)); err != nil {
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

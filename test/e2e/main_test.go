// Package e2e runs Picchu end to end on a local fleet of its own (package
// test/e2e/fleet, in a temporary directory): kwok clusters delivery, east and
// west with the real kube-controller-manager, kube-scheduler and fake
// nodes, a real Prometheus, the mesh, and the operator built from this
// repository and run as its own process, as `make demo` runs it.
//
// Run it alone with `make test-e2e`; `make test` runs it too.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/kit"
)

// lab is the fleet every test of the package shares.
var lab *fleet.Fleet

// operatorBinary is the operator, built once.
var operatorBinary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "picchu-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// go test's -timeout and Ctrl-C end this process without the deferred
	// Down below: the guard takes the fleet down then, keeping its logs.
	disarm := fleet.Guard(testTimeout(), os.Stderr, func(ctx context.Context) error {
		keepFleetLogs(dir)
		return fleet.Down(ctx, dir)
	})
	defer func() {
		disarm()
		if err := fleet.Down(ctx, dir); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: taking the fleet down:", err)
			code = 1
		}
		// fleet-down's promise: no process and no file left behind.
		if pids, err := fleet.Processes(dir); err != nil || len(pids) > 0 {
			fmt.Fprintf(os.Stderr, "e2e: processes left after Down: %v %v\n", pids, err)
			code = 1
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			fmt.Fprintf(os.Stderr, "e2e: %s left after Down (%v)\n", dir, err)
			code = 1
		}
	}()
	start := time.Now()
	if lab, err = fleet.Up(ctx, fleet.Options{Dir: dir, Log: os.Stderr}); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the fleet:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: fleet up in %s\n", time.Since(start).Round(100*time.Millisecond))
	if operatorBinary, err = fleet.OperatorBinary(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := lab.StartOperator(ctx, operatorBinary); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	code = m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: the operator's log: %s (removed with the fleet)\n%s\n", lab.OperatorLog(), kit.LogTail(lab.OperatorLog(), 60))
		keepFleetLogs(dir)
	}
	return code
}

// keepFleetLogs keeps the logs of the fleet in dir (the operator's, the
// clusters' components') in dir-logs, for whoever looks into a failure:
// the fleet's directory goes with it.
func keepFleetLogs(dir string) {
	kept := dir + "-logs"
	if err := keepLogs(dir, kept); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: keeping the fleet's logs:", err)
		return
	}
	fmt.Fprintf(os.Stderr, "e2e: the fleet's logs are kept in %s\n", kept)
}

// testTimeout is go test's -timeout for this binary (0: none).
func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	d, _ := f.Value.(flag.Getter).Get().(time.Duration)
	return d
}

// quietNeighbour runs the test beside the other quiet neighbours, once
// every other test has ended (t.Parallel): a quiet neighbour releases its
// own app in a fleet of its own or in production, and takes no cluster, no
// fleet's Clusters and no operator away from the others. The tests that do
// (a cluster stopped or hung, the operator restarted, a cluster filled)
// run one after the other, before them. Most of a test's time is release
// steps, not CPU (on 2 cores the CPU is 60 % idle with one test running), so
// the quiet ones together take about as long as the longest of them. The
// Makefile runs E2E_PARALLEL at a time (go test's -parallel).
func quietNeighbour(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// promQuery runs an instant query on the fleet's Prometheus and returns
// the number of series in its answer.
func promQuery(ctx context.Context, query string) (int, error) {
	c, err := promapi.NewClient(promapi.Config{Address: lab.PrometheusURL})
	if err != nil {
		return 0, fmt.Errorf("querying %q: %w", query, err)
	}
	value, _, err := promv1.NewAPI(c).Query(ctx, query, time.Now())
	if err != nil {
		return 0, fmt.Errorf("querying %q: %w", query, err)
	}
	vector, ok := value.(model.Vector)
	if !ok {
		return 0, fmt.Errorf("querying %q: got a %s, want a vector", query, value.Type())
	}
	return len(vector), nil
}

// keepLogs copies every *.log file under dir to the same path under kept.
func keepLogs(dir, kept string) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".log" {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(kept, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(kept, rel), data, 0o644)
	})
}

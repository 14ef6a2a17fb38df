// Command bench-fleet measures Picchu on a local kwok fleet with many apps,
// through its public interface only: a first build of every app released,
// then a second build of every app released at once, then a quiet spell.
// It prints the figures of issue 17's table (docs/benchmarks.md):
//
//	make bench-fleet APPS=100 CLUSTERS=3
//
// CLUSTERS counts every cluster of the fleet, the delivery cluster among
// them: CLUSTERS=3 is delivery, target-1 and target-2. The fleet has no
// Prometheus and no mesh, whose reads would load the API servers measured;
// the builds have no canary and no SLO, and ramp 25 → 50 → 100 % with 2 s
// steps (4 s of delays). The operator serves its admission webhooks to the
// delivery cluster, as in production. Its requests are its client-go
// counters (rest_client_requests_total, by cluster host); its reconciles,
// controller-runtime's; its memory, the kernel's resident set.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/kit"
)

// controllerManagerArgs let every cluster's ReplicaSet controller keep up
// with a thousand apps, as large clusters are run: at its defaults (20
// requests/s, 5 ReplicaSets at once) creating the pods of a thousand
// builds takes minutes whatever the operator does.
var controllerManagerArgs = []string{"kube-api-qps=200", "kube-api-burst=400", "concurrent-replicaset-syncs=20"}

// apiServerArgs give every cluster room for a Service per app: the default
// range (10.0.0.0/24) holds 254.
var apiServerArgs = []string{"service-cluster-ip-range=10.0.0.0/16"}

// podsPerBuild is how many pods (of 250m CPU) every build of every app
// runs per cluster, with either tool: the floor's ReplicaSets, Argo
// Rollouts' Rollouts and Picchu's Revisions alike.
const podsPerBuild = 2

// nodesFor is the number of fake nodes each cluster needs for apps: both
// builds of an app run at once during the second phase, each with
// podsPerBuild pods. A node takes 110 pods and 32 CPUs; 100 pods a node
// leave some room, and one node more.
func nodesFor(apps int) int {
	return max(fleet.NodeCount, (2*podsPerBuild*apps+99)/100+1)
}

func main() {
	kit.RunCommand("bench-fleet", run)
}

// config is what the command line sets.
type config struct {
	apps, clusters int
	dir            string
	keep           bool
	quiet, settle  time.Duration
	timeout        time.Duration
	operatorArgs   string
	operatorEnv    string
	profileDir     string
	profileSeconds int
	// peer runs Argo Rollouts on the same apps first, and compares.
	peer bool
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench-fleet", flag.ContinueOnError)
	fs.IntVar(&c.apps, "apps", 100, "apps released")
	fs.IntVar(&c.clusters, "clusters", 3, "clusters of the fleet, the delivery cluster among them (at least 2)")
	fs.StringVar(&c.dir, "dir", filepath.Join(kit.RepoRoot(), ".fleet-bench"), "the fleet's directory")
	fs.BoolVar(&c.keep, "keep", false, "leave the fleet running at the end (take it down with: go run ./hack/fleet --dir DIR down)")
	fs.DurationVar(&c.quiet, "quiet", time.Minute, "how long the quiet spell is measured")
	fs.DurationVar(&c.settle, "settle", 15*time.Second, "how long after every app is Ready a release's writes are still counted, and the quiet spell starts (the last events and Revision mirrors are written meanwhile)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "how long each phase may take")
	fs.StringVar(&c.operatorEnv, "operator-env", "", "environment variables for the operator alone, space-separated (say \"GOGC=50\")")
	fs.StringVar(&c.operatorArgs, "operator-args", "", "more flags for the operator, space-separated (say \"--kube-api-qps=200 --kube-api-burst=400\")")
	fs.StringVar(&c.profileDir, "profile", "", "directory to write the operator's CPU, block and mutex profiles of each phase to (its first -profile-seconds); none when empty")
	fs.IntVar(&c.profileSeconds, "profile-seconds", 30, "how long each phase's profiles last from its start")
	fs.BoolVar(&c.peer, "peer", false, "first release the same apps with Argo Rollouts "+peerVersion+" on a fleet of its own (one cluster), then with Picchu, and print both and the ratios")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.apps < 1 || c.clusters < 2 || c.quiet <= 0 || c.timeout <= 0 || c.settle < 0 || c.profileSeconds < 1 {
		return c, errors.New("-apps must be at least 1, -clusters at least 2, -quiet, -timeout and -profile-seconds positive, -settle not negative")
	}
	return c, nil
}

func run(ctx context.Context, args []string) (err error) {
	c, err := parse(args)
	if err != nil {
		return err
	}
	var peer *peerResult
	if c.peer {
		r, err := runPeer(ctx, c)
		if err != nil {
			return fmt.Errorf("the peer, Argo Rollouts %s: %w", peerVersion, err)
		}
		peer = &r
	}
	var targets []string
	for i := 1; i < c.clusters; i++ {
		targets = append(targets, fmt.Sprintf("target-%d", i))
	}
	logf("starting a fleet of %d clusters (delivery, %v) in %s", c.clusters, targets, c.dir)
	f, err := fleet.Up(ctx, fleet.Options{Dir: c.dir, Targets: targets, ClustersOnly: true, Log: os.Stderr,
		ControllerManagerArgs: controllerManagerArgs, APIServerArgs: apiServerArgs, Nodes: nodesFor(c.apps)})
	if err != nil {
		return err
	}
	if !c.keep {
		defer func() {
			if downErr := fleet.Down(context.WithoutCancel(ctx), c.dir); downErr != nil {
				err = errors.Join(err, downErr)
			}
		}()
	}
	binary, err := fleet.OperatorBinary(ctx)
	if err != nil {
		return err
	}
	hooks, hookArgs, err := prepareWebhooks()
	if err != nil {
		return err
	}
	defer hooks.cleanup()
	// No Prometheus runs: the builds have no SLO, and nothing is queried.
	operatorArgs := append(append([]string{"--prometheus-enabled=false"}, hookArgs...), strings.Fields(c.operatorArgs)...)
	var prof *profiler
	if c.profileDir != "" {
		port, err := kit.FreePort()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
			return err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		operatorArgs = append(operatorArgs, "--pprof-bind-address="+addr)
		prof = &profiler{url: "http://" + addr + "/debug/pprof/", dir: c.profileDir, seconds: c.profileSeconds}
	}
	if err := f.StartOperatorWithEnv(ctx, binary, strings.Fields(c.operatorEnv), operatorArgs...); err != nil {
		return err
	}
	if err := hooks.install(f); err != nil {
		return err
	}
	// The benchmark watches the ReleaseManagers rather than list a
	// thousand of them every second, which would load the API server it
	// measures.
	watched, stop, err := watch(ctx, f.Delivery, f.Namespace, &picchuv1alpha1.ReleaseManager{}, "release managers")
	if err != nil {
		return err
	}
	defer stop()
	b := &bench{config: c, fleet: f, rms: watched, profiler: prof}
	res, err := b.run(ctx)
	if err != nil {
		return fmt.Errorf("%w (the operator's log: %s)", err, f.OperatorLog())
	}
	fmt.Print(res.table())
	if peer != nil {
		fmt.Print(compare(*peer, res))
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench-fleet: "+format+"\n", args...)
}

// watch returns a cache of the objects of obj's kind in namespace of
// cluster c, kept by a watch until stop is called.
func watch(ctx context.Context, c *fleet.Cluster, namespace string, obj client.Object, what string) (client.Reader, func(), error) {
	ctx, stop := context.WithCancel(ctx)
	fail := func(err error) (client.Reader, func(), error) {
		stop()
		return nil, nil, fmt.Errorf("watching %s: %w", what, err)
	}
	rc, err := cache.New(c.Config, cache.Options{Scheme: c.Client.Scheme(), DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		return fail(err)
	}
	if _, err := rc.GetInformer(ctx, obj); err != nil {
		return fail(err)
	}
	go func() {
		if err := rc.Start(ctx); err != nil {
			logf("watching %s: %v", what, err)
		}
	}()
	if !rc.WaitForCacheSync(ctx) {
		return fail(errors.New("the cache did not sync"))
	}
	return rc, stop, nil
}

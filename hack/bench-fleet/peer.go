package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/kit"
)

// The peer is Argo Rollouts, the single-cluster tool users compare Picchu
// with, releasing the same apps on the same kind of cluster: a Rollout per
// app with two pods, an Istio VirtualService whose weights it moves between
// a stable and a canary Service, and the same ramp (25 → 50 → 100 % with
// 2 s pauses). Its first build goes to 100 % at once (Argo skips the steps
// of a Rollout's first build), as Picchu's first build serves everything
// as soon as it is deployed.
const (
	peerName      = "argo-rollouts"
	peerVersion   = "v1.10.0"
	peerNamespace = "bench"
)

var (
	rolloutGVK        = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}
	virtualServiceGVK = schema.GroupVersionKind{Group: "networking.istio.io", Version: "v1beta1", Kind: "VirtualService"}
)

// peerPhase is one release of every app by the peer.
type peerPhase struct {
	// promoted is when every Rollout had the build stable (at 100 %); took
	// when every one was also Healthy (its pods available, its old pods
	// gone after Argo's scale-down delay).
	promoted, took time.Duration
	// writes are every client's writes to the peer's cluster, from its
	// API server's counters (the benchmark's own applies among them, as
	// the Revisions' are on Picchu's delivery cluster).
	writes float64
	// idle is the share of the machine's CPU time left idle meanwhile.
	idle float64
}

// peerResult is what the peer measured.
type peerResult struct {
	// floor is the cluster alone running two pods of every app
	// (measureFloor), before the peer starts.
	floor         time.Duration
	first, second peerPhase
	rss           resident // the controller's resident memory after both phases
}

// installPeer builds Argo Rollouts (once) and returns its directory: the
// controller's binary and its CRDs.
func installPeer(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(kit.RepoRoot(), "hack", "install-argo-rollouts.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("installing Argo Rollouts %s: %w", peerVersion, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// runPeer starts a fleet like Picchu's (its first target is the peer's
// cluster), runs Argo Rollouts on it, releases a first then a second build
// of every app, and takes the fleet down.
func runPeer(ctx context.Context, c config) (res peerResult, err error) {
	dir, err := installPeer(ctx)
	if err != nil {
		return res, err
	}
	fleetDir := c.dir + "-" + peerName
	logf("peer: starting a cluster for %s %s in %s", peerName, peerVersion, fleetDir)
	f, err := fleet.Up(ctx, fleet.Options{Dir: fleetDir, Targets: []string{"target-1"}, ClustersOnly: true, Log: os.Stderr,
		ControllerManagerArgs: controllerManagerArgs, APIServerArgs: apiServerArgs, Nodes: nodesFor(c.apps)})
	if err != nil {
		return res, err
	}
	defer func() {
		if downErr := fleet.Down(context.WithoutCancel(ctx), fleetDir); downErr != nil {
			err = errors.Join(err, downErr)
		}
	}()
	cluster := f.Targets[0]
	if _, err := envtest.InstallCRDs(cluster.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(dir, "crds")}, ErrorIfPathMissing: true, MaxTime: time.Minute,
	}); err != nil {
		return res, fmt.Errorf("installing Argo Rollouts' CRDs: %w", err)
	}
	if res.floor, err = measureFloor(ctx, c, cluster); err != nil {
		return res, fmt.Errorf("measuring the cluster alone: %w", err)
	}
	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = kit.FreePort(); err != nil {
			return res, err
		}
	}
	proc, err := f.StartProcess(peerName, filepath.Join(dir, "rollouts-controller"),
		"--kubeconfig="+cluster.Kubeconfig, "--leader-elect=false", "--loglevel=warn",
		"--metricsPort="+strconv.Itoa(ports[0]), "--healthzPort="+strconv.Itoa(ports[1]))
	if err != nil {
		return res, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(rolloutGVK)
	rollouts, stop, err := watch(ctx, cluster, peerNamespace, u, "rollouts")
	if err != nil {
		return res, err
	}
	defer stop()
	p := &peer{config: c, cluster: cluster, rollouts: rollouts}
	if err := cluster.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: peerNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		return res, err
	}
	if res.first, err = p.release(ctx, "v1"); err != nil {
		return res, fmt.Errorf("%w (Argo Rollouts' log: %s)", err, proc.Log())
	}
	if res.second, err = p.release(ctx, "v2"); err != nil {
		return res, fmt.Errorf("%w (Argo Rollouts' log: %s)", err, proc.Log())
	}
	pid, ok := proc.PID()
	if !ok {
		return res, fmt.Errorf("Argo Rollouts is not running (its log: %s)", proc.Log())
	}
	res.rss, err = rss(pid)
	return res, err
}

// peer releases the apps through Argo Rollouts.
type peer struct {
	config
	cluster  *fleet.Cluster
	rollouts client.Reader
}

// release applies build tag of every app (its Services and VirtualService
// too, for the first), 16 at a time, as the Picchu benchmark does, and
// waits until every Rollout is Healthy with tag stable.
func (p *peer) release(ctx context.Context, tag string) (peerPhase, error) {
	var ph peerPhase
	before, err := scrapeAPIServer(ctx, p.cluster.Config)
	if err != nil {
		return ph, err
	}
	machineBefore, err := readMachineCPU()
	if err != nil {
		return ph, err
	}
	start := time.Now()
	if err := applyApps(p.apps, func(app string) error { return p.apply(ctx, app, tag) }); err != nil {
		return ph, fmt.Errorf("applying %s: %w", tag, err)
	}
	logf("peer: %s of %d apps applied in %s; waiting until every Rollout is Healthy with it", tag, p.apps, time.Since(start).Round(time.Millisecond))
	if err := kit.Poll(ctx, watchPoll, p.timeout, tag+" healthy in every Rollout", func(ctx context.Context) error {
		promoted, n, err := p.healthy(ctx, tag)
		if err == nil && promoted == p.apps && ph.promoted == 0 {
			ph.promoted = time.Since(start)
		}
		if err == nil && n < p.apps {
			err = fmt.Errorf("%d of %d Rollouts are Healthy with %s", n, p.apps, tag)
		}
		return err
	}); err != nil {
		return ph, err
	}
	ph.took = time.Since(start)
	machineAfter, err := readMachineCPU()
	if err != nil {
		return ph, err
	}
	ph.idle = machineBefore.idleShare(machineAfter)
	after, err := scrapeAPIServer(ctx, p.cluster.Config)
	if err != nil {
		return ph, err
	}
	byResource, beforeBy := after.writesByResource(), before.writesByResource()
	for k, n := range byResource {
		ph.writes += n - beforeBy[k]
	}
	logf("peer: %s at 100 %% in every app in %s, Healthy in %s; writes to its cluster by every client: %s", tag,
		ph.promoted.Round(time.Millisecond), ph.took.Round(time.Millisecond), topWrites(byResource, beforeBy))
	return ph, nil
}

// apply applies app's Rollout at build tag and, the first time, its
// Services and VirtualService.
func (p *peer) apply(ctx context.Context, app, tag string) error {
	objs := []*unstructured.Unstructured{rollout(app, tag)}
	if tag == "v1" {
		objs = append([]*unstructured.Unstructured{service(app + "-stable"), service(app + "-canary"), virtualService(app)}, objs...)
	}
	for _, o := range objs {
		o.SetNamespace(peerNamespace)
		if err := p.cluster.Client.Patch(ctx, o, client.Apply, client.FieldOwner("bench"), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// healthy counts the Rollouts that have tag as their stable build
// (promoted), and of those the Healthy ones.
func (p *peer) healthy(ctx context.Context, tag string) (promoted, healthy int, err error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(rolloutGVK.GroupVersion().WithKind("RolloutList"))
	if err := p.rollouts.List(ctx, list, client.InNamespace(peerNamespace)); err != nil {
		return 0, 0, err
	}
	for _, r := range list.Items {
		if rolloutPromotedTo(r.Object, tag) {
			promoted++
			if phase, _, _ := unstructured.NestedString(r.Object, "status", "phase"); phase == "Healthy" {
				healthy++
			}
		}
	}
	return promoted, healthy, nil
}

// rolloutPromotedTo says Argo Rollouts has released tag to all of the
// Rollout r's traffic: it saw its spec (observedGeneration), its pod
// template is tag, and that template's ReplicaSet is the stable one.
func rolloutPromotedTo(r map[string]any, tag string) bool {
	generation, _, _ := unstructured.NestedInt64(r, "metadata", "generation")
	observed, _, _ := unstructured.NestedString(r, "status", "observedGeneration")
	stable, _, _ := unstructured.NestedString(r, "status", "stableRS")
	current, _, _ := unstructured.NestedString(r, "status", "currentPodHash")
	labels, _, _ := unstructured.NestedStringMap(r, "spec", "template", "metadata", "labels")
	return observed == strconv.FormatInt(generation, 10) && stable != "" && stable == current && labels["version"] == tag
}

// rollout is app's Rollout at build tag: podsPerBuild pods like Picchu's
// builds in the benchmark, and the same ramp through the VirtualService.
func rollout(app, tag string) *unstructured.Unstructured {
	labels := map[string]any{"app": app, "version": tag}
	return object(rolloutGVK, app, map[string]any{
		"replicas":             int64(podsPerBuild),
		"revisionHistoryLimit": int64(2),
		"selector":             map[string]any{"matchLabels": map[string]any{"app": app}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "app", "image": "registry.example/" + app + ":" + tag,
				"ports":     []any{map[string]any{"name": "http", "containerPort": int64(8080)}},
				"resources": map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "256Mi"}},
			}}},
		},
		"strategy": map[string]any{"canary": map[string]any{
			"stableService": app + "-stable",
			"canaryService": app + "-canary",
			"trafficRouting": map[string]any{"istio": map[string]any{
				"virtualService": map[string]any{"name": app, "routes": []any{"primary"}},
			}},
			"steps": []any{
				map[string]any{"setWeight": int64(25)},
				map[string]any{"pause": map[string]any{"duration": stepDelay.String()}},
				map[string]any{"setWeight": int64(50)},
				map[string]any{"pause": map[string]any{"duration": stepDelay.String()}},
			},
		}},
	})
}

func service(name string) *unstructured.Unstructured {
	app := strings.TrimSuffix(strings.TrimSuffix(name, "-stable"), "-canary")
	return object(corev1.SchemeGroupVersion.WithKind("Service"), name, map[string]any{
		"selector": map[string]any{"app": app},
		"ports":    []any{map[string]any{"name": "http", "port": int64(80), "targetPort": "http"}},
	})
}

func virtualService(app string) *unstructured.Unstructured {
	dest := func(host string, weight int64) map[string]any {
		return map[string]any{"destination": map[string]any{"host": host}, "weight": weight}
	}
	return object(virtualServiceGVK, app, map[string]any{
		"hosts": []any{app},
		"http":  []any{map[string]any{"name": "primary", "route": []any{dest(app+"-stable", 100), dest(app+"-canary", 0)}}},
	})
}

func object(gvk schema.GroupVersionKind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	return u
}

// compare prints the peer's figures beside Picchu's, and their ratios.
func compare(peer peerResult, r *result) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nbench-fleet: %d apps, Argo Rollouts %s on one cluster beside Picchu with %d target(s)\n", r.apps, peerVersion, r.clusters-1)
	fmt.Fprintf(&sb, "| figure | Argo Rollouts %s | Picchu | Picchu ÷ Argo |\n|---|---|---|---|\n", peerVersion)
	ratio := func(a, b float64) string { return fmt.Sprintf("%.2f", a/max(b, 1e-9)) }
	row := func(name string, argo, picchu time.Duration) {
		fmt.Fprintf(&sb, "| %s | %s | %s | %s |\n", name, argo.Round(100*time.Millisecond), picchu.Round(100*time.Millisecond), ratio(picchu.Seconds(), argo.Seconds()))
	}
	// A Rollout's first ReplicaSet is stable from the start, before any
	// of its pods runs: its first build counts once it is Healthy, as
	// Picchu's counts once its pods run and it takes the traffic.
	row("first build of every app at 100 % (Argo: Healthy)", peer.first.took, r.first.routed)
	row("second build of every app released (Argo: promoted, at 100 %)", peer.second.promoted, r.second.took)
	row("second build of every app released (Argo: Healthy, its old pods gone)", peer.second.took, r.second.took)
	for _, p := range []struct {
		name   string
		argo   peerPhase
		picchu phase
	}{{"first", peer.first, r.first}, {"second", peer.second, r.second}} {
		target := 0.0
		for name, n := range p.picchu.clusterWrites {
			if name != fleet.Delivery {
				target = max(target, n)
			}
		}
		fmt.Fprintf(&sb, "| writes to a target cluster by every client, %s build | %.0f | %.0f | %s |\n", p.name, p.argo.writes, target, ratio(target, p.argo.writes))
		fmt.Fprintf(&sb, "| writes per app to the delivery cluster by every client, %s build | (none) | %.1f | |\n", p.name, p.picchu.clusterWrites[fleet.Delivery]/float64(r.apps))
		fmt.Fprintf(&sb, "| machine CPU idle, %s build | %.0f %% | %.0f %% | |\n", p.name, 100*p.argo.idle, 100*p.picchu.idle)
	}
	fmt.Fprintf(&sb, "| controller memory (resident) after both builds | %.0f MiB | %.0f MiB | %s |\n",
		mib(peer.rss.total), mib(r.rssBefore.total), ratio(float64(r.rssBefore.total), float64(peer.rss.total)))
	fmt.Fprintf(&sb, "| of which anonymous (heap, stacks, runtime) | %.0f MiB | %.0f MiB | %s |\n",
		mib(peer.rss.anon), mib(r.rssBefore.anon), ratio(float64(r.rssBefore.anon), float64(peer.rss.anon)))
	fmt.Fprintf(&sb, "| of which file-backed (the binary's pages) | %.0f MiB | %.0f MiB | %s |\n",
		mib(peer.rss.file), mib(r.rssBefore.file), ratio(float64(r.rssBefore.file), float64(peer.rss.file)))
	fmt.Fprintf(&sb, "\nThe cluster alone ran 2 pods of every app in %s (their ReplicaSets applied by the benchmark, no tool): "+
		"Argo's first build took %s × that, Picchu's %s ×.\n", peer.floor.Round(100*time.Millisecond),
		ratio(peer.first.took.Seconds(), peer.floor.Seconds()), ratio(r.first.routed.Seconds(), peer.floor.Seconds()))
	return sb.String()
}

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/shard"
	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

// shardApps returns perShard app names in each of n shards.
func shardApps(n, perShard int) map[int][]string {
	out := map[int][]string{}
	for i, picked := 0, 0; picked < n*perShard; i++ {
		app := fmt.Sprintf("shard%d", i)
		if s := shard.Of(shard.AppKey(lab.Namespace, app), n); len(out[s]) < perShard {
			out[s] = append(out[s], app)
			picked++
		}
	}
	return out
}

// shardHolders reads which replica each shard's Lease names.
func shardHolders(ctx context.Context, n int) (map[int]string, error) {
	out := map[int]string{}
	for i := range n {
		l := &coordinationv1.Lease{}
		if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: fmt.Sprintf("picchu-shard-%d", i)}, l); err != nil {
			return nil, err
		}
		out[i] = ptr.Deref(l.Spec.HolderIdentity, "")
	}
	return out, nil
}

// writers lists the replicas (by their client's name, "picchu-<identity>")
// that wrote app's ReleaseManager, from its managed fields.
func writers(ctx context.Context, app string) ([]string, error) {
	rm := &picchuv1alpha1.ReleaseManager{}
	if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range rm.ManagedFields {
		if id, ok := strings.CutPrefix(f.Manager, "picchu-"); ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestShardFailover runs the operator as two replicas splitting the apps
// into two shards, each held through its own Lease: every app's
// ReleaseManager is written by exactly one replica. One replica is killed
// (SIGKILL) while every app ramps a new build; the other takes its shard
// once the lease runs out and completes its apps' releases, with no step
// held shorter than its delay. Stopped gracefully, the survivor releases
// its leases at once.
func TestShardFailover(t *testing.T) {
	ctx := context.Background()
	const shards = 2
	apps := shardApps(shards, 2)
	var all []string
	for _, a := range apps {
		all = append(all, a...)
	}
	slices.Sort(all)
	for _, app := range all {
		if err := story.Reset(ctx, lab, app); err != nil {
			t.Fatal(err)
		}
	}
	replicas := startReplicas(t, shards, "a", "b")
	holders := splitShards(t, shards)
	t.Logf("shard holders: %v; apps: %v", holders, apps)
	for _, app := range all {
		apply(t, app, "v1", nil)
	}
	for _, app := range all {
		until(t, 2*time.Minute, app, "v1 released", releasedEverywhere("v1"))
	}

	watchers := map[string]*watcher{}
	var delay time.Duration
	for _, app := range all {
		watchers[app] = watch(app)
		delay = release.StepDelay(apply(t, app, "v2", nil).Spec.Targets[0].Release)
	}
	for _, app := range all {
		until(t, 2*time.Minute, app, "v2 releasing at 20 %", rampingAt("v2", 20))
	}
	for s, list := range apps {
		for _, app := range list {
			if w, err := writers(ctx, app); err != nil || !slices.Equal(w, []string{holders[s]}) {
				t.Errorf("%s (shard %d, held by %s) was written by %v (%v), want by its shard's holder alone", app, s, holders[s], w, err)
			}
		}
	}

	victim, survivor := holders[0], holders[1]
	if err := replicas[victim].Kill(); err != nil {
		t.Fatal(err)
	}
	delete(replicas, victim)
	t.Logf("killed replica %s mid-release", victim)
	for _, app := range all {
		until(t, 3*time.Minute, app, "v2 released", releasedEverywhere("v2"))
	}
	for _, app := range all {
		noStepShorter(t, app+": v2", watchers[app].finish()["v2"], delay)
	}
	for _, app := range apps[1] {
		if w, err := writers(ctx, app); err != nil || !slices.Equal(w, []string{survivor}) {
			t.Errorf("%s, in the survivor's shard, was written by %v (%v), want %s alone", app, w, err, survivor)
		}
	}
	for _, app := range apps[0] {
		if w, err := writers(ctx, app); err != nil || !slices.Contains(w, survivor) {
			t.Errorf("%s, in the killed replica's shard, was written by %v (%v): the survivor did not complete it", app, w, err)
		}
	}

	if err := replicas[survivor].Stop(); err != nil {
		t.Fatal(err)
	}
	delete(replicas, survivor)
	if holders, err := shardHolders(ctx, shards); err != nil {
		t.Fatal(err)
	} else if holders[0] != "" || holders[1] != "" {
		t.Errorf("shard leases after the last replica stopped: %v, want released", holders)
	}
}

// startReplicas stops the fleet's operator and starts a replica with
// --shards=shards for each id, on short lease timings. When the test ends
// the replicas left are stopped and the fleet's operator started again.
func startReplicas(t *testing.T, shards int, ids ...string) map[string]*fleet.Replica {
	t.Helper()
	if err := lab.StopOperator(); err != nil {
		t.Fatal(err)
	}
	replicas := map[string]*fleet.Replica{}
	t.Cleanup(func() {
		for _, r := range replicas {
			if err := r.Stop(); err != nil {
				t.Error(err)
			}
		}
		if err := lab.StartOperator(context.Background(), operatorBinary); err != nil {
			t.Error(err)
		}
	})
	for _, id := range ids {
		r, err := lab.StartReplica(context.Background(), id, operatorBinary, fmt.Sprintf("--shards=%d", shards), "--shard-identity="+id,
			"--leader-election-namespace="+lab.Namespace,
			"--shard-lease-duration=6s", "--shard-renew-deadline=4s", "--shard-retry-period=1s")
		if err != nil {
			t.Fatal(err)
		}
		replicas[id] = r
	}
	return replicas
}

// splitShards waits until each of two shards is held by another replica
// (the first replica up takes both, and gives one to the second), and
// returns their holders.
func splitShards(t *testing.T, shards int) map[int]string {
	t.Helper()
	var holders map[int]string
	kit.Eventually(t, 30*time.Second, "one shard for each replica", func() (err error) {
		if holders, err = shardHolders(context.Background(), shards); err != nil {
			return err
		}
		if holders[0] == holders[1] || holders[0] == "" || holders[1] == "" {
			return fmt.Errorf("shard leases name %v", holders)
		}
		return nil
	})
	return holders
}

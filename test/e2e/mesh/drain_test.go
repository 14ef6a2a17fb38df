package mesh_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/kit"
)

// podState is how a test pod is left: what the kubelet (kwok's, in the
// fleet) would have reported of it.
type podState int

const (
	podIsReady     podState = iota // Running and Ready
	podNotReady                    // Running, its Ready condition false
	podTerminating                 // Ready, then deleted: it has a deletion timestamp
)

// createPod creates, on c, pod name of app's build tag in the app's
// namespace of target, with the labels of the pods of the ReplicaSet
// Picchu writes for it, and leaves it in state; it deletes the pod when
// the test ends. No kubelet runs on the test's API servers: the status is
// written as one would.
func createPod(t *testing.T, c client.Client, app, target, tag, name string, state podState) {
	t.Helper()
	ctx := context.Background()
	rs := manifests.ReplicaSet(manifests.Build{
		App: app, Target: target, Tag: tag, Image: "registry.example/" + app + ":" + tag, Spec: &picchuv1alpha1.RevisionTarget{},
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rs.Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", rs.Namespace, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rs.Namespace, Labels: rs.Spec.Template.Labels},
		Spec:       rs.Spec.Template.Spec,
	}
	if state == podTerminating {
		// Bound to a node, a pod deleted waits for its kubelet: here, for ever.
		pod.Spec.NodeName = "node-0"
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, name, err)
	}
	t.Cleanup(func() {
		err := c.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
		if client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting pod %s/%s: %v", pod.Namespace, name, err)
		}
	})
	ready := corev1.ConditionTrue
	if state == podNotReady {
		ready = corev1.ConditionFalse
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()},
	}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatalf("writing the status of pod %s/%s: %v", pod.Namespace, name, err)
	}
	if state != podTerminating {
		return
	}
	if err := c.Delete(ctx, pod); err != nil {
		t.Fatalf("deleting pod %s/%s: %v", pod.Namespace, name, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil || pod.DeletionTimestamp == nil {
		t.Fatalf("pod %s/%s deleted is not terminating: %v, deletion timestamp %v", pod.Namespace, name, err, pod.DeletionTimestamp)
	}
}

// deletePod deletes a pod createPod created, at once, as kwok's kubelet
// does once the ReplicaSet controller deletes it.
func deletePod(t *testing.T, c client.Client, app, target, name string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: picchuv1alpha1.AppNamespace(app, target)}}
	if err := c.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatalf("deleting pod %s/%s: %v", pod.Namespace, name, err)
	}
}

// unreadyCounted sums mesh_requests_to_unready_total of app in s, by
// cluster and tag.
func unreadyCounted(s samples, app string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, m := range s["mesh_requests_to_unready_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["destination_app"] != app {
			continue
		}
		cluster := labels["destination_cluster"]
		if out[cluster] == nil {
			out[cluster] = map[string]float64{}
		}
		out[cluster][labels["destination_version"]] += m.GetCounter().GetValue()
	}
	return out
}

// keys returns the clusters and tags of counts, as {cluster: [tags]}.
func keys(counts map[string]map[string]float64) map[string][]string {
	out := map[string][]string{}
	for cluster, tags := range counts {
		for tag := range tags {
			out[cluster] = append(out[cluster], tag)
		}
	}
	return out
}

// TestMesh_UnreadyRequests: the mesh counts the requests it sends to a
// build with weight and no ready pod on its cluster (none of its pods
// Ready, or those Ready terminating, or its ready pods in another
// namespace than its route's), in mesh_requests_to_unready_total and GET
// /unready, by cluster and tag: every request it sent them; a build with a
// ready pod, one the mesh keeps quiet, and one weighing 0 count none.
func TestMesh_UnreadyRequests(t *testing.T) {
	ctx := context.Background()
	const app = "pods"
	counted, clean := env.Targets[0], env.Targets[1]
	for _, target := range env.Targets {
		createVirtualService(t, target.Client, virtualService(app,
			[]destination{{"v1", 50}, {"v2", 40}, {"v3", 10}, {"v4", 0}}, nil))
		createPod(t, target.Client, app, "production", "v1", "v1-a", podIsReady)
	}
	// On counted, v2 has no ready pod in its route's namespace.
	createPod(t, counted.Client, app, "production", "v2", "v2-a", podNotReady)
	createPod(t, counted.Client, app, "production", "v2", "v2-b", podTerminating)
	createPod(t, counted.Client, app, "staging", "v2", "v2-c", podIsReady)
	createPod(t, clean.Client, app, "production", "v2", "v2-a", podIsReady)
	// v3 (quiet) and v4 (weight 0) have no pods anywhere.
	m, srv, _ := newMesh(t, mesh.Options{
		Clusters: clusters(nil), RequestsPerSecond: 1000, Interval: 20 * time.Millisecond, Lag: ptr.To(time.Duration(0)),
	})
	if err := m.SetQuiet(app, "v3", true); err != nil {
		t.Fatal(err)
	}
	runMesh(t, m)

	kit.Eventually(t, testTimeout, "requests to v2 on "+counted.Name+" counted", func() error {
		got, err := mesh.UnreadyRequests(ctx, srv.URL, app)
		if err != nil {
			return err
		}
		if n := got[counted.Name]["v2"]; n < 200 {
			return fmt.Errorf("%.0f requests counted (all: %v)", n, got)
		}
		return nil
	})
	got, err := mesh.UnreadyRequests(ctx, srv.URL, app)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scrape(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{counted.Name: {"v2"}}
	if k := keys(got); !reflect.DeepEqual(k, want) {
		t.Errorf("GET /unready counts %v for %s, want only %v", got, app, want)
	}
	metric := unreadyCounted(sc, app)
	if k := keys(metric); !reflect.DeepEqual(k, want) {
		t.Errorf("mesh_requests_to_unready_total has %v for %s, want only %v", metric, app, want)
	}
	// v2 had no ready pod from the start: every request sent to it counts.
	// Both counters are read from the clock in the same scrape.
	n, sent := metric[counted.Name]["v2"], sc.requests("destination_app", app, "destination_version", "v2", "destination_cluster", counted.Name)
	if math.Abs(n-sent) > 1+0.01*sent {
		t.Errorf("%.1f requests to v2 counted, and %.1f sent", n, sent)
	}
	if g := got[counted.Name]["v2"]; g > n {
		t.Errorf("GET /unready counted %.1f requests to v2, more than mesh_requests_to_unready_total then: %.1f", g, n)
	}
	all, err := get(srv.URL + "/unready")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GET /unready: %s", all)
}

// TestMesh_Lag: a route change takes effect in the traffic and in the
// weights shown only the lag after it was written, and then does; the
// other cluster keeps its routes.
func TestMesh_Lag(t *testing.T) {
	const app = "lagged"
	const lag = 1500 * time.Millisecond
	for _, target := range env.Targets {
		createVirtualService(t, target.Client, virtualService(app, []destination{{"v1", 100}}, nil))
	}
	m, srv, logs := newMesh(t, mesh.Options{
		Clusters: clusters(nil), RequestsPerSecond: 1000, Interval: 20 * time.Millisecond, Lag: ptr.To(lag),
	})
	runMesh(t, m)
	kept, changed := env.Targets[0].Name, env.Targets[1].Name
	// The first routes read are in effect at once.
	waitWeights(t, srv.URL, app, map[string]map[string]int32{kept: {"v1": 100}, changed: {"v1": 100}})

	start := time.Now()
	setRelease(t, env.Targets[1].Client, app, []destination{{"v2", 100}})
	var early error
	var lastBefore, applied time.Duration // the last look before the change took effect, and the first after
	err := kit.Poll(context.Background(), 10*time.Millisecond, testTimeout, "v2 takes "+changed+"'s traffic", func(context.Context) error {
		s, err := scrape(srv.URL)
		if err != nil {
			return err
		}
		w := m.Weights()[changed][app]
		// Both read before this: the change took effect then, if it shows.
		elapsed := time.Since(start)
		v2 := s.requests("destination_app", app, "destination_version", "v2", "destination_cluster", changed)
		old := reflect.DeepEqual(w, map[string]int32{"v1": 100}) && v2 == 0
		switch {
		case old && elapsed < lag:
			lastBefore = elapsed
			return fmt.Errorf("%s: in effect %v, v2 sent %.0f requests", elapsed, w, v2)
		case elapsed < lag:
			early = fmt.Errorf("%s after the change, within the lag of %s: in effect %v, v2 sent %.0f requests", elapsed, lag, w, v2)
			return nil
		case !reflect.DeepEqual(w, map[string]int32{"v2": 100}) || v2 == 0:
			return fmt.Errorf("%s: in effect %v, v2 sent %.0f requests", elapsed, w, v2)
		}
		applied = elapsed
		return nil
	})
	if early != nil {
		t.Fatalf("the change took effect before the lag: %v", early)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("old routes still in effect %s after the change, new ones %s after (lag %s)", lastBefore, applied, lag)
	if lastBefore < lag/2 {
		t.Fatalf("the test last saw the old routes %s after the change, too early to show they outlast half the lag of %s", lastBefore, lag)
	}
	if n := logs.count("cluster " + changed + ": app " + app + ": weights v2 100%"); n != 1 {
		t.Errorf("the change taking effect was logged %d times, want once", n)
	}

	// Now: v1 receives nothing more on changed, and kept still routes v1.
	s, err := scrape(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	v1 := s.requests("destination_app", app, "destination_version", "v1", "destination_cluster", changed)
	keptV1 := s.requests("destination_app", app, "destination_version", "v1", "destination_cluster", kept)
	kit.Eventually(t, testTimeout, kept+" serves v1 500 requests more", func() error {
		if s, err = scrape(srv.URL); err != nil {
			return err
		}
		if n := s.requests("destination_app", app, "destination_version", "v1", "destination_cluster", kept); n < keptV1+500 {
			return fmt.Errorf("%.0f, %.0f before", n, keptV1)
		}
		return nil
	})
	if n := s.requests("destination_app", app, "destination_version", "v1", "destination_cluster", changed); n != v1 {
		t.Errorf("v1 received %.1f requests on %s after its weight went to 0 there, up from %.1f", n, changed, v1)
	}
	if got := m.Weights()[kept][app]; !reflect.DeepEqual(got, map[string]int32{"v1": 100}) {
		t.Errorf("%s's weights in effect: %v, want v1 100 still", kept, got)
	}
}

// TestMesh_RequestsToPodsGoneBeforeTheirRoute is the case the drain is
// for: v1's route moves to v2 on both clusters, and on one v1's pods go at
// once, as a ReplicaSet scaled down right after the route is written.
// There the mesh, which still sends v1 its traffic for the lag (the
// default), counts those requests; on the other, where v1's pods stay,
// and for v2, ready throughout, it counts none.
func TestMesh_RequestsToPodsGoneBeforeTheirRoute(t *testing.T) {
	ctx := context.Background()
	const app = "retire"
	const rps = 1000
	for _, target := range env.Targets {
		createVirtualService(t, target.Client, virtualService(app, []destination{{"v1", 100}}, nil))
		createPod(t, target.Client, app, "production", "v1", "v1-a", podIsReady)
		createPod(t, target.Client, app, "production", "v2", "v2-a", podIsReady)
	}
	m, srv, _ := newMesh(t, mesh.Options{Clusters: clusters(nil), RequestsPerSecond: rps, Interval: 20 * time.Millisecond})
	runMesh(t, m)
	gone, stays := env.Targets[0], env.Targets[1]
	waitWeights(t, srv.URL, app, map[string]map[string]int32{gone.Name: {"v1": 100}, stays.Name: {"v1": 100}})

	for _, target := range env.Targets {
		setRelease(t, target.Client, app, []destination{{"v2", 100}})
	}
	deletePod(t, gone.Client, app, "production", "v1-a")
	waitWeights(t, srv.URL, app, map[string]map[string]int32{gone.Name: {"v2": 100}, stays.Name: {"v2": 100}})
	// v1 had about the lag's requests while it had no pod: half, at least.
	least := 0.5 * rps * mesh.DefaultLag.Seconds()
	var got map[string]map[string]float64
	kit.Eventually(t, testTimeout, fmt.Sprintf("%.0f requests to v1 on %s counted", least, gone.Name), func() error {
		var err error
		if got, err = mesh.UnreadyRequests(ctx, srv.URL, app); err != nil {
			return err
		}
		if n := got[gone.Name]["v1"]; n < least {
			return fmt.Errorf("%.0f (all: %v)", n, got)
		}
		return nil
	})
	if want := map[string][]string{gone.Name: {"v1"}}; !reflect.DeepEqual(keys(got), want) {
		t.Errorf("requests to unready builds of %s: %v, want v1's on %s alone", app, got, gone.Name)
	}
	t.Logf("requests to v1 without pods on %s: %.0f", gone.Name, got[gone.Name]["v1"])
}

// TestMesh_PodsUnread: while a cluster's pods cannot be listed, its
// traffic goes on as its routes say, the failure is logged once, and no
// request of it is counted as sent to an unready build (its readiness is
// unknown); once they can, the count goes on.
func TestMesh_PodsUnread(t *testing.T) {
	ctx := context.Background()
	const app = "blind"
	for _, target := range env.Targets {
		createVirtualService(t, target.Client, virtualService(app, []destination{{"v1", 50}, {"v2", 50}}, nil))
		createPod(t, target.Client, app, "production", "v1", "v1-a", podIsReady)
	}
	// v2 has no pod anywhere: its requests count while the pods are read.
	flaky := map[string]*flakyClient{}
	m, srv, logs := newMesh(t, mesh.Options{
		Clusters: clusters(func(c client.Client) client.Client {
			f := &flakyClient{Client: c}
			for _, target := range env.Targets {
				if target.Client == c {
					flaky[target.Name] = f
				}
			}
			return f
		}),
		RequestsPerSecond: 1000, Interval: 20 * time.Millisecond, Lag: ptr.To(time.Duration(0)),
	})
	runMesh(t, m)
	blind, seeing := env.Targets[0].Name, env.Targets[1].Name
	counted := func(cluster string) float64 {
		t.Helper()
		got, err := mesh.UnreadyRequests(ctx, srv.URL, app)
		if err != nil {
			t.Fatal(err)
		}
		return got[cluster]["v2"]
	}
	sent := func(cluster, tag string) float64 {
		t.Helper()
		s, err := scrape(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		return s.requests("destination_app", app, "destination_version", tag, "destination_cluster", cluster)
	}
	// waitSent waits until v1 has received n requests more on cluster.
	waitSent := func(cluster string, n float64) {
		t.Helper()
		from := sent(cluster, "v1")
		kit.Eventually(t, testTimeout, fmt.Sprintf("v1 receives %.0f requests more on %s", n, cluster), func() error {
			if got := sent(cluster, "v1"); got < from+n {
				return fmt.Errorf("%.0f, %.0f before", got, from)
			}
			return nil
		})
	}
	kit.Eventually(t, testTimeout, "requests to v2 counted on both clusters", func() error {
		if counted(blind) < 50 || counted(seeing) < 50 {
			return fmt.Errorf("%.0f on %s, %.0f on %s", counted(blind), blind, counted(seeing), seeing)
		}
		return nil
	})

	flaky[blind].failPods.Store(true)
	failed := "cluster " + blind + ": listing the pods of builds: " + errDown.Error()
	kit.Eventually(t, testTimeout, "the failure logged", func() error {
		if logs.count(failed) == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	waitSent(blind, 200)
	before, seeingBefore := counted(blind), counted(seeing)
	waitSent(blind, 200)
	if after := counted(blind); after != before {
		t.Errorf("%s, whose pods are not read, counted %.1f requests to v2, up from %.1f", blind, after, before)
	}
	if after := counted(seeing); after <= seeingBefore {
		t.Errorf("%s, whose pods are read, counted %.1f requests to v2, as before", seeing, after)
	}
	if n := logs.count(failed); n != 1 {
		t.Errorf("the failure was logged %d times, want once", n)
	}
	if n := logs.count("cluster " + blind + ": listing VirtualServices"); n != 0 {
		t.Errorf("%s's routes were reported failing %d times, want never", blind, n)
	}

	flaky[blind].failPods.Store(false)
	kit.Eventually(t, testTimeout, "requests to v2 counted again on "+blind, func() error {
		if n := counted(blind); n <= before {
			return fmt.Errorf("%.1f, %.1f while its pods were not read", n, before)
		}
		return nil
	})
	if n := logs.count("cluster " + blind + ": listing the pods of builds: answering again"); n != 1 {
		t.Errorf("the pods answering again was logged %d times, want once", n)
	}
}

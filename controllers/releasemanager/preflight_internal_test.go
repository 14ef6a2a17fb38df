package releasemanager

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/preflight"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/fleet/nodes"
)

// oneCPU is the pod template of a build whose pods ask for one CPU.
func oneCPU() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}}}}}
}

// cpuNode is a ready node with cpus CPUs.
func cpuNode(name string, cpus int64) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpus, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// podsOf are n running pods of build tag of app shop, one CPU each, on node.
func podsOf(tag, node string, n int) []corev1.Pod {
	out := make([]corev1.Pod, n)
	for i := range out {
		out[i] = corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelTarget: "production", picchuv1alpha1.LabelTag: tag,
			}},
			Spec:   oneCPU().Spec,
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		out[i].Spec.NodeName = node
	}
	return out
}

// fullEast gives east one 4-CPU node that v1's 4 pods fill, and the
// ReplicaSets of every build their one-CPU pods and 4 replicas.
func (c *controlled) fullEast() {
	east := c.s.fleet[0]
	east.capacity = &nodes.Capacity{Nodes: []corev1.Node{cpuNode("east-1", 4)}, Pods: podsOf("v1", "east-1", 4)}
	east.templates, east.desired = map[string]corev1.PodTemplateSpec{}, map[string]int32{}
	for tag := range c.builds {
		east.templates[tag], east.desired[tag] = oneCPU(), 4
	}
}

// runChecked makes the pre-flight checks from what the clusters show, as
// a run does, then decides and reports d later. The Preflight condition is
// kept from run to run, as the status keeps it.
func (c *controlled) runChecked(d time.Duration) string {
	c.t.Helper()
	for _, inc := range c.s.incarnations {
		inc.preflight = nil
	}
	c.s.now = c.s.now.Add(d)
	c.s.judgePreflight(c.s.preflightClusters())
	got := c.run(0)
	setPreflightCondition(c.s.rm, c.s)
	return got
}

func (c *controlled) preflightCondition() *metav1.Condition {
	return meta.FindStatusCondition(c.s.rm.Status.Conditions, picchuv1alpha1.ConditionPreflight)
}

// TestPreflight_NoRoomHoldsTheCanaryUntilANodeIsAdded: east's nodes are
// full, so v2's pods find no room there: v2 does not start its canary,
// the condition gives the figures, and the checks are made again on a
// backoff. Once a node is added, the canary starts.
func TestPreflight_NoRoomHoldsTheCanaryUntilANodeIsAdded(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	v2 := c.addCanary("v2", release.Deployed, 60)
	c.fullEast()

	if got := c.runChecked(0); got != "v2 deployed 0, v1 released 100" {
		t.Fatalf("a canary started on a full cluster: %s", got)
	}
	cond := c.preflightCondition()
	want := "v2 held on cluster east: capacity: 4 pods of v2 (each cpu 1) find no room: the 1 of 1 nodes that can run them have room for 0 (free cpu 0, pods 106)"
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != picchuv1alpha1.ReasonNoRoom || cond.Message != want {
		t.Fatalf("Preflight condition %+v, want False %s %q", cond, picchuv1alpha1.ReasonNoRoom, want)
	}
	if due := v2.step.Due; !due.Equal(c.s.now.Add(preflight.MinRetry)) {
		t.Errorf("v2 due %v, want a retry %s later", due, preflight.MinRetry)
	}
	// Still full a minute on: the retries back off.
	if got := c.runChecked(time.Minute); got != "v2 deployed 0, v1 released 100" {
		t.Fatalf("%s", got)
	}
	if due := v2.step.Due; !due.Equal(c.s.now.Add(time.Minute)) {
		t.Errorf("v2 due %v, want a retry a minute later", due)
	}

	// A node is added: room for v2's 4 pods.
	east := c.s.fleet[0]
	east.capacity.Nodes = append(east.capacity.Nodes, cpuNode("east-2", 4))
	if got := c.runChecked(5 * time.Second); got != "v2 canarying 10, v1 released 90" {
		t.Fatalf("after a node was added: %s", got)
	}
	if cond := c.preflightCondition(); cond != nil {
		t.Errorf("Preflight condition %+v left once every check passes", cond)
	}
}

// TestPreflight_PodsAlreadyPlacedNeedNoRoom: a build whose pods all have
// a node needs no more room, however full the nodes are.
func TestPreflight_PodsAlreadyPlacedNeedNoRoom(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	c.add("v2", release.Releasing, 0)
	c.fullEast()
	east := c.s.fleet[0]
	east.capacity.Pods = append(east.capacity.Pods, podsOf("v2", "east-1", 4)...)
	if got := c.runChecked(0); got != "v2 releasing 25, v1 released 75" {
		t.Fatalf("%s", got)
	}
}

// TestPreflight_ADeployWaitingForRoomDoesNotTimeOut: v2's pods wait for
// room on east for longer than the deploy deadline: it keeps deploying,
// its clock starting over at each run, and deploys once they find some.
func TestPreflight_ADeployWaitingForRoomDoesNotTimeOut(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	v2 := c.add("v2", release.Deploying, 0)
	hourAgo := picchuv1alpha1.NewTimestamp(c.s.now.Add(-time.Hour))
	v2.status.State.LastUpdated = &hourAgo
	c.fullEast()
	for i := range c.s.observation {
		c.s.observation[i].Tags["v2"] = release.Replicas{Desired: 4, Available: 0}
	}
	started := stampOf(v2.status.State.LastUpdated)
	if got := c.runChecked(30 * time.Minute); got != "v2 deploying 0, v1 released 100" {
		t.Fatalf("a deploy waiting for room: %s", got)
	}
	if restarted := stampOf(v2.status.State.LastUpdated); !restarted.Equal(c.s.now) || !restarted.After(started) {
		t.Errorf("deploying since %v, want its clock started over at %v", restarted, c.s.now)
	}
	// Without the capacity check failing, the same deploy would time out.
	c2 := newControlled(t)
	c2.add("v1", release.Released, 100)
	c2.add("v2", release.Deploying, 0).status.State.LastUpdated = &hourAgo
	for i := range c2.s.observation {
		c2.s.observation[i].Tags["v2"] = release.Replicas{Desired: 4, Available: 0}
	}
	if got := c2.runChecked(30 * time.Minute); !strings.HasPrefix(got, "v2 timingout") {
		t.Fatalf("the control case did not time out: %s", got)
	}
}

// TestPreflight_AlertsHoldTheFirstStepOfAWave: while an alert east names
// fires, v2, which has no traffic yet, does not take its first step; the
// condition names the alert. Once it is quiet, v2 ramps.
func TestPreflight_AlertsHoldTheFirstStepOfAWave(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	v2 := c.add("v2", release.Releasing, 0)
	east := c.s.fleet[0]
	east.alerts = preflight.CheckAlerts([]preflight.Answer{{Series: []string{"KubeNodeNotReady"}}})
	if got := c.runChecked(0); got != "v2 releasing 0, v1 released 100" {
		t.Fatalf("a first step taken while east's alerts fire: %s", got)
	}
	if w := v2.ramp.Waiting; w != "preflight" {
		t.Errorf("v2 waits for %q, want preflight", w)
	}
	cond := c.preflightCondition()
	if cond == nil || cond.Reason != picchuv1alpha1.ReasonClusterAlertsFiring || cond.Message != "v2 held on cluster east: alerts: firing: KubeNodeNotReady" {
		t.Fatalf("Preflight condition %+v", cond)
	}
	east.alerts = nil
	if got := c.runChecked(preflight.MinRetry); got != "v2 releasing 25, v1 released 75" {
		t.Fatalf("once quiet: %s", got)
	}
}

// TestPreflight_OnlyTheFirstStepIsChecked: a build that already has
// traffic is not held by a cluster's alerts: its ramp goes on.
func TestPreflight_OnlyTheFirstStepIsChecked(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 75)
	c.add("v2", release.Releasing, 25)
	c.s.fleet[0].alerts = &preflight.Failure{Check: preflight.Alerts, Detail: "firing: KubeNodeNotReady"}
	if got := c.runChecked(time.Minute); got != "v2 releasing 50, v1 released 50" {
		t.Fatalf("%s", got)
	}
	if cond := c.preflightCondition(); cond != nil {
		t.Errorf("Preflight condition %+v for a build past its first step", cond)
	}
}

// TestPreflight_ARollbackNeverWaits: v2 fails while west cannot be
// reached and east's alerts fire; v1 takes its traffic back all the same.
func TestPreflight_ARollbackNeverWaits(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	v2 := c.add("v2", release.Releasing, 0)
	c.expect(0, "v2 releasing 25, v1 released 75")
	c.s.fleet[0].alerts = &preflight.Failure{Check: preflight.Alerts, Detail: "firing: KubeNodeNotReady"}
	c.fullEast()
	v2.revision.Spec.Failed = true
	if got := c.runChecked(0); got != "v2 failing 25, v1 released 75" {
		t.Fatalf("%s", got)
	}
	if got := c.runChecked(step); !strings.HasPrefix(got, "v2 failing 0, v1 released 100") {
		t.Fatalf("the rollback waited on a pre-flight check: %s", got)
	}
}

// TestPreflight_AnUnreachableClusterHoldsTheCanary: a live cluster that
// cannot be used holds a canary that would start there.
func TestPreflight_AnUnreachableClusterHoldsTheCanary(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	c.addCanary("v2", release.Tested, 60)
	west := c.s.fleet[1]
	west.conn, west.problem = nil, "circuit breaker open; last error: connection refused"
	if got := c.runChecked(0); got != "v2 tested 0, v1 released 100" {
		t.Fatalf("%s", got)
	}
	cond := c.preflightCondition()
	if cond == nil || cond.Reason != picchuv1alpha1.ReasonClusterUnreachable || !strings.Contains(cond.Message, "v2 held on cluster west: reachable: circuit breaker open") {
		t.Fatalf("Preflight condition %+v", cond)
	}
}

// TestPreflight_CapacityThatCannotBeReadHolds: a cluster whose nodes or
// pods cannot be read holds the build, saying why.
func TestPreflight_CapacityThatCannotBeReadHolds(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Released, 100)
	c.add("v2", release.Releasing, 0)
	c.s.fleet[1].capacityErr = errors.New(`pods is forbidden: User "picchu" cannot list resource "pods"`)
	if got := c.runChecked(0); got != "v2 releasing 0, v1 released 100" {
		t.Fatalf("%s", got)
	}
	if cond := c.preflightCondition(); cond == nil || !strings.Contains(cond.Message, "v2 held on cluster west: capacity: cannot be read: pods is forbidden") {
		t.Fatalf("Preflight condition %+v", cond)
	}
	// Room that cannot be counted does not hold a deploy past its deadline.
	c2 := newControlled(t)
	c2.add("v1", release.Released, 100)
	hourAgo := picchuv1alpha1.NewTimestamp(c2.s.now.Add(-time.Hour))
	c2.add("v2", release.Deploying, 0).status.State.LastUpdated = &hourAgo
	for i := range c2.s.observation {
		c2.s.observation[i].Tags["v2"] = release.Replicas{Desired: 4, Available: 0}
	}
	c2.s.fleet[1].capacityErr = errors.New("pods is forbidden")
	if got := c2.runChecked(0); !strings.HasPrefix(got, "v2 timingout") {
		t.Fatalf("a deploy held on room it cannot count: %s", got)
	}
}

// TestPreflight_AQuietFleetChecksNothing: with every build released or
// retired, no cluster is checked, so a steady fleet reads nothing.
func TestPreflight_AQuietFleetChecksNothing(t *testing.T) {
	c := newControlled(t)
	c.add("v1", release.Retired, 0)
	c.add("v2", release.Released, 100)
	failed := c.add("v3", release.Failed, 0)
	failed.revision.Spec.Failed = true
	if got := c.s.preflightClusters(); len(got) != 0 {
		t.Errorf("%d clusters checked in a quiet fleet", len(got))
	}
}

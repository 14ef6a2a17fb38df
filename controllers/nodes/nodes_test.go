package nodes_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/medium/picchu/controllers/nodes"
	"github.com/medium/picchu/images/platform"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

var env *harness.Env

func TestMain(m *testing.M) {
	var err error
	env, err = harness.Start(context.Background(), harness.Options{Targets: 1})
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting clusters:", err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping clusters:", err)
	}
	os.Exit(code)
}

func createNode(t *testing.T, c client.Client, name, arch string, ready corev1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		platform.LabelOS: "linux", platform.LabelArch: arch,
	}}}
	if err := c.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	setReady(t, c, name, ready)
}

func setReady(t *testing.T, c client.Client, name string, ready corev1.ConditionStatus) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now()}}
	if err := c.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func TestPlatforms_OfARealCluster(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	createNode(t, tgt.Client, "amd-1", "amd64", corev1.ConditionTrue)
	createNode(t, tgt.Client, "arm-1", "arm64", corev1.ConditionFalse)

	remote, err := cluster.New(tgt.Config, func(o *cluster.Options) { o.Scheme = tgt.Client.Scheme() })
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "picchu", Name: tgt.Name}
	var changes atomic.Int32
	p := nodes.New(log.Log, func(k types.NamespacedName) {
		if k == key {
			changes.Add(1)
		}
	})
	defer p.Stop()

	readCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := p.Of(readCtx, key, remote)
	if err != nil {
		t.Fatal(err)
	}
	amd64, arm64 := platform.Platform{OS: "linux", Architecture: "amd64"}, platform.Platform{OS: "linux", Architecture: "arm64"}
	if !slices.Equal(got, []platform.Platform{amd64}) {
		t.Errorf("platforms %v, want only the ready amd64 node's", got)
	}

	// A heartbeat that changes nothing asks for nothing.
	setReady(t, tgt.Client, "amd-1", corev1.ConditionTrue)
	// The arm64 node becoming ready is a change.
	setReady(t, tgt.Client, "arm-1", corev1.ConditionTrue)
	kit.Eventually(t, 20*time.Second, "the change told", func() error {
		if changes.Load() == 0 {
			return fmt.Errorf("no change told yet")
		}
		return nil
	})
	if n := changes.Load(); n != 1 {
		t.Errorf("%d changes told, want 1", n)
	}
	if got, err = p.Of(readCtx, key, remote); err != nil || !slices.Equal(got, []platform.Platform{amd64, arm64}) {
		t.Errorf("platforms %v (%v), want both", got, err)
	}

	// Forgotten, the cache is built again on the next read.
	p.Forget(key)
	if got, err = p.Of(readCtx, key, remote); err != nil || !slices.Equal(got, []platform.Platform{amd64, arm64}) {
		t.Errorf("platforms after forget %v (%v)", got, err)
	}
}

func TestReduce(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7", Labels: map[string]string{
			platform.LabelOS: "linux", platform.LabelArch: "arm64", "pool": "big",
		}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.0.0.0/24"},
		Status: corev1.NodeStatus{
			NodeInfo:   corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64", KernelVersion: "6"},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue, Message: "ok"}},
			Images:     []corev1.ContainerImage{{Names: []string{"big"}}},
		},
	}
	got, err := nodes.Reduce(n)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7", Labels: map[string]string{platform.LabelOS: "linux", platform.LabelArch: "arm64"}},
		Spec:       corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{
			NodeInfo:   corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "arm64"},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reduced\n%+v\nwant\n%+v", got, want)
	}
	if other, _ := nodes.Reduce("x"); other != "x" {
		t.Error("a non-node was changed")
	}
}

package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/medium/picchu/test/kit"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	// controllersReadyTimeout bounds the wait for a target's controllers to
	// start and prove themselves on a probe ReplicaSet.
	controllersReadyTimeout = 2 * time.Minute
	// controllersPollInterval is how often their health is polled.
	controllersPollInterval = 100 * time.Millisecond
	// processStopTimeout is how long a controller process gets to exit
	// after SIGTERM before it is killed.
	processStopTimeout = 30 * time.Second

	// KwokNodeCount is the number of fake nodes of a target that runs controllers.
	KwokNodeCount = 3
	// KwokNodeAnnotation marks the nodes kwok manages (with value "fake").
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// KwokNodeLabel is the label (with value "kwok") of the fake nodes.
	KwokNodeLabel = "type"

	// probeName names the ReplicaSet, in kube-system, that proves the
	// controllers schedule, run and delete pods before Start returns.
	probeName = "harness-probe"
)

// kubeControllerManagerControllers are the controllers kube-controller-manager
// runs: ReplicaSets, HorizontalPodAutoscalers, and the garbage collector that
// deletes the pods of a deleted ReplicaSet. The ServiceAccount admission
// plugin is off on envtest's API servers, so pods need no service account
// and no token controller.
var kubeControllerManagerControllers = []string{
	"replicaset-controller",
	"horizontal-pod-autoscaler-controller",
	"garbage-collector-controller",
}

// startControllers runs, against the server, kwok (managing KwokNodeCount
// fake nodes it creates), kube-scheduler and kube-controller-manager, each
// with its own kubeconfig and log in dir, and waits until the nodes are
// Ready and a probe ReplicaSet's pod has been created, scheduled, run and,
// once the ReplicaSet is deleted, removed. On error it stops what it started.
func (s *Server) startControllers(ctx context.Context, dir string) (err error) {
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("starting controllers: %w", err), s.stopControllers())
		}
	}()
	assets, err := kit.Assets(ctx)
	if err != nil {
		return err
	}
	kwok, err := kit.KwokBinary(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "kwok"), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	ctx, cancel := context.WithTimeout(ctx, controllersReadyTimeout)
	defer cancel()

	type component struct {
		name, binary string
		env          []string
		args         []string
	}
	components := []component{
		{
			name: "kwok", binary: kwok,
			// Reads no configuration from ~/.kwok: the default stages make
			// pods on the fake nodes Running and Ready at once.
			env: []string{"KWOK_WORKDIR=" + filepath.Join(dir, "kwok")},
			args: []string{
				"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
			},
		},
		{
			name: "kube-scheduler", binary: filepath.Join(assets, "kube-scheduler"),
			args: []string{"--leader-elect=false", "--secure-port=0"},
		},
		{
			name: "kube-controller-manager", binary: filepath.Join(assets, "kube-controller-manager"),
			args: []string{
				"--leader-elect=false",
				"--secure-port=0",
				"--controllers=" + strings.Join(kubeControllerManagerControllers, ","),
				"--horizontal-pod-autoscaler-sync-period=1s",
			},
		},
	}
	s.Controllers = true
	for _, c := range components {
		kubeconfig, err := s.writeKubeconfig(dir, c.name)
		if err != nil {
			return err
		}
		args := append([]string{"--kubeconfig=" + kubeconfig}, c.args...)
		spec := kit.ProcessSpec{Name: c.name, Argv: append([]string{c.binary}, args...), Env: c.env, Log: filepath.Join(dir, c.name+".log")}
		if attachOutput {
			spec.Tee = os.Stderr
		}
		p, err := kit.StartProcess(spec)
		if err != nil {
			return err
		}
		s.controllers = append(s.controllers, p)
	}

	for i := range KwokNodeCount {
		node := kwokNode(fmt.Sprintf("kwok-node-%d", i))
		if err := s.Client.Create(ctx, node); err != nil {
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
	}
	if err := s.waitControllers(ctx, "kwok nodes Ready", s.kwokNodesReady); err != nil {
		return err
	}
	return s.probe(ctx)
}

// writeKubeconfig writes dir/<name>.kubeconfig for a new member of
// system:masters named harness:<name>, and returns its path.
func (s *Server) writeKubeconfig(dir, name string) (string, error) {
	user, err := s.Env.AddUser(envtest.User{Name: "harness:" + name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding a user for %s: %w", name, err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("building the kubeconfig of %s: %w", name, err)
	}
	path := filepath.Join(dir, name+".kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", name, err)
	}
	return path, nil
}

// kwokNode is a fake node for kwok to manage, with room for plenty of pods.
func kwokNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				KwokNodeLabel:          "kwok",
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
			},
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// kwokNodesReady says whether all the fake nodes are Ready and
// schedulable. It plays the part of the node lifecycle controller, which
// does not run: it removes the not-ready taint the API server puts on a new
// node once kwok reports the node Ready.
func (s *Server) kwokNodesReady(ctx context.Context) error {
	nodes := &corev1.NodeList{}
	if err := s.Client.List(ctx, nodes, client.MatchingLabels{KwokNodeLabel: "kwok"}); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	ready := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !nodeReady(n) {
			continue
		}
		taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady
		})
		if len(taints) != len(n.Spec.Taints) {
			n.Spec.Taints = taints
			if err := s.Client.Update(ctx, n); err != nil {
				return fmt.Errorf("removing the not-ready taint of node %s: %w", n.Name, err)
			}
		}
		ready++
	}
	if ready != KwokNodeCount {
		return fmt.Errorf("%d of %d nodes Ready", ready, KwokNodeCount)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// probe creates a one-replica ReplicaSet in kube-system, waits until its pod
// is available, deletes it and waits until its pod is gone: the ReplicaSet
// controller, the scheduler, kwok and the garbage collector all work.
func (s *Server) probe(ctx context.Context) error {
	labels := map[string]string{"app": probeName}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: probeName, Namespace: metav1.NamespaceSystem},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []corev1.Container{{Name: "probe", Image: "registry.example/harness-probe:1"}},
				},
			},
		},
	}
	if err := s.Client.Create(ctx, rs); err != nil {
		return fmt.Errorf("creating probe ReplicaSet: %w", err)
	}
	err := s.waitControllers(ctx, "probe ReplicaSet available", func(ctx context.Context) error {
		got := &appsv1.ReplicaSet{}
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(rs), got); err != nil {
			return fmt.Errorf("reading probe ReplicaSet: %w", err)
		}
		if got.Status.AvailableReplicas != 1 {
			return fmt.Errorf("probe ReplicaSet has %d available replicas, want 1", got.Status.AvailableReplicas)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.Client.Delete(ctx, rs, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return fmt.Errorf("deleting probe ReplicaSet: %w", err)
	}
	return s.waitControllers(ctx, "probe pods deleted", func(ctx context.Context) error {
		err := s.Client.Get(ctx, client.ObjectKeyFromObject(rs), &appsv1.ReplicaSet{})
		if err == nil {
			return errors.New("probe ReplicaSet still exists")
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading probe ReplicaSet: %w", err)
		}
		pods := &corev1.PodList{}
		if err := s.Client.List(ctx, pods, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels(labels)); err != nil {
			return fmt.Errorf("listing probe pods: %w", err)
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d probe pods remain", len(pods.Items))
		}
		return nil
	})
}

// waitControllers polls check until it returns nil. It fails when a
// controller process exits, or when ctx ends first, with the last error of
// check and the processes' log tails.
func (s *Server) waitControllers(ctx context.Context, what string, check func(context.Context) error) error {
	tick := time.NewTicker(controllersPollInterval)
	defer tick.Stop()
	for {
		last := check(ctx)
		if last == nil {
			return nil
		}
		for _, p := range s.controllers {
			if err := p.Exited(); err != nil {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
		}
		select {
		case <-ctx.Done():
			tails := make([]string, 0, len(s.controllers))
			for _, p := range s.controllers {
				tails = append(tails, p.Name()+" "+p.LogTail())
			}
			return fmt.Errorf("waiting for %s: %w (last: %v)\n%s", what, context.Cause(ctx), last, strings.Join(tails, "\n"))
		case <-tick.C:
		}
	}
}

// stopControllers stops the server's controller processes concurrently.
func (s *Server) stopControllers() error {
	procs := s.controllers
	s.controllers = nil
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.Stop(processStopTimeout) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

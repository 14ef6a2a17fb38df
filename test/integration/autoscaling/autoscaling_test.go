// Package autoscaling_test releases an app scaled by an HPA over two target
// clusters that run the real kube-controller-manager (ReplicaSet and HPA
// controllers), kube-scheduler and kwok nodes, with different scaling
// factors, and checks that capacity never falls below what the traffic
// needs at any step.
package autoscaling_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

var env *harness.Env

// factors are the targets' scaling factors.
var factors = []float64{1, 2}

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 2, Controllers: true}, func(s *harness.Suite) error {
		env = s.Env
		for i, target := range env.Targets {
			cl := &picchuv1alpha1.Cluster{}
			if err := env.Delivery.Client.Get(s.Ctx, client.ObjectKeyFromObject(target.Cluster), cl); err != nil {
				return fmt.Errorf("reading cluster: %w", err)
			}
			cl.Spec.ScalingFactorString = ptr.To(fmt.Sprint(factors[i]))
			if err := env.Delivery.Client.Update(s.Ctx, cl); err != nil {
				return fmt.Errorf("setting the scaling factor: %w", err)
			}
		}
		_, err := inprocess.Run(s, operator.Options{SyncPeriod: time.Minute, ClusterTimeout: 5 * time.Second})
		return err
	})
}

// revision is a build of app scaled by an HPA between 40 and 80 replicas
// over the fleet, ramping geometrically every second.
func revision(app, tag string, commit int) *picchuv1alpha1.Revision {
	forty, cpu := int32(40), int32(70)
	return env.Apps().Revision(app, tag, kit.Commit(commit), kit.Geometric(10, 2, time.Second),
		kit.Scale(picchuv1alpha1.ScaleInfo{Min: &forty, Max: 80, TargetCPUUtilizationPercentage: &cpu}))
}

// state waits until app's build tag is in state.
func state(t *testing.T, timeout time.Duration, app, tag, want string) {
	t.Helper()
	env.Apps().WaitState(t, timeout, app, tag, want)
}

// sample is what one cluster shows at one moment: the release weights and
// each build's available pods.
type sample struct {
	cluster   int
	weights   map[string]int32
	available map[string]int32
}

func observe(ctx context.Context, target *harness.Target, i int, app string) (sample, error) {
	s := sample{cluster: i, weights: map[string]int32{}, available: map[string]int32{}}
	vs := &istionetworking.VirtualService{}
	if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: app}, vs); err != nil {
		return s, err
	}
	for _, route := range vs.Spec.Http {
		if route.Name == "01_release-http" {
			for _, d := range route.Route {
				s.weights[d.Destination.Subset] = d.Weight
			}
		}
	}
	// Read the pods after the weights: pods only come up during a ramp, so
	// what is available now was available when those weights were set.
	rss := &appsv1.ReplicaSetList{}
	if err := target.Client.List(ctx, rss, client.InNamespace(app+"-production")); err != nil {
		return s, err
	}
	for _, rs := range rss.Items {
		s.available[rs.Name] = rs.Status.AvailableReplicas
	}
	return s, nil
}

// TestAutoscaling_HPAAt40PodsReleasesWithoutLosingCapacity releases v2 of an
// app whose v1 runs under its HPA at 40 replicas (20 pods on a cluster with
// factor 1, 40 on one with factor 2), while a watcher samples every
// cluster's weights and available pods: at every sample, each build has at
// least 90 % (the capacity gate's margin) of the pods its traffic share
// needs on that cluster. v2 ends under its HPA, v1 at zero without one.
func TestAutoscaling_HPAAt40PodsReleasesWithoutLosingCapacity(t *testing.T) {
	ctx := context.Background()
	const app = "feed"
	// Pods each cluster needs at 100 %: its share of 40, times its factor.
	base := []int32{20, 40}
	if err := env.Delivery.Client.Create(ctx, revision(app, "v1", 1)); err != nil {
		t.Fatal(err)
	}
	state(t, 90*time.Second, app, "v1", "released")
	for i, target := range env.Targets {
		kit.Eventually(t, 60*time.Second, fmt.Sprintf("%s: v1 at its HPA's min", target.Name), func() error {
			s, err := observe(ctx, target, i, app)
			if err != nil {
				return err
			}
			if s.available["v1"] != base[i] || s.weights["v1"] != 100 {
				return fmt.Errorf("%+v", s)
			}
			return hpaOf(ctx, target, app, "v1", base[i])
		})
	}

	var (
		mu       sync.Mutex
		samples  []sample
		problems []string
	)
	watchCtx, stopWatching := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, target := range env.Targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				s, err := observe(watchCtx, target, i, app)
				mu.Lock()
				if err == nil {
					samples = append(samples, s)
					for tag, w := range s.weights {
						need := int32(math.Ceil(0.9 * float64(base[i]) * float64(w) / 100))
						if s.available[tag] < need {
							problems = append(problems, fmt.Sprintf("%s: %s at %d%% with %d pods available, needs %d",
								target.Name, tag, w, s.available[tag], need))
						}
					}
				}
				mu.Unlock()
				select {
				case <-watchCtx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}

	if err := env.Delivery.Client.Create(ctx, revision(app, "v2", 2)); err != nil {
		t.Fatal(err)
	}
	state(t, 120*time.Second, app, "v2", "released")
	state(t, 60*time.Second, app, "v1", "retired")
	stopWatching()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d samples", len(samples))
	last := map[int]string{}
	for _, s := range samples {
		line := fmt.Sprintf("weights %v available %v", s.weights, s.available)
		if last[s.cluster] != line {
			t.Logf("target-%d: %s", s.cluster, line)
			last[s.cluster] = line
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
	steps := map[int32]bool{}
	for _, s := range samples {
		steps[s.weights["v2"]] = true
	}
	for _, w := range []int32{10, 20, 40, 80, 100} {
		if !steps[w] {
			t.Errorf("no sample saw v2 at %d%% (saw %v)", w, steps)
		}
	}
	for i, target := range env.Targets {
		kit.Eventually(t, 60*time.Second, fmt.Sprintf("%s: v2 under its HPA, v1 at zero", target.Name), func() error {
			s, err := observe(ctx, target, i, app)
			if err != nil {
				return err
			}
			if s.available["v2"] < base[i] || s.weights["v2"] != 100 {
				return fmt.Errorf("%+v", s)
			}
			if err := hpaOf(ctx, target, app, "v2", base[i]); err != nil {
				return err
			}
			rs := &appsv1.ReplicaSet{}
			if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: "v2"}, rs); err != nil {
				return err
			}
			if rs.Annotations["picchu.medium.engineering/ramping"] != "" {
				return fmt.Errorf("v2 still marked ramping")
			}
			v1 := &appsv1.ReplicaSet{}
			if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: "v1"}, v1); err != nil {
				return err
			}
			if *v1.Spec.Replicas != 0 || v1.Status.Replicas != 0 {
				return fmt.Errorf("v1 runs %d of %d pods", v1.Status.Replicas, *v1.Spec.Replicas)
			}
			err = target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: "v1"}, &autoscalingv2.HorizontalPodAutoscaler{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("v1's HPA: %v", err)
			}
			return nil
		})
	}
}

// hpaOf checks app's build tag has its HPA with min on the cluster.
func hpaOf(ctx context.Context, target *harness.Target, app, tag string, min int32) error {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: tag}, hpa); err != nil {
		return fmt.Errorf("%s's HPA: %w", tag, err)
	}
	if *hpa.Spec.MinReplicas != min {
		return fmt.Errorf("%s's HPA min %d, want %d", tag, *hpa.Spec.MinReplicas, min)
	}
	return nil
}

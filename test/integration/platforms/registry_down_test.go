package platforms_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// registryMode is how the flaky registry answers.
type registryMode int

const (
	// serving answers as a registry does.
	serving registryMode = iota
	// failing answers 500 with a body that never ends.
	failing
	// hanging answers nothing until the client gives up.
	hanging
)

// flakyRegistry is an anonymous in-memory registry over TLS that answers
// as its mode says, and records the path of every request it gets.
type flakyRegistry struct {
	*kit.Registry
	stop chan struct{}

	mu    sync.Mutex
	mode  registryMode
	paths []string
}

func startFlakyRegistry() (*flakyRegistry, error) {
	f := &flakyRegistry{stop: make(chan struct{})}
	var err error
	f.Registry, err = kit.StartRegistry(kit.RegistryOptions{Wrap: func(reg http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.mu.Lock()
			f.paths = append(f.paths, r.URL.Path)
			mode := f.mode
			f.mu.Unlock()
			switch mode {
			case serving:
				reg.ServeHTTP(w, r)
			case failing:
				w.WriteHeader(http.StatusInternalServerError)
				chunk := []byte(strings.Repeat("internal error ", 4096))
				for {
					if _, err := w.Write(chunk); err != nil {
						return
					}
					select {
					case <-r.Context().Done():
						return
					case <-f.stop:
						return
					default:
					}
				}
			case hanging:
				select {
				case <-r.Context().Done():
				case <-f.stop:
				}
			}
		})
	}})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// set makes the registry answer as mode says from now on, and returns how
// many requests it had got.
func (f *flakyRegistry) set(mode registryMode) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = mode
	return len(f.paths)
}

// asked are the paths of the requests since the first n.
func (f *flakyRegistry) asked(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths[n:]...)
}

func (f *flakyRegistry) close() {
	close(f.stop)
	f.Close()
}

// steady is build tag of app "steady" from the flaky registry, the n-th
// commit, ramping 10, 20, 40, 80, 100 % a second apart.
func steady(tag string, commit int, img string) *picchuv1alpha1.Revision {
	return revision("steady", tag, img, kit.Commit(commit), kit.Geometric(10, 2, time.Second))
}

// steadyState waits until steady's build tag is in state.
func steadyState(t *testing.T, tag, want string) {
	t.Helper()
	env.Apps().WaitState(t, 90*time.Second, "steady", tag, want)
}

// steadyReplicas waits until steady's build tag has n replicas on every
// target, its pods still required on its image's platforms.
func steadyReplicas(t *testing.T, tag string, n int32) {
	t.Helper()
	want := fmt.Sprint([]corev1.NodeSelectorRequirement{
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
	})
	for _, target := range env.Targets {
		kit.Eventually(t, 60*time.Second, fmt.Sprintf("%s: steady %s at %d replicas", target.Name, tag, n), func() error {
			rs := &appsv1.ReplicaSet{}
			if err := target.Client.Get(context.Background(), client.ObjectKey{Namespace: "steady-production", Name: tag}, rs); err != nil {
				return err
			}
			if rs.Spec.Replicas == nil || *rs.Spec.Replicas != n {
				return fmt.Errorf("replicas %v", rs.Spec.Replicas)
			}
			aff := rs.Spec.Template.Spec.Affinity
			if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
				fmt.Sprint(aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions) != want {
				return fmt.Errorf("the pods' node affinity is %+v", aff)
			}
			return nil
		})
	}
}

// TestPlatforms_ARegistryDownHoldsOnlyANewBuild: the registry of app
// steady's images hangs, then answers 500 with an endless body, after an
// operator restart (nothing remembered of any image). A new build, v3,
// holds on it, its condition naming the registry, its error bounded;
// meanwhile v1, brought back when the released v2 fails, and then
// re-scaled, never waits on the registry, which is never asked about
// their image, and keeps its platform affinity.
func TestPlatforms_ARegistryDownHoldsOnlyANewBuild(t *testing.T) {
	ctx := context.Background()
	create(t, steady("v1", 1, flaky.Host+"/shop:multi"))
	steadyState(t, "v1", "released")
	v2 := steady("v2", 2, flaky.Host+"/shop:multi")
	create(t, v2)
	steadyState(t, "v2", "released")
	steadyState(t, "v1", "retired")

	since := flaky.set(hanging)
	// Restarted, the operator's image inspector has read nothing yet.
	running.Restart(t)
	create(t, steady("v3", 3, flaky.Host+"/shop:v3"))
	platformsCondition(t, "steady", metav1.ConditionFalse, "PlatformsUnknown",
		"v3: registry "+flaky.Host+": inspecting "+flaky.Host+"/shop:v3")

	// v2 fails: v1, the last good build, comes back, whatever the registry.
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v2), v2); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(v2.DeepCopy())
	v2.Spec.Failed = true
	if err := env.Delivery.Client.Patch(ctx, v2, patch); err != nil {
		t.Fatal(err)
	}
	steadyState(t, "v1", "released")
	steadyReplicas(t, "v1", 1)

	// The registry answers 500, endlessly: v1 is re-scaled all the same.
	flaky.set(failing)
	v1 := &picchuv1alpha1.Revision{}
	if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "steady-v1"}, v1); err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(v1.DeepCopy())
	four := int32(4)
	v1.Spec.Targets[0].Scale = picchuv1alpha1.ScaleInfo{Default: four, Min: &four, Max: 4}
	if err := env.Delivery.Client.Patch(ctx, v1, patch); err != nil {
		t.Fatal(err)
	}
	steadyReplicas(t, "v1", 2)

	// v3 still holds, on the registry's 500 now, its error cut short.
	platformsCondition(t, "steady", metav1.ConditionFalse, "PlatformsUnknown",
		"v3: registry "+flaky.Host+": inspecting "+flaky.Host+"/shop:v3", "response too large")
	rm, err := releaseManager("steady")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rm.Status.Conditions {
		if len(c.Message) > 4096 {
			t.Errorf("condition %s has a message of %d bytes", c.Type, len(c.Message))
		}
	}
	for _, cs := range rm.Status.Clusters {
		if len(cs.Message) > 2048 {
			t.Errorf("cluster %s has a message of %d bytes", cs.Name, len(cs.Message))
		}
	}
	for _, target := range env.Targets {
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: "steady-production", Name: "v3"}, &appsv1.ReplicaSet{}); err == nil {
			t.Errorf("%s got the ReplicaSet of v3, whose image cannot be read", target.Name)
		}
	}
	// Only v3's image was asked about (and the registry's ping).
	for _, p := range flaky.asked(since) {
		if p != "/v2/" && !strings.HasPrefix(p, "/v2/shop/manifests/v3") {
			t.Errorf("the registry was asked %s", p)
		}
	}
}

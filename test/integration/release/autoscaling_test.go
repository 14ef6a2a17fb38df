package release_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// scaling is what a target shows of a build's sizing.
type scaling struct {
	hpa      bool  // its HPA exists
	min, max int32 // the HPA's range
	ramping  bool  // its ReplicaSet carries the ramping annotation
	replicas int32
}

func scalingOf(ctx context.Context, target *harness.Target, app, tag string) (scaling, error) {
	var out scaling
	key := client.ObjectKey{Namespace: app + "-production", Name: tag}
	rs := &appsv1.ReplicaSet{}
	if err := target.Client.Get(ctx, key, rs); err != nil {
		return out, err
	}
	out.ramping = rs.Annotations["picchu.medium.engineering/ramping"] == "true"
	if rs.Spec.Replicas != nil {
		out.replicas = *rs.Spec.Replicas
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	switch err := target.Client.Get(ctx, key, hpa); {
	case err == nil:
		out.hpa, out.min, out.max = true, *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas
	case !apierrors.IsNotFound(err):
		return out, err
	}
	return out, nil
}

// sized waits until app's build tag shows want on every target.
func sized(t *testing.T, app, tag, what string, want func(scaling) error) {
	t.Helper()
	for _, target := range env.Targets {
		kit.Eventually(t, 30*time.Second, fmt.Sprintf("%s: %s %s %s", target.Name, app, tag, what), func() error {
			got, err := scalingOf(context.Background(), target, app, tag)
			if err != nil {
				return err
			}
			if err := want(got); err != nil {
				return fmt.Errorf("%w (%+v)", err, got)
			}
			return nil
		})
	}
}

// TestAutoscaling_HPAAwayWhileRampingBackWhenReleased releases builds with
// an HPA (scale 4..12, no default) over two clusters: a released build
// keeps its HPA over its share of the whole range; a ramping build has no
// HPA, a ReplicaSet marked ramping, and the replicas Picchu sets; once
// released its HPA is back and the mark gone; the old build retires to 0
// without an HPA. A build that fails while ramping gets its HPA back.
func TestAutoscaling_HPAAwayWhileRampingBackWhenReleased(t *testing.T) {
	const app = "catalog"
	create(t, build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond, hpa: true})
	state(t, 30*time.Second, app, "v1", "released")
	released := func(s scaling) error {
		// 4..12 over two clusters: 2..6 on each.
		if !s.hpa || s.min != 2 || s.max != 6 || s.ramping {
			return fmt.Errorf("not under its HPA")
		}
		return nil
	}
	sized(t, app, "v1", "under its HPA", released)

	create(t, build{app: app, tag: "v2", commit: 2, delay: 2 * time.Second, hpa: true})
	percentAtLeast(t, app, "v2", 10)
	sized(t, app, "v2", "ramping without its HPA", func(s scaling) error {
		if s.hpa || !s.ramping || s.replicas < 1 {
			return fmt.Errorf("not ramping")
		}
		return nil
	})
	state(t, 60*time.Second, app, "v2", "released")
	sized(t, app, "v2", "back under its HPA", released)
	state(t, 30*time.Second, app, "v1", "retired")
	sized(t, app, "v1", "retired", func(s scaling) error {
		if s.hpa || s.replicas != 0 {
			return fmt.Errorf("not retired")
		}
		return nil
	})

	v3 := create(t, build{app: app, tag: "v3", commit: 3, delay: 10 * time.Second, hpa: true})
	percentAtLeast(t, app, "v3", 10)
	sized(t, app, "v3", "ramping", func(s scaling) error {
		if s.hpa || !s.ramping {
			return fmt.Errorf("not ramping")
		}
		return nil
	})
	fail(t, v3)
	state(t, 30*time.Second, app, "v3", "failing")
	sized(t, app, "v3", "under its HPA again while it fails", released)
	state(t, 60*time.Second, app, "v3", "failed")
	sized(t, app, "v3", "failed", func(s scaling) error {
		if s.hpa || s.replicas != 0 {
			return fmt.Errorf("not retired")
		}
		return nil
	})
	routes(t, app, map[string]int32{"v2": 100})
}

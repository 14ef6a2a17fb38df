package kit

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Apps are a test's apps on the delivery cluster: their Revisions are made
// in Namespace for Fleet, and their ReleaseManagers read there with Client.
type Apps struct {
	// Client reads the delivery cluster.
	Client client.Client
	// Namespace holds the Revisions and ReleaseManagers.
	Namespace string
	// Fleet is the fleet of a Revision's target.
	Fleet string
}

// RevisionOption changes a Revision that Apps.Revision builds.
type RevisionOption func(*picchuv1alpha1.Revision)

// Revision is build tag of app: named app-tag in a.Namespace, labelled
// with its app, of image registry.example/app:tag, with one target,
// production in a.Fleet, which has a public HTTP port (80 to 8080, host
// app.example.com), two replicas (from 2 to 4) and a release eligible up to
// 100 % with a TTL of a day and the schedule "always". opts change it, in
// their order.
func (a Apps) Revision(app, tag string, opts ...RevisionOption) *picchuv1alpha1.Revision {
	two := int32(2)
	rev := &picchuv1alpha1.Revision{
		ObjectMeta: metav1.ObjectMeta{
			Name: app + "-" + tag, Namespace: a.Namespace,
			Labels: map[string]string{picchuv1alpha1.LabelApp: app},
		},
		Spec: picchuv1alpha1.RevisionSpec{
			App: picchuv1alpha1.RevisionApp{Name: app, Tag: tag, Image: "registry.example/" + app + ":" + tag},
			Targets: []picchuv1alpha1.RevisionTarget{{
				Name: "production", Fleet: a.Fleet,
				Ports: []picchuv1alpha1.PortInfo{{Name: "http", Port: 80, ContainerPort: 8080, Protocol: corev1.ProtocolTCP,
					Mode: picchuv1alpha1.PortModePublic, Hosts: []string{app + ".example.com"}}},
				Scale:   picchuv1alpha1.ScaleInfo{Min: &two, Default: two, Max: 4},
				Release: picchuv1alpha1.ReleaseInfo{Eligible: true, Max: 100, TTL: 86400, Schedule: picchuv1alpha1.ScheduleAlways},
			}},
		},
	}
	for _, opt := range opts {
		opt(rev)
	}
	return rev
}

// Commit orders builds: the Revision is the n-th commit (minute) of the
// day, by its committer timestamp. It replaces the annotations.
func Commit(n int) RevisionOption {
	return CommittedAt(time.Date(2026, 11, 2, 9, n, 0, 0, time.UTC).Format(time.RFC3339))
}

// CommittedAt gives the Revision the committer timestamp at, as its only
// annotation.
func CommittedAt(at string) RevisionOption {
	return func(rev *picchuv1alpha1.Revision) {
		rev.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: at}
	}
}

// Labels replaces the Revision's labels (nil leaves it none).
func Labels(labels map[string]string) RevisionOption {
	return func(rev *picchuv1alpha1.Revision) { rev.Labels = labels }
}

// Image is the Revision's image.
func Image(image string) RevisionOption {
	return func(rev *picchuv1alpha1.Revision) { rev.Spec.App.Image = image }
}

// Targets replaces the Revision's targets.
func Targets(targets ...picchuv1alpha1.RevisionTarget) RevisionOption {
	return func(rev *picchuv1alpha1.Revision) { rev.Spec.Targets = targets }
}

// Scale is the first target's scale.
func Scale(scale picchuv1alpha1.ScaleInfo) RevisionOption {
	return Target(func(t *picchuv1alpha1.RevisionTarget) { t.Scale = scale })
}

// Geometric ramps the first target's release geometrically: from start
// percent, times factor every delay.
func Geometric(start, factor int32, delay time.Duration) RevisionOption {
	return Target(func(t *picchuv1alpha1.RevisionTarget) {
		t.Release.ScalingStrategy = picchuv1alpha1.ScalingStrategyGeometric
		t.Release.GeometricScaling = picchuv1alpha1.GeometricScaling{Start: start, Factor: factor, Delay: &metav1.Duration{Duration: delay}}
	})
}

// Target changes the Revision's first target with change.
func Target(change func(*picchuv1alpha1.RevisionTarget)) RevisionOption {
	return func(rev *picchuv1alpha1.Revision) { change(&rev.Spec.Targets[0]) }
}

// With changes the Revision with change.
func With(change func(*picchuv1alpha1.Revision)) RevisionOption {
	return RevisionOption(change)
}

// ReleaseManager reads the ReleaseManager of app in target production.
func (a Apps) ReleaseManager(ctx context.Context, app string) (*picchuv1alpha1.ReleaseManager, error) {
	rm := &picchuv1alpha1.ReleaseManager{}
	err := a.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: app + "-production"}, rm)
	return rm, err
}

// BuildStatus is what rm records of build tag, and whether it records it.
func BuildStatus(rm *picchuv1alpha1.ReleaseManager, tag string) (picchuv1alpha1.ReleaseManagerRevisionStatus, bool) {
	for _, st := range rm.Status.Revisions {
		if st.Tag == tag {
			return st, true
		}
	}
	return picchuv1alpha1.ReleaseManagerRevisionStatus{}, false
}

// WaitState waits with Eventually until app's build tag is in state want
// in target production, and returns the ReleaseManager that says so and
// the build's status in it.
func (a Apps) WaitState(t testing.TB, timeout time.Duration, app, tag, want string) (*picchuv1alpha1.ReleaseManager, picchuv1alpha1.ReleaseManagerRevisionStatus) {
	t.Helper()
	var rm *picchuv1alpha1.ReleaseManager
	var out picchuv1alpha1.ReleaseManagerRevisionStatus
	Eventually(t, timeout, fmt.Sprintf("%s %s %s", app, tag, want), func() error {
		var err error
		if rm, err = a.ReleaseManager(context.Background(), app); err != nil {
			return err
		}
		st, ok := BuildStatus(rm, tag)
		if !ok {
			return fmt.Errorf("%s not recorded: %+v", tag, rm.Status.Revisions)
		}
		if st.State.Current != want {
			// Enough to tell why, when it never comes: the build's verdict,
			// alerts and rejection, and each cluster's last word.
			return fmt.Errorf("%s at %d%% (verdict %q, alerts %v, rejected %q); clusters %+v; conditions %+v",
				st.State.Current, st.CurrentPercent, st.Verdict, st.TriggeredAlerts, st.Rejected, rm.Status.Clusters, rm.Status.Conditions)
		}
		out = st
		return nil
	})
	return rm, out
}

// Record takes the ReleaseManager of app in target from the operator (it
// labels it to be ignored, so that what a test writes there stays) and
// writes its status as record changes it, retrying on conflicts.
func (a Apps) Record(ctx context.Context, app, target string, record func(*picchuv1alpha1.ReleaseManagerStatus)) error {
	key := client.ObjectKey{Namespace: a.Namespace, Name: app + "-" + target}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := a.Client.Get(ctx, key, rm); err != nil {
			return err
		}
		if picchuv1alpha1.Ignored(rm.Labels) {
			return nil
		}
		if rm.Labels == nil {
			rm.Labels = map[string]string{}
		}
		// The key alone, as the original's users set it: the operator must
		// honour it with an empty value.
		rm.Labels[picchuv1alpha1.LabelIgnore] = ""
		return a.Client.Update(ctx, rm)
	}); err != nil {
		return fmt.Errorf("labelling ReleaseManager %s ignored: %w", key, err)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := a.Client.Get(ctx, key, rm); err != nil {
			return err
		}
		record(&rm.Status)
		return a.Client.Status().Update(ctx, rm)
	}); err != nil {
		return fmt.Errorf("writing the status of ReleaseManager %s: %w", key, err)
	}
	return nil
}

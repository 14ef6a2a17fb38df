package release_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/test/kit"
)

// TestRelease_AFinishedDeployGoesOnInTheSameRun: the run that sees a build
// deployed on every cluster checks its SLO alerts and takes it on, through
// deployed and pendingrelease, to its release (a first build to released,
// a second to its first step), as one StateChanged event names: no run,
// status write or event of its own for deployed or pendingrelease.
func TestRelease_AFinishedDeployGoesOnInTheSameRun(t *testing.T) {
	const app = "onerun"
	create(t, build{app: app, tag: "v1", commit: 1, delay: 500 * time.Millisecond})
	state(t, 30*time.Second, app, "v1", "released")
	create(t, build{app: app, tag: "v2", commit: 2, delay: 500 * time.Millisecond})
	state(t, 30*time.Second, app, "v2", "released")

	rm := picchuv1alpha1.ReleaseManagerName(app, "production")
	var notes []string
	kit.Eventually(t, 10*time.Second, "the StateChanged events of "+rm, func() error {
		var err error
		if notes, err = stateChanges(rm); err != nil {
			return err
		}
		for _, want := range []string{
			"v1 deploying → deployed → pendingrelease → releasing → released",
			"v2 deploying → deployed → pendingrelease → releasing",
		} {
			if !containsNote(notes, want) {
				return fmt.Errorf("no event %q among %q", want, notes)
			}
		}
		return nil
	})
	for _, n := range notes {
		for _, tag := range []string{"v1", "v2"} {
			if strings.Contains(n, tag+" deploying → deployed") && !strings.Contains(n, tag+" deploying → deployed → ") ||
				strings.HasPrefix(n, tag+" deployed") || strings.HasPrefix(n, tag+" pendingrelease") {
				t.Errorf("%s stopped on its way from deploying to its release: event %q (all: %q)", tag, n, notes)
			}
		}
	}
}

// containsNote says some note holds want.
func containsNote(notes []string, want string) bool {
	for _, n := range notes {
		if strings.Contains(n, want) {
			return true
		}
	}
	return false
}

// TestRelease_TheBuildThatLosesItsLastTrafficIsRetiredInThatRun: the run
// whose step takes the old build's last traffic records it retired, in the
// status write that records the new build released, as one StateChanged
// event names: no run, status write or event of its own for retiring.
// Its pods go after that record, never before: when its ReplicaSet is
// first seen scaled to nothing on a target, the delivery API server
// already records it with no traffic.
func TestRelease_TheBuildThatLosesItsLastTrafficIsRetiredInThatRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const app = "lastrun"
	create(t, build{app: app, tag: "v1", commit: 1, delay: 500 * time.Millisecond})
	state(t, 30*time.Second, app, "v1", "released")
	replicas(t, app, "v1", 1)

	rmWatch := watchReleaseManager(ctx, t, app)
	scaledDown := make(chan error, len(env.Targets))
	for _, target := range env.Targets {
		w, err := client.NewWithWatch(target.Config, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		rsWatch, err := w.Watch(ctx, &appsv1.ReplicaSetList{}, client.InNamespace(app+"-production"),
			client.MatchingFields{"metadata.name": "v1"})
		if err != nil {
			t.Fatal(err)
		}
		defer rsWatch.Stop()
		go func() { scaledDown <- recordedBeforeScaledDown(ctx, target.Name, rsWatch, app) }()
	}
	create(t, build{app: app, tag: "v2", commit: 2, delay: 500 * time.Millisecond})

	var states []string
	for len(states) == 0 || states[len(states)-1] != "retired" {
		select {
		case e, ok := <-rmWatch.ResultChan():
			if !ok || e.Type == apiwatch.Error {
				t.Fatalf("watching the release manager of %s: %v (v1 recorded %q)", app, e.Object, states)
			}
			rm, _ := e.Object.(*picchuv1alpha1.ReleaseManager)
			if st, found := kit.BuildStatus(rm, "v1"); found && (len(states) == 0 || states[len(states)-1] != st.State.Current) {
				states = append(states, st.State.Current)
			}
		case <-ctx.Done():
			t.Fatalf("v1 not retired: recorded %q", states)
		}
	}
	if want := []string{"released", "retired"}; !slices.Equal(states, want) {
		t.Errorf("v1 recorded %q, want %q: retired in the write that takes its last traffic", states, want)
	}
	for range env.Targets {
		if err := <-scaledDown; err != nil {
			t.Error(err)
		}
	}
	rm := picchuv1alpha1.ReleaseManagerName(app, "production")
	kit.Eventually(t, 10*time.Second, "the StateChanged event of v1's retirement", func() error {
		notes, err := stateChanges(rm)
		if err != nil {
			return err
		}
		if !containsNote(notes, "v1 released → retiring → retired") {
			return fmt.Errorf("no event of v1 released → retiring → retired among %q", notes)
		}
		for _, n := range notes {
			if strings.Contains(n, "v1 retiring") {
				t.Fatalf("an event of its own for v1's retiring: %q (all: %q)", n, notes)
			}
		}
		return nil
	})
}

// watchReleaseManager watches app's ReleaseManager from now on.
func watchReleaseManager(ctx context.Context, t *testing.T, app string) apiwatch.Interface {
	t.Helper()
	w, err := client.NewWithWatch(env.Delivery.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	rmWatch, err := w.Watch(ctx, &picchuv1alpha1.ReleaseManagerList{}, client.InNamespace(env.Namespace),
		client.MatchingFields{"metadata.name": picchuv1alpha1.ReleaseManagerName(app, "production")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rmWatch.Stop)
	return rmWatch
}

// recordedBeforeScaledDown waits until rsWatch shows the ReplicaSet of v1
// scaled to nothing, then reads app's ReleaseManager from the delivery API
// server: the operator wrote the record before it scaled the build down
// (or the ReplicaSet would not be seen so), so the record must say v1 has
// no traffic.
func recordedBeforeScaledDown(ctx context.Context, target string, rsWatch apiwatch.Interface, app string) error {
	for {
		select {
		case e, ok := <-rsWatch.ResultChan():
			if !ok || e.Type == apiwatch.Error {
				return fmt.Errorf("%s: watching v1's ReplicaSet: %v", target, e.Object)
			}
			rs, _ := e.Object.(*appsv1.ReplicaSet)
			if rs == nil || rs.Spec.Replicas == nil || *rs.Spec.Replicas != 0 {
				continue
			}
			rm, err := releaseManager(ctx, app)
			if err != nil {
				return fmt.Errorf("%s: reading the release manager once v1 was scaled down: %w", target, err)
			}
			st, _ := kit.BuildStatus(rm, "v1")
			if s := release.State(st.State.Current); st.CurrentPercent != 0 || !(s.IsRetiring() || s.IsRetired()) {
				return fmt.Errorf("%s: v1 scaled down while recorded %s at %d%%", target, st.State.Current, st.CurrentPercent)
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%s: v1 not scaled down: %w", target, ctx.Err())
		}
	}
}

// stateChanges are the notes of the StateChanged events of the
// ReleaseManager named rm.
func stateChanges(rm string) ([]string, error) {
	events := &eventsv1.EventList{}
	if err := env.Delivery.Client.List(context.Background(), events, client.InNamespace(env.Namespace)); err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range events.Items {
		if e.Regarding.Name == rm && e.Reason == "StateChanged" {
			notes = append(notes, e.Note)
		}
	}
	return notes, nil
}

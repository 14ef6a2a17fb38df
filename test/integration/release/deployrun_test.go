package release_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/test/kit"
)

// TestRelease_AFinishedDeployGoesOnInTheSameRun: the run that sees a build
// deployed on every cluster checks its SLO alerts and takes it on, through
// deployed and pendingrelease, to its release (a first build to released,
// a second to its first step), as one StateChanged event names: no run,
// status write or event of its own for deployed or pendingrelease. A
// deploy that finishes within releasemanager.DeployStartWait (5 s) of its start is not
// written on its own either: the build's first record is its release, and
// one event names the whole way from new.
func TestRelease_AFinishedDeployGoesOnInTheSameRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const app = "onerun"
	records := recordStates(ctx, watchReleaseManager(ctx, t, app))
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
		for tag, want := range map[string]string{
			"v1": "deploying → deployed → pendingrelease → releasing → released",
			"v2": "deploying → deployed → pendingrelease → releasing",
		} {
			if !hasPath(notes, tag, want) {
				return fmt.Errorf("no event of %s %s among %q", tag, want, notes)
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
	states, last := records()
	for _, tag := range []string{"v1", "v2"} {
		st := last[tag]
		if st.DeployingStartTimestamp == nil || st.ReleaseStartTimestamp == nil {
			t.Fatalf("%s recorded with no deploy or release start: %+v", tag, st)
		}
		// The wait runs from the run that started the deploy: a deploy
		// seen finished well within it is not written on its own.
		if took := st.ReleaseStartTimestamp.Sub(st.DeployingStartTimestamp.Time); took > releasemanager.DeployStartWait-time.Second {
			t.Logf("%s took %s from its deploy's start to its release: its start may have been written alone", tag, took)
			continue
		}
		if len(states[tag]) == 0 || states[tag][0] == "deploying" {
			t.Errorf("%s recorded %q: its deploy's start written on its own", tag, states[tag])
		}
		if want := tag + " new → deploying → deployed → pendingrelease → releasing"; !containsNote(notes, want) {
			t.Errorf("no event %q among %q", want, notes)
		}
	}
}

// recordStates reads rmWatch until ctx is done, and returns what it saw
// so far: by build, the states recorded in order (each once in a row) and
// the last status recorded.
func recordStates(ctx context.Context, rmWatch apiwatch.Interface) func() (map[string][]string, map[string]picchuv1alpha1.ReleaseManagerRevisionStatus) {
	var mu sync.Mutex
	states := map[string][]string{}
	last := map[string]picchuv1alpha1.ReleaseManagerRevisionStatus{}
	go func() {
		for {
			select {
			case e, ok := <-rmWatch.ResultChan():
				rm, _ := e.Object.(*picchuv1alpha1.ReleaseManager)
				if !ok || rm == nil {
					return
				}
				mu.Lock()
				for _, st := range rm.Status.Revisions {
					if seen := states[st.Tag]; len(seen) == 0 || seen[len(seen)-1] != st.State.Current {
						states[st.Tag] = append(seen, st.State.Current)
					}
					last[st.Tag] = st
				}
				mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() (map[string][]string, map[string]picchuv1alpha1.ReleaseManagerRevisionStatus) {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(states), maps.Clone(last)
	}
}

// hasPath says some note has a part ("; "-separated) about build tag
// with path in it.
func hasPath(notes []string, tag, path string) bool {
	for _, n := range notes {
		for _, part := range strings.Split(n, "; ") {
			if strings.HasPrefix(part, tag+" ") && strings.Contains(part, path) {
				return true
			}
		}
	}
	return false
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

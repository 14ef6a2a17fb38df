package release_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
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
		events := &eventsv1.EventList{}
		if err := env.Delivery.Client.List(context.Background(), events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		notes = notes[:0]
		for _, e := range events.Items {
			if e.Regarding.Name == rm && e.Reason == "StateChanged" {
				notes = append(notes, e.Note)
			}
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

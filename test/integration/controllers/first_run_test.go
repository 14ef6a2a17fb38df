package controllers_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// TestReleaseManager_ANewAppsFirstRunAsksOnlyAboutItsNamespace deploys a
// new app through the operator as operator.Setup wires it. Before writing
// into a target cluster, the operator asks that API server whether someone
// else's object is there only for the app's namespace (which none is);
// the objects it then writes into the namespace it has just created are
// not asked about: no read of one was answered "not found", on any target.
func TestReleaseManager_ANewAppsFirstRunAsksOnlyAboutItsNamespace(t *testing.T) {
	ctx := context.Background()
	const app = "newcomer"
	ns := picchuv1alpha1.AppNamespace(app, "production")
	config(t, app, "v1")
	reads := targetWrites.readCount()
	if err := env.Delivery.Client.Create(ctx, appRevision(app, "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	// Recorded once a run that wrote the build to every cluster is over
	// (a run before the clusters are connected records it too).
	kit.Eventually(t, 30*time.Second, "the build written to every cluster", func() error {
		rm := buildState(t, 30*time.Second, app, "v1", "deploying")
		synced := 0
		for _, c := range rm.Status.Clusters {
			if c.Live && c.Synced {
				synced++
			}
		}
		if synced != len(env.Targets) {
			return fmt.Errorf("written to %d clusters of %d: %+v", synced, len(env.Targets), rm.Status.Clusters)
		}
		return nil
	})

	namespaceAsked := map[string]int{}
	for _, r := range targetWrites.readsSince(reads) {
		fields := strings.Fields(r)
		u, err := url.Parse(fields[1])
		if err != nil || fields[2] != "404" {
			continue
		}
		switch {
		case u.Path == "/api/v1/namespaces/"+ns:
			namespaceAsked[u.Host]++
		case strings.Contains(u.Path, "/namespaces/"+ns+"/"):
			t.Errorf("asked about %s, in the namespace the run created: not found", u.Path)
		}
	}
	if len(namespaceAsked) != len(env.Targets) {
		t.Errorf("the namespace was asked about (and not found) on %d target clusters, want %d: %v", len(namespaceAsked), len(env.Targets), namespaceAsked)
	}
	for host, n := range namespaceAsked {
		if n != 1 {
			t.Errorf("%s was asked %d times for the namespace, want once", host, n)
		}
	}
}

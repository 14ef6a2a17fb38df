package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// TestReleaseManager_RoutesNoHostItsClustersDoNotAllow: a Revision that got
// in without the webhook asks for another team's in-mesh host on its public
// port. Picchu writes none of the app's routes on a cluster whose ingresses
// do not allow the host: the app holds, Stalled with HostNotAllowed naming
// the port's host and the cluster, and so does the Revision; no
// VirtualService on any target carries the host.
func TestReleaseManager_RoutesNoHostItsClustersDoNotAllow(t *testing.T) {
	ctx := context.Background()
	const app, vault = "squatter", "vault.vault.svc.cluster.local"
	rev := appRevision(app, "v1", env.Fleet)
	rev.Spec.Targets[0].Ports[0].Hosts = []string{app + ".example.com", vault}
	if err := env.Delivery.Client.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Delivery.Client.Delete(context.Background(), rev) })

	rm := &picchuv1alpha1.ReleaseManager{}
	kit.Eventually(t, 30*time.Second, "the app held for its host", func() error {
		if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: rev.Namespace, Name: app + "-production"}, rm); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != picchuv1alpha1.ReasonHostNotAllowed {
			return fmt.Errorf("stalled %+v", c)
		}
		for _, target := range env.Targets {
			if !strings.Contains(c.Message, "port http: hosts[1]: cluster "+target.Name) || !strings.Contains(c.Message, `"`+vault+`" is under none`) {
				return fmt.Errorf("stalled message %q does not name the host on %s", c.Message, target.Name)
			}
		}
		return nil
	})
	kit.Eventually(t, 30*time.Second, "the Revision held", func() error {
		got := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(rev), got); err != nil {
			return err
		}
		for _, ts := range got.Status.Targets {
			if ts.Held != nil && ts.Held.Reason == picchuv1alpha1.ReasonHostNotAllowed && strings.Contains(ts.Held.Message, vault) {
				return nil
			}
		}
		return fmt.Errorf("targets %+v", got.Status.Targets)
	})
	for _, target := range env.Targets {
		list := &istionetworking.VirtualServiceList{}
		if err := target.Client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		for _, vs := range list.Items {
			if slices.Contains(vs.Spec.Hosts, vault) {
				t.Errorf("%s: VirtualService %s/%s routes %s: %v", target.Name, vs.Namespace, vs.Name, vault, vs.Spec.Hosts)
			}
			if vs.Namespace == app+"-production" {
				t.Errorf("%s: VirtualService %s/%s written for an app held for its host", target.Name, vs.Namespace, vs.Name)
			}
		}
	}
}

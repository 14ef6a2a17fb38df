package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// TestReleaseManager_DeploysABuildToEveryCluster applies a Revision and
// checks every object it brings to both clusters, then that the build is
// deployed right after its ReplicaSets are ready (the sync period is ten
// minutes, so only remote events can explain it) and takes the traffic.
func TestReleaseManager_DeploysABuildToEveryCluster(t *testing.T) {
	ctx := context.Background()
	const app = "store"
	config(t, app, "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision(app, "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	ns := app + "-production"
	for _, target := range env.Targets {
		c := target.Client
		rs := replicaSet(t, target, app, "v1")
		pod := rs.Spec.Template.Spec
		if *rs.Spec.Replicas != 1 || pod.Containers[0].Image != "registry.example/store:v1" ||
			rs.Spec.Template.Labels[picchuv1alpha1.LabelPodTag] != "v1" || rs.Labels[picchuv1alpha1.LabelTag] != "v1" {
			t.Errorf("%s: ReplicaSet replicas %d (want 2 over 2 clusters: 1), image %s, labels %v",
				target.Name, *rs.Spec.Replicas, pod.Containers[0].Image, rs.Spec.Template.Labels)
		}
		var envFrom []string
		for _, e := range pod.Containers[0].EnvFrom {
			switch {
			case e.ConfigMapRef != nil:
				envFrom = append(envFrom, "cm:"+e.ConfigMapRef.Name)
			case e.SecretRef != nil:
				envFrom = append(envFrom, "secret:"+e.SecretRef.Name)
			}
		}
		if !slices.Equal(envFrom, []string{"cm:store-v1-env", "secret:store-v1-secrets"}) {
			t.Errorf("%s: envFrom %v", target.Name, envFrom)
		}
		if pod.Containers[0].ReadinessProbe == nil || pod.Containers[0].ReadinessProbe.HTTPGet.Path != "/running" {
			t.Errorf("%s: no default readiness probe on the status port", target.Name)
		}

		kit.Eventually(t, 10*time.Second, target.Name+": app objects", func() error {
			nsObj := &corev1.Namespace{}
			if err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
				return err
			}
			if nsObj.Labels["istio-injection"] != "enabled" {
				return fmt.Errorf("namespace labels %v", nsObj.Labels)
			}
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "store-v1-env"}, cm); err != nil {
				return err
			}
			if cm.Data["MODE"] != "production" || cm.Labels[picchuv1alpha1.LabelTag] != "v1" || cm.Labels["config"] != "" {
				return fmt.Errorf("config copy %v labels %v", cm.Data, cm.Labels)
			}
			secret := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "store-v1-secrets"}, secret); err != nil {
				return err
			}
			if string(secret.Data["TOKEN"]) != "s3cret" {
				return fmt.Errorf("secret copy %v", secret.Data)
			}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, &corev1.ServiceAccount{}); err != nil {
				return err
			}
			// Its token Secret, as the original made for every app.
			token := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "service-account-token"}, token); err != nil {
				return err
			}
			if token.Type != corev1.SecretTypeServiceAccountToken || token.Annotations[corev1.ServiceAccountNameKey] != app {
				return fmt.Errorf("service-account-token of type %s for %q", token.Type, token.Annotations[corev1.ServiceAccountNameKey])
			}
			binding := &rbacv1.RoleBinding{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "store-external-metrics"}, binding); err != nil {
				return err
			}
			if binding.RoleRef.Name != "store-external-metrics" || binding.Subjects[0].Name != app {
				return fmt.Errorf("role binding %+v", binding)
			}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "store-external-metrics"}, &rbacv1.Role{}); err != nil {
				return err
			}
			svc := &corev1.Service{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, svc); err != nil {
				return err
			}
			if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[0].Port != 80 {
				return fmt.Errorf("service ports %+v", svc.Spec.Ports)
			}
			pdb := &policyv1.PodDisruptionBudget{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, pdb); err != nil {
				return err
			}
			if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.String() != "10%" {
				return fmt.Errorf("pdb %+v", pdb.Spec)
			}
			return nil
		})
	}
	rm := buildState(t, 10*time.Second, app, "v1", "deploying")
	if c := condition(rm, picchuv1alpha1.ConditionReconciling); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("deploying without Reconciling=True: %+v", c)
	}

	makeReady(t, env.Targets[0], app, "v1")
	start := time.Now()
	makeReady(t, env.Targets[1], app, "v1")
	// Deployed, then released at once: the first build of an app has no
	// other build to share traffic with, and its schedule is "always". The
	// sync period is 10 minutes, so only the remote ReplicaSet events can
	// bring this within the 10 s allowed (the reaction time itself is
	// measured by the benchmarks, not asserted here).
	rm = buildState(t, 10*time.Second, app, "v1", "released")
	t.Logf("deployed and released %v after the last ReplicaSet became ready (sync period 10m)", time.Since(start).Round(time.Millisecond))
	if st := rm.Status.Revisions[0]; st.Metrics.RevisionDeploySecondsInt == nil || st.ReleaseStartTimestamp == nil || st.PendingReleaseStartTimestamp == nil {
		t.Errorf("deploy latency and release stamps not recorded: %+v", st)
	}

	kit.Eventually(t, 5*time.Second, "v1 takes the traffic", func() error {
		rm = buildState(t, time.Second, app, "v1", "released")
		st := rm.Status.Revisions[0]
		if st.CurrentPercent != 100 || st.PeakPercent != 100 || rm.Status.Releasing == nil || rm.Status.Releasing.Tag != "v1" {
			return fmt.Errorf("status %+v releasing %+v", st, rm.Status.Releasing)
		}
		if c := condition(rm, picchuv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready %+v", c)
		}
		return nil
	})
	for _, target := range env.Targets {
		checkRouting(t, target, app, map[string]int32{"v1": 100})
	}
	st := rm.Status.Revisions[0]
	if st.DeployingStartTimestamp == nil || st.State.LastUpdated == nil || st.RevisionTimestamp == nil ||
		!st.ReleaseEligible || st.TTL != 86400 || st.Scale.Current != 2 || st.Scale.Desired != 2 {
		t.Errorf("v1 status %+v", st)
	}
	if len(rm.Status.Clusters) != 2 || !rm.Status.Clusters[0].Synced || !rm.Status.Clusters[1].Synced {
		t.Errorf("clusters %+v", rm.Status.Clusters)
	}
	kit.Eventually(t, 5*time.Second, "revision status mirrors the release", func() error {
		rev := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "store-v1"}, rev); err != nil {
			return err
		}
		if rev.Status.Summary != "production=released 100%" {
			return fmt.Errorf("summary %q", rev.Status.Summary)
		}
		return nil
	})
}

// TestReleaseManager_NoWritesWhenNothingChanged runs the release manager of
// a deployed app again and again: the target clusters get no write.
func TestReleaseManager_NoWritesWhenNothingChanged(t *testing.T) {
	ctx := context.Background()
	const app = "quiet"
	config(t, app, "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision(app, "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	// Released first (a nested wait fails the test on its own deadline,
	// so it must not be shorter than the release takes), then serving.
	buildState(t, 10*time.Second, app, "v1", "released")
	kit.Eventually(t, 10*time.Second, "quiet is ready and serving", func() error {
		rm := buildState(t, time.Second, app, "v1", "released")
		if c := condition(rm, picchuv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready %+v", c)
		}
		// The run that records the traffic applied the routes before.
		if rm.Status.Revisions[0].CurrentPercent != 100 {
			return fmt.Errorf("percent %d", rm.Status.Revisions[0].CurrentPercent)
		}
		return nil
	})

	writes, reads := targetWrites.count(), targetWrites.readCount()
	gets := deliveryRequests(t, "GET", "releasemanagers")
	runs := reconciles(t, "releasemanager")
	for i := range 5 {
		// The ReplicaSets' status moves, as a ReplicaSet controller's does
		// (new resourceVersions, the same spec), and an annotation change
		// makes the controller run: neither changes anything to write.
		for _, target := range env.Targets {
			churnStatus(t, target, app, "v1", i)
		}
		poke(t, app, i)
		kit.Eventually(t, 10*time.Second, "another run", func() error {
			if got := reconciles(t, "releasemanager"); got < runs+float64(i+1) {
				return fmt.Errorf("%v runs", got-runs)
			}
			return nil
		})
	}
	// An app of an earlier test may still be at work (a failed build
	// retried on a cluster that rejects it): its writes are not quiet's.
	if w := inNamespaceOrNone(app+"-production", targetWrites.since(writes)); len(w) != 0 {
		t.Errorf("%d writes to target clusters while nothing changed: %v", len(w), w)
	}
	// Runs read the target clusters' caches only; the Cluster controller's
	// health checks (GET /version, one per cluster and period, not per app)
	// are the only reads of their API servers. (A failed build of an
	// earlier test retried on a refusing cluster reads its own namespace.)
	for _, r := range inNamespaceOrNone(app+"-production", targetWrites.readsSince(reads)) {
		if !strings.HasPrefix(r, "GET ") || !strings.Contains(r, "/version?") {
			t.Errorf("read of a target cluster while nothing changed: %s", r)
		}
	}
	// Runs read their ReleaseManager from the cache.
	if n := deliveryRequests(t, "GET", "releasemanagers") - gets; n != 0 {
		t.Errorf("%v GETs of ReleaseManagers from the delivery API server in five runs, want 0", n)
	}
}

// TestReleaseManager_DeletingRevisions deletes an older build, then the last
// one: the first takes its ReplicaSet and config copies with it; the last,
// which serves, leaves the app in place until its ReleaseManager is deleted,
// which takes the app's namespace.
func TestReleaseManager_DeletingRevisions(t *testing.T) {
	ctx := context.Background()
	const app = "gone"
	config(t, app, "v1")
	config(t, app, "v2")
	v1, v2 := appRevision(app, "v1", env.Fleet), appRevision(app, "v2", env.Fleet)
	v1.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: "2026-11-01T10:00:00Z"}
	v2.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: "2026-11-02T10:00:00Z"}
	for _, rev := range []*picchuv1alpha1.Revision{v1, v2} {
		if err := env.Delivery.Client.Create(ctx, rev); err != nil {
			t.Fatal(err)
		}
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
		makeReady(t, target, app, "v2")
	}
	// The newer build takes the traffic; the older one never had any and
	// retires.
	buildState(t, 10*time.Second, app, "v2", "released")
	buildState(t, 10*time.Second, app, "v1", "retired")

	if err := env.Delivery.Client.Delete(ctx, v1); err != nil {
		t.Fatal(err)
	}
	ns := app + "-production"
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, target.Name+": v1 removed", func() error {
			for _, obj := range []client.Object{
				&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "v1"}},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gone-v1-env"}},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gone-v1-secrets"}},
			} {
				err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.GetName()}, obj)
				if !apierrors.IsNotFound(err) {
					return fmt.Errorf("%T %s still there (%v)", obj, obj.GetName(), err)
				}
			}
			return nil
		})
		for _, obj := range []client.Object{&appsv1.ReplicaSet{}, &corev1.ConfigMap{}} {
			name := "v2"
			if _, ok := obj.(*corev1.ConfigMap); ok {
				name = "gone-v2-env"
			}
			if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
				t.Errorf("%s: v2's %T went too: %v", target.Name, obj, err)
			}
		}
	}
	for _, target := range env.Targets {
		checkRouting(t, target, app, map[string]int32{"v2": 100})
	}
	kit.Eventually(t, 10*time.Second, "v1 forgotten", func() error {
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: app + "-production"}, rm); err != nil {
			return err
		}
		if len(rm.Status.Revisions) != 1 || rm.Status.Revisions[0].Tag != "v2" || rm.Status.Revisions[0].CurrentPercent != 100 {
			return fmt.Errorf("revisions %+v", rm.Status.Revisions)
		}
		return nil
	})

	// The last Revision goes while its build serves: Picchu does not take
	// the app down on its own (a GitOps tool may be replacing the
	// Revision); the ReleaseManager says so.
	if err := env.Delivery.Client.Delete(ctx, v2); err != nil {
		t.Fatal(err)
	}
	rmKey := client.ObjectKey{Namespace: env.Namespace, Name: app + "-production"}
	kit.Eventually(t, 10*time.Second, "orphaned, held by its traffic", func() error {
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := env.Delivery.Client.Get(ctx, rmKey, rm); err != nil {
			return err
		}
		c := condition(rm, picchuv1alpha1.ConditionOrphaned)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != picchuv1alpha1.ReasonServing {
			return fmt.Errorf("orphaned condition %+v", c)
		}
		return nil
	})
	for _, target := range env.Targets {
		nsObj := &corev1.Namespace{}
		if err := target.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil || !nsObj.DeletionTimestamp.IsZero() {
			t.Fatalf("%s: namespace %s of a serving app went: %v %v", target.Name, ns, err, nsObj.DeletionTimestamp)
		}
		checkRouting(t, target, app, map[string]int32{"v2": 100})
	}
	// A person removes the app by deleting its ReleaseManager.
	if err := env.Delivery.Client.Delete(ctx, &picchuv1alpha1.ReleaseManager{ObjectMeta: metav1.ObjectMeta{
		Namespace: rmKey.Namespace, Name: rmKey.Name}}); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		namespaceRemoved(t, target, ns)
	}
	kit.Eventually(t, 10*time.Second, "release manager gone", func() error {
		err := env.Delivery.Client.Get(ctx, rmKey, &picchuv1alpha1.ReleaseManager{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

// namespaceRemoved waits until ns is gone from target or being deleted.
func namespaceRemoved(t *testing.T, target *harness.Target, ns string) *corev1.Namespace {
	t.Helper()
	nsObj := &corev1.Namespace{}
	kit.Eventually(t, 10*time.Second, target.Name+": namespace removed", func() error {
		err := target.Client.Get(context.Background(), client.ObjectKey{Name: ns}, nsObj)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case !nsObj.DeletionTimestamp.IsZero():
			// No namespace controller runs here to finish the job.
			return nil
		}
		return fmt.Errorf("namespace %s is not being deleted", ns)
	})
	return nsObj
}

// TestReleaseManager_OrphanedAppWithoutTrafficGoesAfterGrace deletes the
// only Revision of an app that never took traffic: the app stays for the
// removal grace period, then leaves every cluster.
func TestReleaseManager_OrphanedAppWithoutTrafficGoesAfterGrace(t *testing.T) {
	ctx := context.Background()
	const app = "idle"
	config(t, app, "v1")
	v1 := appRevision(app, "v1", env.Fleet)
	v1.Spec.Targets[0].Release.Eligible = false
	if err := env.Delivery.Client.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	buildState(t, 10*time.Second, app, "v1", "deployed")
	if err := env.Delivery.Client.Delete(ctx, v1); err != nil {
		t.Fatal(err)
	}
	var since time.Time
	kit.Eventually(t, 10*time.Second, "orphaned, removal pending", func() error {
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: app + "-production"}, rm); err != nil {
			return err
		}
		c := condition(rm, picchuv1alpha1.ConditionOrphaned)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != picchuv1alpha1.ReasonRemovalPending {
			return fmt.Errorf("orphaned condition %+v", c)
		}
		since = c.LastTransitionTime.Time
		return nil
	})
	for _, target := range env.Targets {
		nsObj := namespaceRemoved(t, target, app+"-production")
		// Conditions and deletion stamps have whole seconds.
		if earliest := since.Add(removalGrace - time.Second); !nsObj.DeletionTimestamp.IsZero() && nsObj.DeletionTimestamp.Time.Before(earliest) {
			t.Errorf("%s: namespace deleted at %s, before the grace period ended (%s + %s)",
				target.Name, nsObj.DeletionTimestamp.Time, since, removalGrace)
		}
	}
}

// checkRouting checks the app's Istio objects on a target: one subset per
// deployed build, the release route's weights, header routes per build,
// the gateways of the public port, and the Sidecar.
func checkRouting(t *testing.T, target *harness.Target, app string, weights map[string]int32) {
	t.Helper()
	ctx := context.Background()
	ns := app + "-production"
	host := app + "." + ns + ".svc.cluster.local"
	kit.Eventually(t, 10*time.Second, target.Name+": routing of "+app, func() error {
		dr := &istionetworking.DestinationRule{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, dr); err != nil {
			return err
		}
		var subsets []string
		for _, s := range dr.Spec.Subsets {
			if s.Labels[picchuv1alpha1.LabelPodTag] != s.Name {
				return fmt.Errorf("subset %s selects %v", s.Name, s.Labels)
			}
			subsets = append(subsets, s.Name)
		}
		if dr.Spec.Host != host || len(subsets) != len(weights) {
			return fmt.Errorf("destination rule host %s subsets %v, want %d", dr.Spec.Host, subsets, len(weights))
		}
		vs := &istionetworking.VirtualService{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, vs); err != nil {
			return err
		}
		// The ports' hosts stay on the ingresses: in the mesh, the
		// Service's host alone.
		if !slices.Equal(vs.Spec.Gateways, []string{"mesh"}) || !slices.Equal(vs.Spec.Hosts, []string{host}) {
			return fmt.Errorf("mesh gateways %v, hosts %v", vs.Spec.Gateways, vs.Spec.Hosts)
		}
		ingress := &istionetworking.VirtualService{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app + "-ingress"}, ingress); err != nil {
			return err
		}
		if !slices.Equal(ingress.Spec.Gateways, []string{"istio-system/private", "istio-system/public"}) {
			return fmt.Errorf("ingress gateways %v", ingress.Spec.Gateways)
		}
		if !slices.Contains(ingress.Spec.Hosts, app+".example.com") || slices.Contains(ingress.Spec.Hosts, host) {
			return fmt.Errorf("ingress hosts %v", ingress.Spec.Hosts)
		}
		if fmt.Sprint(releaseWeights(ingress)) != fmt.Sprint(releaseWeights(vs)) {
			return fmt.Errorf("ingress weights %v, mesh weights %v", releaseWeights(ingress), releaseWeights(vs))
		}
		got := map[string]int32{}
		var names []string
		for _, route := range vs.Spec.Http {
			names = append(names, route.Name)
			if route.Name != "01_release-http" {
				continue
			}
			for _, d := range route.Route {
				if d.Destination.Host != host || d.Destination.Port.GetNumber() != 80 {
					return fmt.Errorf("destination %+v", d.Destination)
				}
				got[d.Destination.Subset] = d.Weight
			}
		}
		for tag, w := range weights {
			if w == 0 {
				delete(weights, tag)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(weights) {
			return fmt.Errorf("release weights %v, want %v (routes %v)", got, weights, names)
		}
		for tag := range weights {
			if !slices.Contains(names, "00_tagged-"+tag+"-http") {
				return fmt.Errorf("no header route for %s: %v", tag, names)
			}
		}
		sidecar := &istionetworking.Sidecar{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, sidecar); err != nil {
			return err
		}
		if len(sidecar.Spec.Egress) != 1 || !slices.Equal(sidecar.Spec.Egress[0].Hosts, []string{"istio-system/*"}) {
			return fmt.Errorf("sidecar egress %+v", sidecar.Spec.Egress)
		}
		return nil
	})
}

// TestReleaseManager_UnreachableClusterAndOtherFleets takes one cluster of
// the production fleet away: its apps report it in the Cluster's and the
// ReleaseManager's status while an app of another fleet deploys meanwhile;
// when the cluster returns, its objects converge.
func TestReleaseManager_UnreachableClusterAndOtherFleets(t *testing.T) {
	ctx := context.Background()
	away := env.Targets[1]
	if err := away.Proxy.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = away.Proxy.Start()
		}
	}()
	// A run of failed checks opens its breaker, within seconds. The check
	// that records it may find it HalfOpen rather than Open: an informer of
	// the cluster can be sending the breaker's probe at that moment.
	cl := readiness(t, away.Name, metav1.ConditionFalse, picchuv1alpha1.ReasonCircuitOpen)
	if h := cl.Status.Health; h == nil || (h.Breaker != "Open" && h.Breaker != "HalfOpen") || h.LastError == "" || h.RetryAt == nil {
		t.Errorf("status.health %+v, want the breaker open or probing, with its last error and next probe", h)
	}
	if c := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionStalled); c == nil || c.Reason != picchuv1alpha1.ReasonCircuitOpen {
		t.Errorf("Stalled %+v, want True (%s)", c, picchuv1alpha1.ReasonCircuitOpen)
	}

	// Another fleet, whose one cluster is the API server of target-0.
	other := &picchuv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "other-0", Namespace: env.Namespace, Labels: map[string]string{picchuv1alpha1.LabelFleet: "other"}},
		Spec:       *env.Targets[0].Cluster.Spec.DeepCopy(),
	}
	secret := &corev1.Secret{}
	if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.Targets[0].Name}, secret); err != nil {
		t.Fatal(err)
	}
	if err := env.Delivery.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: other.Name, Namespace: env.Namespace}, Data: secret.Data,
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.Delivery.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Delivery.Client.Delete(ctx, other) }()

	config(t, "cart", "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision("cart", "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	config(t, "search", "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision("search", "v1", "other")); err != nil {
		t.Fatal(err)
	}

	// The other fleet deploys all the way.
	makeReady(t, env.Targets[0], "search", "v1")
	buildState(t, 10*time.Second, "search", "v1", "released")

	// The production fleet deploys where it can and says where it cannot.
	replicaSet(t, env.Targets[0], "cart", "v1")
	makeReady(t, env.Targets[0], "cart", "v1")
	kit.Eventually(t, 10*time.Second, "cart reports "+away.Name, func() error {
		rm := buildState(t, time.Second, "cart", "v1", "deploying")
		var cs *picchuv1alpha1.ReleaseManagerClusterStatus
		for i := range rm.Status.Clusters {
			if rm.Status.Clusters[i].Name == away.Name {
				cs = &rm.Status.Clusters[i]
			}
		}
		if cs == nil || cs.Synced || cs.Message == "" {
			return fmt.Errorf("cluster status %+v", rm.Status.Clusters)
		}
		c := condition(rm, picchuv1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != picchuv1alpha1.ReasonClustersUnavailable {
			return fmt.Errorf("ready %+v", c)
		}
		return nil
	})
	if err := away.Client.Get(ctx, client.ObjectKey{Namespace: "cart-production", Name: "v1"}, &appsv1.ReplicaSet{}); !apierrors.IsNotFound(err) {
		t.Fatalf("cart reached the cluster that was away: %v", err)
	}

	if err := away.Proxy.Start(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	readiness(t, away.Name, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)
	makeReady(t, away, "cart", "v1")
	buildState(t, 10*time.Second, "cart", "v1", "released")
	checkRouting(t, away, "cart", map[string]int32{"v1": 100})
}

// TestReleaseManager_FollowsAClusterToANewServer points a Cluster at a new
// address: the next build reaches it there, with no restart.
func TestReleaseManager_FollowsAClusterToANewServer(t *testing.T) {
	ctx := context.Background()
	target := env.Targets[0]
	readiness(t, target.Name, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)
	config(t, "blog", "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision("blog", "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	replicaSet(t, target, "blog", "v1")

	// Move the cluster from its proxy to the API server's own address,
	// and take the proxy away: only the new address works.
	if err := target.Proxy.Stop(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = target.Proxy.Start() }()
	cl := target.Cluster.DeepCopy()
	var oldServer string
	if err := kit.Update(ctx, env.Delivery.Client, cl, func(cl *picchuv1alpha1.Cluster) {
		oldServer = cl.Spec.Config.Server
		cl.Spec.Config.Server = target.Config.Host
	}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := kit.Update(ctx, env.Delivery.Client, cl, func(cl *picchuv1alpha1.Cluster) {
			cl.Spec.Config.Server = oldServer
		}); err != nil {
			t.Errorf("restoring %s: %v", target.Name, err)
		}
	}()
	readiness(t, target.Name, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)

	config(t, "blog", "v2")
	if err := env.Delivery.Client.Create(ctx, appRevision("blog", "v2", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	replicaSet(t, target, "blog", "v2")
	makeReady(t, target, "blog", "v2")
	makeReady(t, env.Targets[1], "blog", "v2")
	// The runs that failed while the old address was gone back off for a
	// few seconds; on a loaded machine that alone can take 10 s.
	buildState(t, 30*time.Second, "blog", "v2", "released")
}

// TestReleaseManager_HotStandbyAndScalingFactor makes one cluster a hot
// standby with a scaling factor: it gets the build, scaled by its factor, but
// replicas are divided over the live cluster only, and the build is deployed
// once the live cluster runs it.
func TestReleaseManager_HotStandbyAndScalingFactor(t *testing.T) {
	ctx := context.Background()
	live, standby := env.Targets[0], env.Targets[1]
	cl := standby.Cluster.DeepCopy()
	var before *picchuv1alpha1.ClusterSpec
	factor := "1.5"
	if err := kit.Update(ctx, env.Delivery.Client, cl, func(cl *picchuv1alpha1.Cluster) {
		before = cl.Spec.DeepCopy()
		cl.Spec.HotStandby, cl.Spec.ScalingFactorString = true, &factor
	}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := kit.Update(ctx, env.Delivery.Client, cl, func(cl *picchuv1alpha1.Cluster) {
			cl.Spec = *before
		}); err != nil {
			t.Errorf("restoring %s: %v", standby.Name, err)
		}
	}()

	config(t, "wiki", "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision("wiki", "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	// scale.default 2 over one live cluster: 2 there, 2 × 1.5 on the standby.
	for target, want := range map[*harness.Target]int32{live: 2, standby: 3} {
		if got := *replicaSet(t, target, "wiki", "v1").Spec.Replicas; got != want {
			t.Errorf("%s: %d replicas, want %d", target.Name, got, want)
		}
	}
	makeReady(t, live, "wiki", "v1")
	rm := buildState(t, 10*time.Second, "wiki", "v1", "released")
	for _, cs := range rm.Status.Clusters {
		if cs.Live != (cs.Name == live.Name) || !cs.Synced {
			t.Errorf("cluster status %+v", cs)
		}
	}
}

// TestReleaseManager_FaultInjector adds a FaultInjector for an app: its
// fault appears on the app's routes of that port in every cluster, and
// goes when the FaultInjector does.
func TestReleaseManager_FaultInjector(t *testing.T) {
	ctx := context.Background()
	config(t, "chaos", "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision("chaos", "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, "chaos", "v1")
	}
	buildState(t, 10*time.Second, "chaos", "v1", "released")
	fi := &picchuv1alpha1.FaultInjector{
		ObjectMeta: metav1.ObjectMeta{Name: "chaos-aborts", Namespace: env.Namespace, Labels: map[string]string{picchuv1alpha1.LabelApp: "chaos"}},
		Spec: picchuv1alpha1.FaultInjectorSpec{HTTPPortFaults: []picchuv1alpha1.HTTPPortFault{{
			PortSelector: &picchuv1alpha1.PortSelector{Number: 80},
			Fault: &picchuv1alpha1.HTTPFaultInjection{Abort: &picchuv1alpha1.FaultAbort{
				HTTPStatus: 503, Percentage: &picchuv1alpha1.Percent{Value: 50},
			}},
		}}},
	}
	if err := env.Delivery.Client.Create(ctx, fi); err != nil {
		t.Fatal(err)
	}
	aborts := func(target *harness.Target) (map[string]int32, error) {
		vs := &istionetworking.VirtualService{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: "chaos-production", Name: "chaos"}, vs); err != nil {
			return nil, err
		}
		out := map[string]int32{}
		for _, r := range vs.Spec.Http {
			if r.Fault != nil && r.Fault.Abort != nil {
				out[r.Name] = r.Fault.Abort.GetHttpStatus()
			}
		}
		return out, nil
	}
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, target.Name+": aborts on port 80's routes", func() error {
			got, err := aborts(target)
			if err != nil {
				return err
			}
			want := map[string]int32{"00_tagged-v1-http": 503, "01_release-http": 503}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("aborts %v, want %v", got, want)
			}
			return nil
		})
	}
	if err := env.Delivery.Client.Delete(ctx, fi); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, target.Name+": aborts gone", func() error {
			got, err := aborts(target)
			if err != nil {
				return err
			}
			if len(got) != 0 {
				return fmt.Errorf("aborts %v", got)
			}
			return nil
		})
	}
}

// releaseWeights are the weights by subset of vs's route "01_release-http".
func releaseWeights(vs *istionetworking.VirtualService) map[string]int32 {
	out := map[string]int32{}
	for _, route := range vs.Spec.Http {
		if route.Name != "01_release-http" {
			continue
		}
		for _, d := range route.Route {
			out[d.Destination.Subset] = d.Weight
		}
	}
	return out
}

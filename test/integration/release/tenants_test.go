package release_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// teamB is a second delivery namespace, another team's, with its own
// Clusters for the same target clusters (registered in setup): the two
// teams share the targets and the one Prometheus.
const teamB = "team-b"

// registerTeamB registers every target of the suite in teamB, with the
// same credentials, as a second team's platform admins would.
func registerTeamB(ctx context.Context) error {
	c := env.Delivery.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamB}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", teamB, err)
	}
	for _, t := range env.Targets {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: t.Name}, secret); err != nil {
			return fmt.Errorf("reading the Secret of %s: %w", t.Name, err)
		}
		copied := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: t.Name}, Data: secret.Data}
		cluster := &picchuv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: t.Name, Labels: t.Cluster.Labels},
			Spec:       *t.Cluster.Spec.DeepCopy(),
		}
		for _, obj := range []client.Object{copied, cluster} {
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("registering %s in %s: %w", t.Name, teamB, err)
			}
		}
	}
	return nil
}

// TestTenants_AnotherTeamCanNeitherFailNorPassABuild: two teams, in two
// delivery namespaces, each have an app named tenant (A's in target
// production, B's in target staging) on the same clusters, and reuse
// their tags; one real Prometheus evaluates both teams' rules.
//   - B's v2 serves requests: its SLO recording rules write
//     tenant:availability:total for tag v2. A's v2 serves none: it must
//     hold at its canary for want of evidence, not pass on B's requests.
//   - B's v3 adds an alert rule firing for tag v2, labelled as SLO alerts
//     are (slo, app tenant, tag v2), and one whose expression writes app
//     and tag: neither fails A's v2, which, once it serves requests of
//     its own, is released while they fire.
//   - A's own canary alert still fails A's v3, and its traffic goes back
//     to v2.
func TestTenants_AnotherTeamCanNeitherFailNorPassABuild(t *testing.T) {
	ctx := context.Background()
	const app = "tenant"
	const canary = 2 * time.Second
	teamA := env.Apps()
	b := kit.Apps{Client: env.Delivery.Client, Namespace: teamB, Fleet: env.Fleet}
	traffic.Set(app, "v1", 50, 0)
	create(t, build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond})
	state(t, 30*time.Second, app, "v1", "released")

	// B's v2 serves requests, counted by its own SLO under A's metric name.
	traffic.Set("tenant-b", "v2", 50, 0)
	bRevision := func(tag string, commit int, rules []monitoringv1.Rule) *picchuv1alpha1.Revision {
		rev := b.Revision(app, tag, kit.Commit(commit), kit.Geometric(10, 2, 300*time.Millisecond), kit.Target(func(tg *picchuv1alpha1.RevisionTarget) {
			tg.Name = "staging"
			tg.Ports[0].Hosts = []string{"tenant.staging.example.com"}
			tg.ServiceLevelObjectives = []picchuv1alpha1.ServiceLevelObjective{{
				Name: "availability", Enabled: true, ObjectivePercentString: "99.9",
				ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{
					TagKey:     "destination_version",
					TotalQuery: `sum by (destination_version) (istio_requests_total{reporter="destination",destination_app="tenant-b"})`,
					ErrorQuery: `sum by (destination_version) (istio_requests_total{reporter="destination",destination_app="tenant-b",response_code=~"5.."})`,
				},
			}}
			tg.AlertRules = rules
		}))
		if err := env.Delivery.Client.Create(ctx, rev); err != nil {
			t.Fatalf("creating %s/%s: %v", teamB, rev.Name, err)
		}
		return rev
	}
	bRevision("v2", 2, nil)
	kit.Eventually(t, 30*time.Second, "B's v2 counted in Prometheus", func() error {
		return promHas(ctx, `tenant:availability:total{tag="v2"} > 0`)
	})

	// A's v2 serves nothing: it holds at its canary.
	create(t, build{app: app, tag: "v2", commit: 3, delay: 300 * time.Millisecond, canary: canary})
	state(t, 30*time.Second, app, "v2", "canarying")
	kit.Eventually(t, 30*time.Second, "A's v2 held for want of its own requests", func() error {
		rm, err := teamA.ReleaseManager(ctx, app)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionCanaryEvidence)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "NoTraffic" || !strings.Contains(c.Message, "v2") {
			return fmt.Errorf("CanaryEvidence %+v", c)
		}
		return nil
	})
	canaryTimeOver(t, app, "v2", canary)
	state(t, time.Second, app, "v2", "canarying")

	// B's v3 fires alerts for tag v2, as SLO alerts are labelled.
	bRevision("v3", 4, []monitoringv1.Rule{
		{Alert: "tenant_b_broken", Expr: intstr.FromString("vector(1)"), Labels: map[string]string{"slo": "true", "app": app, "tag": "v2"}},
		{Alert: "tenant_b_forged", Expr: intstr.FromString(`label_replace(label_replace(vector(1), "app", "tenant", "", ""), "tag", "v2", "", "")`),
			Labels: map[string]string{"slo": "true"}},
	})
	kit.Eventually(t, 30*time.Second, "B's alerts fire in Prometheus", func() error {
		return promHas(ctx, `count(ALERTS{alertname=~"tenant_b_.*",tag="v2",alertstate="firing"}) == 2`)
	})
	// A's v2, now serving healthy requests of its own, passes its canary
	// and is released while B's alerts fire: they are not A's.
	traffic.Set(app, "v2", 50, 0)
	if st := state(t, 60*time.Second, app, "v2", "released"); len(st.TriggeredAlerts) > 0 {
		t.Fatalf("B's alerts reached A's v2: %v", st.TriggeredAlerts)
	}
	if err := promHas(ctx, `count(ALERTS{alertname=~"tenant_b_.*",tag="v2",alertstate="firing"}) == 2`); err != nil {
		t.Fatalf("B's alerts stopped firing before A's v2 was released: %v", err)
	}

	// A's own canary alert still fails A's v3, and its traffic goes back
	// to v2.
	traffic.Set(app, "v3", 20, 0.5)
	create(t, build{app: app, tag: "v3", commit: 5, delay: 300 * time.Millisecond, canary: time.Minute})
	st := state(t, 60*time.Second, app, "v3", "failed")
	if len(st.TriggeredAlerts) != 1 || st.TriggeredAlerts[0] != "availability_canary" {
		t.Errorf("A's v3 failed on %v, want its own availability_canary", st.TriggeredAlerts)
	}
	routes(t, app, map[string]int32{"v2": 100})
}

// promHas waits for nothing: it says whether query returns a series now.
func promHas(ctx context.Context, query string) error {
	series, err := alerts.Series(ctx, query)
	if err != nil {
		return err
	}
	if len(series) == 0 {
		return fmt.Errorf("%s: nothing yet", query)
	}
	return nil
}

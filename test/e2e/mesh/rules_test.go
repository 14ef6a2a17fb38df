package mesh_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/kit"
)

// recordingLoader is a RuleLoader that records the groups of each call.
type recordingLoader struct {
	mu    sync.Mutex
	calls [][]monitoringv1.RuleGroup
}

func (l *recordingLoader) SetRules(_ context.Context, groups []monitoringv1.RuleGroup) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, groups)
	return nil
}

// last returns the number of calls and the groups of the last one.
func (l *recordingLoader) last() (int, []monitoringv1.RuleGroup) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 0 {
		return 0, nil
	}
	return len(l.calls), l.calls[len(l.calls)-1]
}

// exprs returns the expression of the first rule of each group, by group name.
func exprs(groups []monitoringv1.RuleGroup) map[string]string {
	out := map[string]string{}
	for _, g := range groups {
		if len(g.Rules) > 0 {
			out[g.Name] = g.Rules[0].Expr.String()
		}
	}
	return out
}

// prometheusRule is a PrometheusRule with one recording rule per group,
// whose expression exprs gives by group name.
func prometheusRule(namespace, name string, exprs map[string]string) *monitoringv1.PrometheusRule {
	pr := &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	for group, expr := range exprs {
		pr.Spec.Groups = append(pr.Spec.Groups, monitoringv1.RuleGroup{
			Name:  group,
			Rules: []monitoringv1.Rule{{Record: "mesh_test:" + group, Expr: intstr.FromString(expr)}},
		})
	}
	slices.SortFunc(pr.Spec.Groups, func(a, b monitoringv1.RuleGroup) int { return strings.Compare(a.Name, b.Name) })
	return pr
}

// createRule creates pr, and its namespace if need be, on c, and deletes it
// when the test ends.
func createRule(t *testing.T, c client.Client, pr *monitoringv1.PrometheusRule) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pr.Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", pr.Namespace, err)
	}
	if err := c.Create(ctx, pr); err != nil {
		t.Fatalf("creating PrometheusRule %s/%s: %v", pr.Namespace, pr.Name, err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), pr); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting PrometheusRule %s/%s: %v", pr.Namespace, pr.Name, err)
		}
	})
}

// TestMesh_RuleSync checks that the union of the clusters' rules is loaded,
// the first cluster winning a group both have, and loaded again only when
// it changes.
func TestMesh_RuleSync(t *testing.T) {
	first, second := env.Targets[0], env.Targets[1]
	createRule(t, first.Client, prometheusRule("shop-production", "shop-slo", map[string]string{"slo": "vector(1)"}))
	createRule(t, second.Client, prometheusRule("shop-production", "shop-slo", map[string]string{
		"slo": "vector(2)", "extra": "vector(4)",
	}))
	createRule(t, second.Client, prometheusRule("cart-production", "cart-slo", map[string]string{"slo": "vector(5)"}))

	loader := &recordingLoader{}
	counted := map[string]*flakyClient{}
	m, _, _ := newMesh(t, mesh.Options{
		Clusters: clusters(func(c client.Client) client.Client {
			f := &flakyClient{Client: c}
			for _, target := range env.Targets {
				if target.Client == c {
					counted[target.Name] = f
				}
			}
			return f
		}),
		Interval: 20 * time.Millisecond,
		Rules:    loader,
	})
	runMesh(t, m)

	want := map[string]string{
		"cart-production/cart-slo/slo":   "vector(5)",
		"shop-production/shop-slo/extra": "vector(4)",
		"shop-production/shop-slo/slo":   "vector(1)",
	}
	waitRules(t, loader, want)
	calls, _ := loader.last()

	// Nothing changes for 5 more reads of each cluster: no more loads.
	before := map[string]int64{}
	for name, c := range counted {
		before[name] = c.ruleLists.Load()
	}
	kit.Eventually(t, testTimeout, "5 more reads of the rules", func() error {
		for name, c := range counted {
			if n := c.ruleLists.Load(); n < before[name]+5 {
				return fmt.Errorf("%s: rules listed %d times, %d before", name, n, before[name])
			}
		}
		return nil
	})
	if n, _ := loader.last(); n != calls {
		t.Errorf("rules loaded %d times, want %d: nothing changed", n, calls)
	}

	pr := &monitoringv1.PrometheusRule{}
	if err := first.Client.Get(context.Background(), client.ObjectKey{Namespace: "shop-production", Name: "shop-slo"}, pr); err != nil {
		t.Fatal(err)
	}
	pr.Spec.Groups[0].Rules[0].Expr = intstr.FromString("vector(3)")
	if err := first.Client.Update(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	want["shop-production/shop-slo/slo"] = "vector(3)"
	waitRules(t, loader, want)
	if n, _ := loader.last(); n != calls+1 {
		t.Errorf("rules loaded %d times, want %d: one change", n, calls+1)
	}
}

// waitRules waits until the last groups loaded are want, by name.
func waitRules(t *testing.T, loader *recordingLoader, want map[string]string) {
	t.Helper()
	kit.Eventually(t, testTimeout, "the union of the rules loaded", func() error {
		n, groups := loader.last()
		if got := exprs(groups); n == 0 || !mapsEqual(got, want) {
			return fmt.Errorf("%d loads, the last of %v, want %v", n, got, want)
		}
		return nil
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

var testGroups = []monitoringv1.RuleGroup{{
	Name:  "shop-production/shop-slo/slo",
	Rules: []monitoringv1.Rule{{Alert: "ShopErrors", Expr: intstr.FromString("vector(1) > 0")}},
}}

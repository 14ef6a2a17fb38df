package plugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
	"github.com/medium/picchu/forecast"
	"github.com/medium/picchu/test/kit"
)

// planNow is the clock of the plan tests: a Monday 10:00 in Los Angeles,
// after every object the tests create.
var planNow = time.Date(2031, 1, 6, 18, 0, 0, 0, time.UTC)

// wavesFleet creates the Clusters of fleet production in ns, east and
// west, by region, and app shop's v1 released at 100 % on both.
func wavesFleet(t *testing.T, ns string) {
	t.Helper()
	regionClusters(t, ns)
	create(t, shop(ns, "v1"))
	rm := manager(ns, "shop", "production")
	rm.Status.Revisions = []picchuv1alpha1.ReleaseManagerRevisionStatus{{
		Tag: "v1", State: state("released", time.Hour), CurrentPercent: 100, PeakPercent: 100, ReleaseEligible: true,
		Clusters: clusters(100, time.Hour, "east", "west"),
	}}
	createWithStatus(t, rm)
}

// regionClusters creates the Clusters of fleet production in ns, east and
// west, labelled by region.
func regionClusters(t *testing.T, ns string) {
	t.Helper()
	for _, region := range []string{"east", "west"} {
		create(t, &picchuv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: region,
				Labels: map[string]string{picchuv1alpha1.LabelFleet: "production", "region": region}},
			Spec: picchuv1alpha1.ClusterSpec{Enabled: true, Config: &picchuv1alpha1.ClusterConfig{
				Server: "https://" + region + ".example", CertificateAuthorityData: []byte("ca")}},
		})
	}
}

// shop is a build of app shop that releases in two waves, east then west
// after a bake of 10 minutes, from 25 % doubling every minute.
func shop(ns, tag string) *picchuv1alpha1.Revision {
	return kit.Apps{Namespace: ns, Fleet: "production"}.Revision("shop", tag, kit.Geometric(25, 2, time.Minute),
		kit.Target(func(t *picchuv1alpha1.RevisionTarget) {
			t.Release.Waves = []picchuv1alpha1.ReleaseWave{
				{Name: "east", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}, Bake: &metav1.Duration{Duration: 10 * time.Minute}},
				{Name: "west"},
			}
		}))
}

// writeRevision writes rev as YAML in the test's directory.
func writeRevision(t *testing.T, rev *picchuv1alpha1.Revision) string {
	t.Helper()
	rev.APIVersion, rev.Kind = picchuv1alpha1.GroupVersion.String(), "Revision"
	data, err := yaml.Marshal(rev)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "revision.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPlan_ForecastsABuildBeforeItIsApplied forecasts v2 of shop from a
// file, against the fleet the API server holds, then once v2 is applied:
// both forecasts are the same, and -o json says the same as the text.
func TestPlan_ForecastsABuildBeforeItIsApplied(t *testing.T) {
	ns := newNamespace(t)
	wavesFleet(t, ns)
	o := plugin.Options{Now: func() time.Time { return planNow }}
	file := writeRevision(t, shop(ns, "v2"))
	before := kubectlPicchuWith(t, o, "plan", "-f", file)
	if before.err != nil {
		t.Fatalf("kubectl picchu plan -f: %v\n%s", before.err, before.errOut)
	}
	golden(t, "plan", before.out)
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "shop-v2"}, &picchuv1alpha1.Revision{}); err == nil {
		t.Error("kubectl picchu plan -f created the Revision")
	}

	create(t, shop(ns, "v2"))
	after := kubectlPicchuWith(t, o, "plan", "shop", "-n", ns)
	if after.err != nil || after.out != before.out {
		t.Errorf("kubectl picchu plan shop once v2 is applied: err %v, output\n%s\nwant the forecast made before:\n%s", after.err, after.out, before.out)
	}
	asJSON := kubectlPicchuWith(t, o, "plan", "shop", "-n", ns, "--tag", "v2", "-o", "json")
	var got []forecast.Forecast
	if err := json.Unmarshal([]byte(asJSON.out), &got); err != nil || asJSON.err != nil {
		t.Fatalf("kubectl picchu plan -o json: err %v, %v:\n%s", asJSON.err, err, asJSON.out)
	}
	// Released in east at +2m, baked until +12m, released in west at +14m.
	want := planNow.Add(14 * time.Minute)
	if len(got) != 1 || got[0].Outcome != forecast.Released || got[0].Finish == nil || !got[0].Finish.Round(time.Second).Equal(want) {
		t.Errorf("kubectl picchu plan -o json = %+v, want v2 released at %s", got, want)
	}
}

// TestPlan_ARevisionTheAPIServerRefusesIsRefused checks that the forecast
// of a Revision the API server would refuse is its refusal, naming the field.
func TestPlan_ARevisionTheAPIServerRefusesIsRefused(t *testing.T) {
	ns := newNamespace(t)
	wavesFleet(t, ns)
	rev := shop(ns, "v2")
	rev.Spec.Targets[0].Release.Max = -5
	res := kubectlPicchuWith(t, plugin.Options{Now: func() time.Time { return planNow }}, "plan", "-f", writeRevision(t, rev))
	t.Logf("refused: %v", res.err)
	if res.err == nil || !strings.Contains(res.err.Error(), "spec.targets[0].release.max") {
		t.Errorf("kubectl picchu plan -f of a Revision with release.max -5: err %v, output\n%s\nwant the API server's refusal naming the field", res.err, res.out)
	}
	if res.out != "" {
		t.Errorf("printed a forecast of a refused Revision:\n%s", res.out)
	}
}

// TestPlan_AnAppsFirstBuild forecasts the first build of an app the
// namespace has nothing of: it takes all the traffic of every cluster at
// once, in every wave, and is released once west's bake has passed.
func TestPlan_AnAppsFirstBuild(t *testing.T) {
	ns := newNamespace(t)
	regionClusters(t, ns)
	res := kubectlPicchuWith(t, plugin.Options{Now: func() time.Time { return planNow }}, "plan", "-f", writeRevision(t, shop(ns, "v1")), "-o", "json")
	var got []forecast.Forecast
	if err := json.Unmarshal([]byte(res.out), &got); err != nil || res.err != nil {
		t.Fatalf("kubectl picchu plan -f of a first build: err %v, %v:\n%s%s", res.err, err, res.out, res.errOut)
	}
	bakeEnd := planNow.Add(10 * time.Minute)
	if len(got) != 1 || got[0].State != "new" || got[0].Outcome != forecast.Released || got[0].Finish == nil ||
		got[0].Finish.Sub(bakeEnd).Abs() > time.Second {
		t.Fatalf("forecast of a first build: %+v, want new, released at the end of west's bake", got)
	}
	steps := got[0].Steps()
	for _, s := range steps {
		if s.Percent != 100 || s.At.Sub(planNow) > time.Second {
			t.Errorf("a first build's step %+v, want 100 %% at once", s)
		}
	}
	if len(steps) != 2 {
		t.Errorf("%d steps, want one per cluster", len(steps))
	}
}

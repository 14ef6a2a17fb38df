package releasemanager

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/forecast"
)

var updateForecasts = flag.Bool("update-forecasts", false, "rewrite testdata/forecasts/*.txt from the forecasts made")

// forecastCase is a testdata/forecasts/*.yaml: what the delivery cluster
// holds of an app in a target, and when the forecast is made.
type forecastCase struct {
	Now       time.Time                           `json:"now"`
	Namespace string                              `json:"namespace"`
	App       string                              `json:"app"`
	Target    string                              `json:"target"`
	Fleet     string                              `json:"fleet"`
	Tag       string                              `json:"tag,omitempty"`
	Status    picchuv1alpha1.ReleaseManagerStatus `json:"status,omitempty"`
	Revisions []picchuv1alpha1.Revision           `json:"revisions"`
	Clusters  []picchuv1alpha1.Cluster            `json:"clusters"`
}

func (c forecastCase) input() ForecastInput {
	rm := &picchuv1alpha1.ReleaseManager{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: picchuv1alpha1.ReleaseManagerName(c.App, c.Target)},
		Spec:       picchuv1alpha1.ReleaseManagerSpec{App: c.App, Target: c.Target, Fleet: c.Fleet},
		Status:     c.Status,
	}
	for i := range c.Revisions {
		c.Revisions[i].Namespace = c.Namespace
	}
	for i := range c.Clusters {
		c.Clusters[i].Namespace = c.Namespace
		c.Clusters[i].Labels = map[string]string{picchuv1alpha1.LabelFleet: c.Fleet}
		for k, v := range c.Clusters[i].Annotations {
			// Labels are given as annotations "label/<key>" in the cases,
			// beside the fleet's.
			if key, ok := strings.CutPrefix(k, "label/"); ok {
				c.Clusters[i].Labels[key] = v
			}
		}
	}
	return ForecastInput{ReleaseManager: rm, Revisions: c.Revisions, Clusters: c.Clusters, Tag: c.Tag, Now: c.Now}
}

// loadForecastCase reads testdata/forecasts/<name>.yaml.
func loadForecastCase(tb testing.TB, name string) forecastCase {
	tb.Helper()
	path := filepath.Join("testdata", "forecasts", name+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var c forecastCase
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return c
}

// TestForecast_Goldens forecasts each case of testdata/forecasts and
// compares it, as kubectl picchu plan prints it, with its .txt.
func TestForecast_Goldens(t *testing.T) {
	cases, err := filepath.Glob("testdata/forecasts/*.yaml")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			f, err := Forecast(loadForecastCase(t, name).input())
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := f.WriteText(&got); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(path, ".yaml") + ".txt"
			if *updateForecasts {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./controllers/releasemanager -run TestForecast_Goldens -update-forecasts)", err)
			}
			if got.String() != string(want) {
				t.Errorf("forecast of %s differs from %s:\n%s", name, golden, got.String())
			}
			if _, err := json.Marshal(f); err != nil {
				t.Errorf("the forecast does not marshal: %v", err)
			}
			if f.Outcome == forecast.Released && f.Finish == nil {
				t.Error("released with no finish")
			}
		})
	}
}

// TestForecastFinish_RecordedWhenTheReleaseStartsAndWhenAHoldChanges runs
// the first run of testdata/forecasts/geometric.yaml's release: v2 starts
// its ramp, and status.releasing.forecastFinish is the forecast's finish.
// A run that changes nothing that holds v2 carries the recorded finish
// over (no new forecast, no write); a pause makes a new forecast, which
// has no finish.
func TestForecastFinish_RecordedWhenTheReleaseStartsAndWhenAHoldChanges(t *testing.T) {
	c := loadForecastCase(t, "geometric")
	sim, err := newSimulation(c.input())
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Calendar: sim.cal}
	// Runs as the forecast makes them, until v2 takes traffic (it deploys first).
	now := c.Now
	var s *snapshot
	var before *picchuv1alpha1.ReleaseManagerStatus
	var after picchuv1alpha1.ReleaseManagerStatus
	for run := 0; after.Releasing == nil || after.Releasing.Tag != "v2"; run++ {
		if run > 10 {
			t.Fatalf("v2 takes no traffic after %d runs: %+v", run, after.Releasing)
		}
		before = sim.rm.Status.DeepCopy()
		var next time.Duration
		s, next = sim.run(now)
		after, now = *sim.rm.Status.DeepCopy(), now.Add(next)
		r.forecastFinish(s, before, &after)
	}
	want := c.Now.Add(2 * time.Minute)
	if after.Releasing == nil || after.Releasing.Tag != "v2" || after.Releasing.ForecastFinish == nil || !after.Releasing.ForecastFinish.Time.Equal(want) {
		t.Fatalf("status.releasing %+v, want v2 forecast to finish at %s", after.Releasing, want)
	}

	// The next run, 30 s later, changes nothing that holds v2: the
	// recorded finish stays, even one another forecast would not make.
	recorded := metav1.NewTime(want.Add(time.Hour))
	before = after.DeepCopy()
	before.Releasing.ForecastFinish = &recorded
	next := *after.DeepCopy()
	next.Releasing.ForecastFinish = nil
	s.now = s.now.Add(30 * time.Second)
	r.forecastFinish(s, before, &next)
	if next.Releasing.ForecastFinish == nil || !next.Releasing.ForecastFinish.Equal(&recorded) {
		t.Errorf("forecastFinish %v after a run that changed no hold, want %s carried over", next.Releasing.ForecastFinish, recorded)
	}

	// Paused: a new forecast, held with no end, so no finish.
	v2 := s.incarnation("v2")
	v2.revision.Annotations = map[string]string{picchuv1alpha1.AnnotationPause: ""}
	paused := *after.DeepCopy()
	paused.Releasing.ForecastFinish = nil
	statusOfTag(paused, "v2").Paused = ptr.To(picchuv1alpha1.NewTimestamp(s.now))
	r.forecastFinish(s, before, &paused)
	if paused.Releasing.ForecastFinish != nil {
		t.Errorf("forecastFinish %s once v2 is paused, want none", paused.Releasing.ForecastFinish)
	}
}

// BenchmarkForecast forecasts each case of testdata/forecasts: the time of
// one forecast, which the operator makes when a release starts and when
// what holds it changes.
func BenchmarkForecast(b *testing.B) {
	for _, name := range []string{"geometric", "waves", "humane-weekend-holiday"} {
		in := loadForecastCase(b, name).input()
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Forecast(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

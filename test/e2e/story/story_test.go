package story

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func TestManifest_SamplesAreTheStorysBuilds(t *testing.T) {
	var commits []time.Time
	for _, tag := range Tags {
		rev, err := Manifest(SamplesDir(), SampleApp, tag)
		if err != nil {
			t.Fatal(err)
		}
		if rev.Name != "demo-"+tag || rev.Spec.App.Name != "demo" || rev.Spec.App.Tag != tag ||
			rev.Labels[picchuv1alpha1.LabelApp] != "demo" || rev.Spec.App.Image != "registry.example/demo:"+tag {
			t.Errorf("%s: name %s app %s tag %s label %q image %s", tag, rev.Name, rev.Spec.App.Name, rev.Spec.App.Tag,
				rev.Labels[picchuv1alpha1.LabelApp], rev.Spec.App.Image)
		}
		at, err := time.Parse(time.RFC3339, rev.Annotations[picchuv1alpha1.AnnotationGitCommitterTimestamp])
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		commits = append(commits, at)
		target := rev.Spec.Targets[0]
		if len(target.Ports) < 2 || target.Canary.Percent == 0 || len(target.ServiceLevelObjectives) == 0 ||
			target.Scale.TargetCPUUtilizationPercentage == nil {
			t.Errorf("%s is not realistic: ports %d, canary %+v, SLOs %d, CPU target %v", tag,
				len(target.Ports), target.Canary, len(target.ServiceLevelObjectives), target.Scale.TargetCPUUtilizationPercentage)
		}
	}
	for i := 1; i < len(commits); i++ {
		if !commits[i].After(commits[i-1]) {
			t.Errorf("%s's commit %s is not newer than %s's %s", Tags[i], commits[i], Tags[i-1], commits[i-1])
		}
	}
}

func TestManifest_RenamesTheApp(t *testing.T) {
	rev, err := Manifest(SamplesDir(), "shop", "v2")
	if err != nil {
		t.Fatal(err)
	}
	sli := rev.Spec.Targets[0].ServiceLevelObjectives[0].ServiceLevelIndicator
	if rev.Name != "shop-v2" || rev.Spec.App.Name != "shop" || rev.Labels[picchuv1alpha1.LabelApp] != "shop" ||
		!strings.Contains(sli.TotalQuery, `destination_app="shop"`) || strings.Contains(sli.ErrorQuery, "demo") {
		t.Errorf("not renamed: %s %s %v %q %q", rev.Name, rev.Spec.App.Name, rev.Labels, sli.TotalQuery, sli.ErrorQuery)
	}
}

func TestManifest_RejectsUnknownFields(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/revision-v1.yaml", "apiVersion: picchu.medium.engineering/v1alpha1\nkind: Revision\nspec:\n  app: {nmae: demo}\n")
	if _, err := Manifest(dir, SampleApp, "v1"); err == nil || !strings.Contains(err.Error(), "nmae") {
		t.Errorf("got %v, want an error naming the unknown field", err)
	}
}

func TestDelays(t *testing.T) {
	rev, err := Manifest(SamplesDir(), SampleApp, "v2")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		failing, first  bool
		want            time.Duration
		explainContains string
	}{
		// 10 % canary for 10 s, then 10, 20, 40, 80, 100 % every 5 s,
		// then v1's pods stay 3 s.
		{"a release", false, false, 33 * time.Second, "canary 10s + 4 steps × 5s + the previous build's scale-down delay 3s"},
		{"an app's first build", false, true, 10 * time.Second, "first build"},
		// failAfter 5s, the mesh's 1 s lag, three 1 s scrapes, the 1 s query cache.
		{"a failing canary", true, false, 10 * time.Second, "failAfter 5s"},
	} {
		got, explained, err := delays(rev, tc.failing, tc.first)
		if err != nil || got != tc.want || !strings.Contains(explained, tc.explainContains) {
			t.Errorf("%s: got %s %q %v, want %s %q", tc.name, got, explained, err, tc.want, tc.explainContains)
		}
	}
	rev.Spec.Targets[0].ServiceLevelObjectives[0].ServiceLevelIndicator.Canary.FailAfter = "soon"
	if _, _, err := delays(rev, true, false); err == nil || !strings.Contains(err.Error(), "canary.failAfter") {
		t.Errorf("a bad failAfter gave %v, want an error naming the field", err)
	}
}

func TestPhase_Budget(t *testing.T) {
	start := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	p := Phase{Started: start, Deployed: start.Add(2 * time.Second), Delays: 30 * time.Second}
	if got, want := p.Budget(), 38*time.Second; got != want {
		t.Errorf("budget %s, want 1.2 × 30s + 2s = %s", got, want)
	}
	if p.Within() {
		t.Error("an unfinished phase is within its budget")
	}
	p.Ended = start.Add(38 * time.Second)
	if !p.Within() {
		t.Errorf("ended at its budget %s, not within", p.Budget())
	}
	p.Ended = p.Ended.Add(time.Millisecond)
	if p.Within() {
		t.Error("over budget, yet within")
	}
}

func snapshot() Snapshot {
	return Snapshot{
		At: time.Date(2026, 11, 21, 9, 0, 45, 0, time.UTC),
		Builds: []Build{
			{Tag: "v1", State: "released", Percent: 60},
			{Tag: "v2", State: "releasing", Percent: 40},
		},
		Clusters: []Cluster{
			{Name: "east", Weights: map[string]int32{"v1": 60, "v2": 40}, Pods: map[string]Pods{"v1": {1, 1}, "v2": {2, 2}}},
			{Name: "west", Err: errors.New("connection refused")},
		},
	}
}

func TestTable(t *testing.T) {
	got := Table("v2 released", 45*time.Second, snapshot())
	want := `── v2 released · 45s ──
BUILD  STATE      EAST WEIGHT  PODS  WEST WEIGHT  PODS
v1     released   60 %         1/1   0 %          0/0
v2     releasing  40 %         2/2   0 %          0/0
west: connection refused
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestView_PlainLogsChangesOnly(t *testing.T) {
	var out bytes.Buffer
	v := NewPlainView(&out)
	s := snapshot()
	v.Show("v2", s)
	s.At = s.At.Add(time.Second)
	v.Show("v2", s) // nothing changed but the time
	s.Clusters[0].Weights = map[string]int32{"v2": 100}
	v.Show("v2", s)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %d lines, want 2:\n%s", len(lines), out.String())
	}
	if !strings.HasSuffix(lines[0], "v2: v1 released, v2 releasing | east routes v1=60 v2=40 pods v1 1/1 v2 2/2 | west unreachable") ||
		!strings.Contains(lines[1], "east routes v2=100") {
		t.Errorf("lines:\n%s", out.String())
	}
}

func TestView_TerminalRedrawsInPlace(t *testing.T) {
	var out bytes.Buffer
	v := &View{out: &out, tty: true, start: snapshot().At}
	v.Show("v2", snapshot())
	first := out.Len()
	v.Show("v2", snapshot())
	// The second draw moves up over the 5 lines of the first and erases them.
	if redraw := out.String()[first:]; !strings.HasPrefix(redraw, "\x1b[5A\x1b[J── v2") {
		t.Errorf("redraw starts %q", redraw[:min(len(redraw), 20)])
	}
	v.Printf("a message")
	if !strings.Contains(out.String(), "\x1b[5A\x1b[Ja message\n") {
		t.Errorf("a message does not replace the table: %q", out.String())
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

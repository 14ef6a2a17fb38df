package releasemanager

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan/applier"
)

// waveRelease is app shop in a target that releases in two waves, east
// then west (after a bake of a minute), with v2 starting its ramp and v1
// released everywhere. Every cluster answers; a run is a decision and its
// report, fed back as the next run's record.
type waveRelease struct {
	t      *testing.T
	s      *snapshot
	builds map[string]*incarnation
}

func newWaveRelease(t *testing.T) *waveRelease {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	rm := &picchuv1alpha1.ReleaseManager{Spec: picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: "production"}}
	s := &snapshot{rm: rm, now: now}
	w := &waveRelease{t: t, s: s, builds: map[string]*incarnation{}}
	w.add("v1", release.Released, 100)
	w.add("v2", release.Releasing, 0)
	for _, name := range []string{"east", "west"} {
		cl := &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": name}}}
		s.fleet = append(s.fleet, &fleetCluster{obj: cl, live: true, factor: 1, conn: &applier.Cluster{}})
		s.observation = append(s.observation, release.ClusterObservation{Name: name, Live: true, Observed: true,
			Tags: map[string]release.Replicas{"v1": {Desired: 10, Available: 10}, "v2": {Desired: 10, Available: 10}, "v3": {Desired: 10, Available: 10}}})
	}
	s.assignWaves()
	if len(s.waves) != 2 || s.fleet[0].wave != 0 || s.fleet[1].wave != 1 {
		t.Fatalf("waves %v, east in %d, west in %d; want east first, west second", s.waves, s.fleet[0].wave, s.fleet[1].wave)
	}
	return w
}

// add adds a build newer than those before, recorded in state at percent.
func (w *waveRelease) add(tag string, state release.State, percent int32) *incarnation {
	inc := &incarnation{tag: tag, revision: &picchuv1alpha1.Revision{}, target: &picchuv1alpha1.RevisionTarget{
		Name:  "production",
		Scale: picchuv1alpha1.ScaleInfo{Default: 10, Max: 10},
		Release: picchuv1alpha1.ReleaseInfo{Max: 100, GeometricScaling: picchuv1alpha1.GeometricScaling{
			Start: 25, Factor: 2, Delay: &metav1.Duration{Duration: 10 * time.Second}},
			Waves: []picchuv1alpha1.ReleaseWave{
				{Name: "east", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}, Bake: &metav1.Duration{Duration: time.Minute}},
				{Name: "west"},
			}},
	}}
	stamp := picchuv1alpha1.NewTimestamp(w.s.now.Add(-time.Hour))
	inc.status = picchuv1alpha1.ReleaseManagerRevisionStatus{Tag: tag, CurrentPercent: percent, PeakPercent: percent,
		ReleaseEligible: true, LastUpdated: &stamp}
	inc.status.State.Current = string(state)
	w.s.incarnations = append([]*incarnation{inc}, w.s.incarnations...)
	w.builds[tag] = inc
	return inc
}

// run decides and reports once, d after the run before, and returns the
// weight of each build in east and west, as "v2 25/0".
func (w *waveRelease) run(d time.Duration) string {
	w.t.Helper()
	s := w.s
	s.now = s.now.Add(d)
	for _, inc := range s.incarnations {
		inc.decision = decision{}
	}
	s.decide(release.DefaultTimeouts, nil)
	out := report(s, settle(s, acted{results: applier.Results{{Cluster: "east"}, {Cluster: "west"}}}), time.Minute, 20*time.Second)
	var got []string
	for _, st := range out.status.Revisions {
		inc := w.builds[st.Tag]
		inc.status = st
		east, west := int32(-1), int32(-1)
		for _, c := range st.Clusters {
			if c.Name == "east" {
				east = c.Percent
			} else {
				west = c.Percent
			}
		}
		if east+west == -2 {
			continue
		}
		got = append(got, fmt.Sprintf("%s %d/%d", st.Tag, east, west))
	}
	if r := out.status.Releasing; r != nil {
		got = append(got, fmt.Sprintf("releasing %s %d%% %s", r.Tag, r.Percent, r.Wave))
	}
	return fmt.Sprint(got)
}

// TestWaves_ABuildReleasesWaveByWave: v2 ramps in east while west stays on
// v1; released in east, it waits out east's bake, then ramps in west, and
// is released once west has it all. Every cluster's weights sum to 100
// at every run.
func TestWaves_ABuildReleasesWaveByWave(t *testing.T) {
	w := newWaveRelease(t)
	v2 := w.builds["v2"]
	step := 10 * time.Second
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{
		{0, "[v2 25/0 v1 75/100 releasing v2 25% east (1/2)]"},
		{step, "[v2 50/0 v1 50/100 releasing v2 50% east (1/2)]"},
		{step, "[v2 100/0 v1 0/100 releasing v2 100% east (1/2)]"},
		// Released in east: west is next, after east's bake of a minute.
		{step, "[v2 100/0 v1 0/100 releasing v2 0% west (2/2)]"},
		{30 * time.Second, "[v2 100/0 v1 0/100 releasing v2 0% west (2/2)]"},
		{30 * time.Second, "[v2 100/25 v1 0/75 releasing v2 25% west (2/2)]"},
		{step, "[v2 100/50 v1 0/50 releasing v2 50% west (2/2)]"},
		// v1 lost the last of its traffic: it leaves in the same run.
		{step, "[v2 100/100 releasing v2 100% west (2/2)]"},
		{step, "[v2 100/100 releasing v2 100% ]"},
	} {
		got := w.run(tc.after)
		t.Logf("%s %s state %s wave %d started %v", w.s.now.Format(time.TimeOnly), got, v2.status.State.Current, v2.status.Wave, v2.status.WaveStarted)
		if got != tc.want {
			t.Fatalf("at %s: %s, want %s", w.s.now.Format(time.TimeOnly), got, tc.want)
		}
	}
	if v2.status.State.Current != string(release.Released) || w.builds["v1"].status.ReleaseEligible {
		t.Errorf("v2 %s, v1 eligible %t; want v2 released and v1 retiring", v2.status.State.Current, w.builds["v1"].status.ReleaseEligible)
	}
}

// TestWaves_ABuildFailedInAWaveIsRolledBackInEvery: v3, released in east
// and ramping in west, fails: v2 takes the traffic back in both waves at
// its ramp's pace, and v3 gains none anywhere.
func TestWaves_ABuildFailedInAWaveIsRolledBackInEvery(t *testing.T) {
	w := newWaveRelease(t)
	v2 := w.builds["v2"]
	v2.status.State.Current, v2.status.CurrentPercent, v2.status.PeakPercent = string(release.Released), 100, 100
	w.builds["v1"].status.CurrentPercent = 0
	w.builds["v1"].status.State.Current = string(release.Retired)
	v3 := w.add("v3", release.Releasing, 100)
	v3.status.Wave, v3.status.WavePercents = 1, []int32{100, 40}
	v2.status.WavePercents = []int32{0, 60}
	v3.revision.Spec.Failed = true
	// West's v2 at 60 % steps to 100 % at once (its delay passed long
	// ago); east's starts again from 0 %.
	for _, want := range []string{
		"[v3 75/0 v2 25/100 releasing v3 75% ]",
		"[v3 50/0 v2 50/100 v1 0/0 releasing v3 50% ]",
		"[v2 100/100 v1 0/0 releasing v2 100% ]",
	} {
		if got := w.run(10 * time.Second); got != want {
			t.Fatalf("at %s: %s, want %s", w.s.now.Format(time.TimeOnly), got, want)
		}
	}
	if v3.status.State.Current != string(release.Failed) && v3.status.State.Current != string(release.Failing) {
		t.Errorf("v3 %s, want failing or failed", v3.status.State.Current)
	}
}

package releasemanager

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
)

// assignWaves takes the target's release waves from its newest build and
// puts each cluster of the fleet in the first wave that selects it, or in
// the last. Fewer than two waves is no waves: one wave of every cluster.
func (s *snapshot) assignWaves() {
	newest := s.newestRevision()
	if newest == nil || len(newest.target.Release.Waves) < 2 {
		return
	}
	s.waves = newest.target.Release.Waves
	selectors := make([]labels.Selector, len(s.waves))
	for i, w := range s.waves {
		sel, err := metav1.LabelSelectorAsSelector(&w.Selector)
		if err != nil {
			// Admission rejects a bad selector; one that slipped through selects nothing.
			sel = labels.Nothing()
		}
		selectors[i] = sel
	}
	for _, fc := range s.fleet {
		fc.wave = len(s.waves) - 1
		for i, sel := range selectors {
			if sel.Matches(labels.Set(fc.obj.Labels)) {
				fc.wave = i
				break
			}
		}
	}
}

// waveCount is the number of waves the target releases in: 1 without waves.
func (s *snapshot) waveCount() int { return max(len(s.waves), 1) }

// bakes are the waves' bake times, in wave order.
func (s *snapshot) bakes() []time.Duration {
	out := make([]time.Duration, len(s.waves))
	for i, w := range s.waves {
		if w.Bake != nil {
			out[i] = max(w.Bake.Duration, 0)
		}
	}
	return out
}

// waveName is how status names wave w: its name, else wave-<n>, with its
// place among the waves.
func (s *snapshot) waveName(w int) string {
	if w < 0 || w >= len(s.waves) {
		return ""
	}
	name := s.waves[w].Name
	if name == "" {
		name = fmt.Sprintf("wave-%d", w+1)
	}
	return fmt.Sprintf("%s (%d/%d)", name, w+1, len(s.waves))
}

// wavePercents are the traffic a build takes in each wave as recorded; a
// record of another number of waves (waves just set, or changed) counts
// its highest percent in every wave.
func (s *snapshot) wavePercents(inc *incarnation) []int32 {
	n := s.waveCount()
	if n > 1 && len(inc.status.WavePercents) == n {
		return slices.Clone(inc.status.WavePercents)
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = inc.status.CurrentPercent
	}
	return out
}

// wavesLeft says a releasing build has not reached its release.max in
// every wave yet, as recorded: it is not released, nor proven.
func (s *snapshot) wavesLeft(inc *incarnation) bool {
	if len(s.waves) < 2 || inc.target == nil {
		return false
	}
	return release.WavesLeft(release.State(inc.status.State.Current), int(inc.status.Wave), s.wavePercents(inc), release.MaxPercent(inc.target.Release))
}

// servingWaves names the waves where the build takes traffic, as recorded
// ("wave east (1/2)", "waves east (1/2), west (2/2)"), or "" without waves.
func (s *snapshot) servingWaves(inc *incarnation) string {
	if len(s.waves) < 2 {
		return ""
	}
	var names []string
	for w, p := range s.wavePercents(inc) {
		if p > 0 {
			names = append(names, s.waveName(w))
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return "wave " + names[0]
	}
	return "waves " + strings.Join(names, ", ")
}

// nextWave is the wave a build ramps in after this run: a releasing
// build's moves on once it is released in its wave (release.NextWave);
// every other build has none.
func (s *snapshot) nextWave(inc *incarnation, percents []int32) release.WaveStep {
	if !inc.step.State.IsRamping() || len(s.waves) < 2 || inc.target == nil {
		return release.WaveStep{}
	}
	wave := int(inc.status.Wave)
	return release.NextWave(release.WaveInput{
		Now: s.now, Wave: wave, Waves: len(s.waves), Started: stampOf(inc.status.WaveStarted),
		Percent: percents[min(max(wave, 0), len(percents)-1)], Max: inc.target.Release.Max, Bakes: s.bakes(),
		Rereleased: !release.State(inc.status.State.Current).IsRamping() &&
			inc.status.PeakPercent >= release.MaxPercent(inc.target.Release),
	})
}

// holdsWave says a live cluster of wave w cannot be seen or reached, or
// no live cluster can: no build steps up there.
func (s *snapshot) holdsWave(w int) bool {
	for _, fc := range s.fleet {
		if fc.wave == w && fc.live && fc.conn == nil {
			return true
		}
	}
	return s.observation.LiveClusters() == 0
}

// frozenWave is the freeze of the live clusters of wave w: open when one of
// theirs is, until the last of them closes (no end known when one cannot
// be read).
func (s *snapshot) frozenWave(w int) schedule.Freeze {
	var out schedule.Freeze
	for _, fc := range s.fleet {
		if fc.wave != w || !fc.live || !fc.freeze.Open {
			continue
		}
		switch {
		case !out.Open:
			out = fc.freeze
		case out.Until.IsZero():
			// Already without an end.
		case fc.freeze.Until.IsZero() || fc.freeze.Until.After(out.Until):
			out = fc.freeze
		}
	}
	return out
}

// weightIn is the traffic the build takes in wave w after this run.
func (inc *incarnation) weightIn(w int) int32 {
	if w >= 0 && w < len(inc.weights) {
		return inc.weights[w]
	}
	return inc.weight
}

// earnedIn is the part of the build's traffic in wave w after this run
// that its own state granted it there.
func (inc *incarnation) earnedIn(w int) int32 {
	if w >= 0 && w < len(inc.earned) {
		return inc.earned[w]
	}
	return release.Highest(inc.earned)
}

// rampingWave is the wave whose ramp speaks for build i: its own wave when
// it ramps there, else the first where it does, or -1.
func rampingWave(ramping []int, i, own int) int {
	if own < len(ramping) && ramping[own] == i {
		return own
	}
	return slices.Index(ramping, i)
}

// clusterWeight is the traffic a build takes in each cluster of the fleet
// after this run: its weight in the cluster's wave.
func (s *snapshot) clusterWeight(inc *incarnation) func(cluster string) int32 {
	wave := make(map[string]int, len(s.fleet))
	for _, fc := range s.fleet {
		wave[fc.obj.Name] = fc.wave
	}
	return func(cluster string) int32 { return inc.weightIn(wave[cluster]) }
}

// recordWaves records a releasing build's wave and, while the target
// releases in waves, the traffic it takes in each (settled, against
// recorded before), stamping lastUpdated with moved when that moved.
func (s *snapshot) recordWaves(st *picchuv1alpha1.ReleaseManagerRevisionStatus, inc *incarnation, recorded, settled []int32, moved time.Time) {
	st.Wave, st.WaveStarted, st.WavePercents = 0, nil, nil
	if len(s.waves) < 2 {
		return
	}
	st.WavePercents = settled
	if !slices.Equal(recorded, settled) {
		stamp := picchuv1alpha1.NewTimestamp(moved)
		st.LastUpdated = &stamp
	}
	st.Wave = int32(inc.wave.Wave)
	if !inc.wave.Started.IsZero() {
		started := picchuv1alpha1.NewTimestamp(inc.wave.Started)
		st.WaveStarted = &started
	}
}

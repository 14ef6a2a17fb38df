package releasemanager

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/revision"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/integrations/scope"
)

// The release model: random sequences of what happens to an app in a
// target (builds applied at any moment, during another's deploy, canary,
// ramp, bake, pause or rollback; alerts firing; clusters going down and
// coming back; people pausing, promoting, retrying, rolling back and
// deleting), each followed by a run of the ReleaseManager as the
// controller makes it: judged by its alert source, decided, settled on
// what the clusters took and reported into the status the next run reads,
// then the Revision controller's verdict (revision.FailReason). After
// every run the model checks the promises of docs/releasing.md ("Weights
// are earned"):
//
//   - on every cluster that takes the run, the weights sum to 100 whenever
//     a build may serve;
//   - no build takes more than its own state grants it (its canary percent
//     in the first wave, one ramp step, what it had while it leaves or
//     waits), but the released ones and the oldest build that may serve,
//     which take what no grant took;
//   - a build that never ramped (nor was promoted in full, rolled back to
//     or recommissioned) peaks at no more than its canary percent;
//   - a build an alert fires for while it is judged (from its canary until
//     it is released and watched) is failed;
//   - a build's pods go only once no cluster that takes the run routes it
//     and its scale-down delay has passed since the last one stopped.
//
// Each sequence ends with every cluster up, no alert firing and nothing
// paused, run until it settles: then a failed build serves only when no
// build that was released before and did not fail is left to take its
// traffic.

// modelDelay is the operator's scale-down delay in the model.
const modelDelay = 20 * time.Second

// modelTarget is the target's name, and its fleet's.
const modelTarget, modelFleet = "production", "prod"

// model is the world a sequence plays in, and what it saw of it.
type model struct {
	now      time.Time
	rm       *picchuv1alpha1.ReleaseManager
	revs     []picchuv1alpha1.Revision
	clusters []picchuv1alpha1.Cluster
	waves    bool
	down     map[string]bool
	firing   map[string]bool
	readyAt  map[string]time.Time
	r        *Reconciler
	next     time.Duration
	builds   int
	// written is the weight each cluster was last written for each build,
	// zeroSince when it went to nothing there (absent while it has some).
	written   map[string]map[string]int32
	zeroSince map[string]map[string]time.Time
	// ramped are the builds seen ramping or released, released those seen
	// released; full those a person promoted in full or rolled back to,
	// or that were recommissioned; gone those whose pods went (retired,
	// deleted) since they last synced.
	ramped, released, full, gone map[string]bool
	// drained the builds whose pods could go at some run since they were
	// last routed: no cluster that took the run routed them, and the
	// scale-down delay in effect then had passed since each stopped.
	// Drained stays drained when the delay in effect grows later (its
	// Revision deleted: the operator's delay instead of its own).
	drained map[string]bool
	trace   []string
}

// modelAlerts are the model's alert source: "availability" fires for the
// builds the model says.
type modelAlerts struct{ m *model }

func (a modelAlerts) FiringAlerts(_ context.Context, _ scope.App, tag string, _ bool) ([]string, error) {
	if a.m.firing[tag] {
		return []string{"availability"}, nil
	}
	return []string{}, nil
}

func newModel(waves bool) (*model, error) {
	cal, err := schedule.New(true)
	if err != nil {
		return nil, err
	}
	m := &model{
		now:   time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC),
		waves: waves,
		rm: &picchuv1alpha1.ReleaseManager{
			ObjectMeta: metav1.ObjectMeta{Namespace: "picchu", Name: picchuv1alpha1.ReleaseManagerName("shop", modelTarget)},
			Spec:       picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: modelTarget, Fleet: modelFleet},
		},
		down: map[string]bool{}, firing: map[string]bool{}, readyAt: map[string]time.Time{},
		written: map[string]map[string]int32{}, zeroSince: map[string]map[string]time.Time{},
		ramped: map[string]bool{}, released: map[string]bool{}, full: map[string]bool{}, gone: map[string]bool{},
		drained: map[string]bool{},
	}
	m.r = &Reconciler{Timeouts: release.DefaultTimeouts, Calendar: cal}
	m.r.Prometheus = modelAlerts{m}
	for _, name := range []string{"east", "west"} {
		m.clusters = append(m.clusters, picchuv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "picchu", Name: name,
				Labels: map[string]string{picchuv1alpha1.LabelFleet: modelFleet, "region": name}},
			Spec: picchuv1alpha1.ClusterSpec{Enabled: true},
		})
	}
	return m, nil
}

// play plays script, two bytes an event, each followed by a run, then
// settles the app; it returns the first broken promise.
func (m *model) play(script []byte) error {
	for i := 0; i+1 < len(script); i += 2 {
		m.event(script[i], script[i+1])
		if err := m.run(); err != nil {
			return m.failure(err)
		}
	}
	return m.failure(m.settle())
}

func (m *model) failure(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w\nafter:\n  %s", err, strings.Join(m.trace, "\n  "))
}

func (m *model) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf("%s ", m.now.Format("15:04:05.000"))+fmt.Sprintf(format, args...))
}

// event makes one thing happen, as op and arg say.
func (m *model) event(op, arg byte) {
	k := int(arg)
	switch op % 10 {
	case 0:
		m.apply(arg)
	case 1:
		m.now = m.now.Add(time.Duration(k%40+1) * 250 * time.Millisecond)
		m.logf("time passes")
	case 2, 3:
		// The next run the controller asks for, mostly.
		m.now = m.now.Add(max(m.next, 10*time.Millisecond))
		m.logf("the next run comes")
	case 4:
		if rev := m.pick(k); rev != nil {
			tag := rev.Spec.App.Tag
			m.firing[tag] = !m.firing[tag]
			m.logf("alerts of %s firing: %v", tag, m.firing[tag])
		}
	case 5:
		c := m.clusters[k%len(m.clusters)].Name
		m.down[c] = !m.down[c]
		m.logf("cluster %s down: %v", c, m.down[c])
	case 6:
		m.control(k)
	case 7:
		if rev := m.pick(k); rev != nil && rev.Spec.Failed {
			rev.Spec.Failed = false
			delete(rev.Annotations, picchuv1alpha1.AnnotationFailedReason)
			m.firing[rev.Spec.App.Tag] = false
			m.logf("%s retried", rev.Spec.App.Tag)
		}
	case 8:
		if k%3 == 0 && len(m.revs) > 1 {
			i := k % len(m.revs)
			m.logf("%s deleted", m.revs[i].Spec.App.Tag)
			m.revs = slices.Delete(m.revs, i, i+1)
		}
	case 9:
		if rev := m.pick(k); rev != nil {
			rev.Annotations[picchuv1alpha1.AnnotationRollback] = m.now.UTC().Format(time.RFC3339)
			m.full[rev.Spec.App.Tag] = true
			m.logf("the app is rolled back to %s", rev.Spec.App.Tag)
		}
	}
}

// apply applies a new build, its settings from arg.
func (m *model) apply(arg byte) {
	if m.builds >= 6 {
		return
	}
	m.builds++
	m.now = m.now.Add(time.Millisecond)
	tag := "v" + strconv.Itoa(m.builds)
	target := picchuv1alpha1.RevisionTarget{
		Name: modelTarget, Fleet: modelFleet,
		Release: picchuv1alpha1.ReleaseInfo{
			Eligible: true, Max: 100, Schedule: picchuv1alpha1.ScheduleAlways, TTL: 86400,
			ScalingStrategy:  picchuv1alpha1.ScalingStrategyGeometric,
			GeometricScaling: picchuv1alpha1.GeometricScaling{Start: 10, Factor: 2, Delay: &metav1.Duration{Duration: 10 * time.Second}},
		},
		Canary: picchuv1alpha1.Canary{Percent: []int32{0, 10, 25, 40}[arg&3], TTL: 30},
		ServiceLevelObjectives: []picchuv1alpha1.ServiceLevelObjective{{Name: "availability", Enabled: true,
			ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{TotalQuery: "sum(total)", ErrorQuery: "sum(errors)"}}},
		Scale: picchuv1alpha1.ScaleInfo{Min: ptr.To[int32](1), Default: 1, Max: 1},
	}
	if arg&4 != 0 {
		target.Release.Rollback = picchuv1alpha1.RollbackImmediate
	}
	if arg&8 != 0 {
		target.Release.Max = 50
	}
	if arg&16 != 0 {
		target.Release.Watch = &metav1.Duration{Duration: 20 * time.Second}
	}
	if arg&32 != 0 {
		target.Release.ScaleDownDelay = &metav1.Duration{Duration: 3 * time.Second}
	}
	if m.waves {
		bake := &metav1.Duration{Duration: 15 * time.Second}
		target.Release.Waves = []picchuv1alpha1.ReleaseWave{
			{Name: "east", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}, Bake: bake},
			{Name: "west"},
		}
	}
	m.readyAt[tag] = m.now
	if arg&64 != 0 {
		m.readyAt[tag] = m.now.Add(5 * time.Second)
	}
	m.revs = append(m.revs, picchuv1alpha1.Revision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "picchu", Name: "shop-" + tag, CreationTimestamp: metav1.NewTime(m.now),
			Annotations: map[string]string{}},
		Spec: picchuv1alpha1.RevisionSpec{App: picchuv1alpha1.RevisionApp{Name: "shop", Tag: tag, Image: "shop:" + tag},
			Targets: []picchuv1alpha1.RevisionTarget{target}},
	})
	m.logf("%s applied: canary %d%%, max %d, rollback %q", tag, target.Canary.Percent, target.Release.Max, target.Release.Rollback)
}

// control pauses or resumes a build, or promotes it.
func (m *model) control(k int) {
	rev := m.pick(k)
	if rev == nil {
		return
	}
	tag := rev.Spec.App.Tag
	switch k % 3 {
	case 0:
		if _, ok := rev.Annotations[picchuv1alpha1.AnnotationPause]; ok {
			delete(rev.Annotations, picchuv1alpha1.AnnotationPause)
			m.logf("%s resumed", tag)
		} else {
			rev.Annotations[picchuv1alpha1.AnnotationPause] = ""
			m.logf("%s paused", tag)
		}
	case 1:
		rev.Annotations[picchuv1alpha1.AnnotationPromote] = "next@" + m.now.UTC().Format(time.RFC3339Nano)
		m.logf("%s promoted a step", tag)
	default:
		rev.Annotations[picchuv1alpha1.AnnotationPromote] = "full@" + m.now.UTC().Format(time.RFC3339Nano)
		m.full[tag] = true
		m.logf("%s promoted in full", tag)
	}
}

// pick is one of the builds whose Revision exists, or nil.
func (m *model) pick(k int) *picchuv1alpha1.Revision {
	if len(m.revs) == 0 {
		return nil
	}
	return &m.revs[k%len(m.revs)]
}

// snapshot is what a run at now reads: the Revisions, the status, the
// fleet, and on each cluster that answers, the pods of each build once
// they are ready.
func (m *model) snapshot() *snapshot {
	s := simulated(m.rm, m.revs, m.clusters, m.now)
	s.scaleDownDelay = modelDelay
	for i, fc := range s.fleet {
		if m.down[fc.obj.Name] {
			fc.conn, fc.problem = nil, "down"
		}
		o := &s.observation[i]
		o.Observed = fc.conn != nil
		if !o.Observed {
			o.Tags = nil
			continue
		}
		for tag, n := range o.Tags {
			if m.now.Before(m.readyAt[tag]) {
				o.Tags[tag] = release.Replicas{Desired: n.Desired}
			}
		}
	}
	return s
}

// run is one run of the ReleaseManager, then of the Revision controller.
func (m *model) run() error {
	s := m.snapshot()
	before := m.recorded(s)
	alerted := m.judgedWhileFiring()
	m.r.markUnjudgeable(s)
	m.r.judge(context.Background(), s)
	s.decide(m.r.Timeouts, m.r.Calendar)
	if err := m.checkDrains(s); err != nil {
		return err
	}
	o := report(s, settle(s, s.allApplied()), DefaultSyncPeriod, 10*time.Second)
	m.rm.Status, m.next = o.status, o.next
	for _, inc := range s.incarnations {
		if inc.step.State.IsRamping() || inc.step.State.IsReleased() || inc.step.Then.IsReleased() {
			m.ramped[inc.tag] = true
		}
		if st := statusOfTag(m.rm.Status, inc.tag); st != nil && release.State(st.State.Current).IsReleased() {
			m.released[inc.tag] = true
		}
		if inc.recommissioned || inc.rollbackTarget {
			m.full[inc.tag] = true
		}
	}
	if err := m.checkWeights(s, before); err != nil {
		return err
	}
	m.wrote(s)
	if err := m.checkPeaks(); err != nil {
		return err
	}
	for i := range m.revs {
		rev := &m.revs[i]
		if reason, ok := revision.FailReason(rev, []*picchuv1alpha1.ReleaseManager{m.rm}, 0, m.now); ok && !rev.Spec.Failed {
			rev.Spec.Failed = true
			m.logf("%s failed: %s", rev.Spec.App.Tag, reason)
		}
	}
	for _, tag := range alerted {
		if rev := m.revision(tag); rev != nil && !rev.Spec.Failed {
			return fmt.Errorf("%s was judged (recorded %s) while its alerts fired, and was not failed", tag, m.stateOf(tag))
		}
	}
	m.logf("run: %s", m.summary())
	return nil
}

// recorded are the traffic of each build in each wave, as recorded before
// the run.
func (m *model) recorded(s *snapshot) map[string][]int32 {
	out := map[string][]int32{}
	for _, inc := range s.incarnations {
		out[inc.tag] = slices.Clone(s.wavePercents(inc))
	}
	return out
}

// judgedWhileFiring are the builds whose alerts fire while, as recorded,
// they are judged: from their canary until released and watched, their
// Revision not failed.
func (m *model) judgedWhileFiring() []string {
	var out []string
	for _, st := range m.rm.Status.Revisions {
		rev := m.revision(st.Tag)
		if rev == nil || rev.Spec.Failed || !m.firing[st.Tag] {
			continue
		}
		judged := false
		switch release.State(st.State.Current) {
		case release.Canarying, release.Canaried, release.PendingRelease, release.Releasing:
			judged = true
		case release.Released:
			judged = rev.Spec.Targets[0].Release.Watch != nil && st.State.LastUpdated != nil &&
				m.now.Before(st.State.LastUpdated.Add(rev.Spec.Targets[0].Release.Watch.Duration))
		}
		if judged {
			out = append(out, st.Tag)
		}
	}
	return out
}

// checkDrains checks no build's pods go (its step retires or deletes it)
// while a cluster that takes the run still routes it, or before its
// scale-down delay has passed since the last one stopped.
func (m *model) checkDrains(s *snapshot) error {
	for _, inc := range s.incarnations {
		held := m.holding(s, inc)
		if held == "" {
			m.drained[inc.tag] = true
		}
		switch {
		case inc.step.Action == release.Sync:
			m.gone[inc.tag] = false
			continue
		case inc.step.Action != release.Retire && inc.step.Action != release.Delete:
			continue
		case m.gone[inc.tag]:
			continue // its pods went before: what goes now is no pod
		}
		m.gone[inc.tag] = true
		if !m.drained[inc.tag] { // else its pods could go at an earlier run
			return fmt.Errorf("%s's pods go (%s) %s", inc.tag, inc.step.Action, held)
		}
	}
	return nil
}

// holding says why the build's pods may not go yet: a cluster that takes
// the run routes it as last written, or its scale-down delay in effect
// has not passed since one stopped; "" when they may.
func (m *model) holding(s *snapshot, inc *incarnation) string {
	delay := s.scaleDownDelayOf(inc)
	for _, fc := range s.fleet {
		if fc.conn == nil {
			continue
		}
		c := fc.obj.Name
		if w := m.written[inc.tag][c]; w > 0 {
			return fmt.Sprintf("while %s routes it %d%%", c, w)
		}
		if since, ok := m.zeroSince[inc.tag][c]; ok && m.now.Before(since.Add(delay)) {
			return fmt.Sprintf("%s after %s stopped routing it, before its scale-down delay of %s", m.now.Sub(since), c, delay)
		}
	}
	return ""
}

// checkWeights checks the run's weights against what each build's own
// state grants it, wave by wave.
func (m *model) checkWeights(s *snapshot, before map[string][]int32) error {
	for w := range s.waveCount() {
		if !slices.ContainsFunc(s.fleet, func(fc *fleetCluster) bool { return fc.wave == w && fc.conn != nil }) {
			continue // no cluster of the wave takes the run
		}
		var sum int32
		mayServe := false
		recv := m.receiver(s, before, w)
		for i, inc := range s.incarnations {
			weight := inc.weightIn(w)
			sum += weight
			state := inc.step.State
			mayServe = mayServe || state == release.Canarying || state.IsRamping() || state.IsReleased()
			if i == recv {
				continue
			}
			if bound := m.grant(inc, w, at(before[inc.tag], w)); weight > bound {
				return fmt.Errorf("wave %d: %s (%s) takes %d%%, above the %d%% its state grants (it had %d%%; receiver %s)",
					w, inc.tag, state, weight, bound, at(before[inc.tag], w), m.tagAt(s, recv))
			}
		}
		switch {
		case sum != 0 && sum != 100:
			return fmt.Errorf("wave %d: the weights sum to %d", w, sum)
		case mayServe && sum != 100:
			return fmt.Errorf("wave %d: a build may serve and the weights sum to %d", w, sum)
		}
	}
	return nil
}

// receiver is the build of wave w that takes what no grant took: the
// oldest that may serve and is not failing, else the oldest that may
// serve; -1 for none.
func (m *model) receiver(s *snapshot, before map[string][]int32, w int) int {
	oldest, healthy := -1, -1
	for i := len(s.incarnations) - 1; i >= 0; i-- {
		inc := s.incarnations[i]
		state := inc.step.State
		had := at(before[inc.tag], w) > 0 || at(s.wavePercents(inc), w) > 0
		serves := state == release.Canarying || state.IsRamping() || state.IsReleased() ||
			(had && (state == release.Retiring || state == release.Deleting || state == release.Failing ||
				state == release.Canaried || state == release.PendingRelease))
		if !serves {
			continue
		}
		if oldest < 0 {
			oldest = i
		}
		if healthy < 0 && state != release.Failing {
			healthy = i
		}
	}
	if healthy >= 0 {
		return healthy
	}
	return oldest
}

// grant is the most a build's decided state grants it in wave w, given it
// had had there: its canary percent in the first wave, what it had in
// others; one ramp step (all of its max when promoted in full or rolled
// back to, and in the waves before its own); all for a released build;
// what it had while it leaves or waits; nothing otherwise.
func (m *model) grant(inc *incarnation, w int, had int32) int32 {
	limit := int32(100)
	if inc.target != nil {
		limit = release.MaxPercent(inc.target.Release)
	}
	switch state := inc.step.State; {
	case state.IsReleased():
		return 100
	case state == release.Canarying && w == 0:
		return min(inc.target.Canary.Percent, limit)
	case state == release.Canarying:
		return had
	case state.IsRamping() && (m.full[inc.tag] || w < inc.wave.Wave):
		return limit
	case state.IsRamping() && w > inc.wave.Wave:
		return had
	case state.IsRamping():
		return max(had, release.NextPercent(inc.target.Release, had))
	case state == release.Retiring || state == release.Deleting || state == release.Failing ||
		state == release.Canaried || state == release.PendingRelease:
		return had
	}
	return 0
}

// wrote records what the run wrote on each cluster that took it.
func (m *model) wrote(s *snapshot) {
	tags := map[string]*incarnation{}
	for _, inc := range s.incarnations {
		tags[inc.tag] = inc
	}
	for tag := range m.written {
		if tags[tag] == nil {
			tags[tag] = nil
		}
	}
	for tag, inc := range tags {
		for _, fc := range s.fleet {
			if fc.conn == nil {
				continue
			}
			var weight int32
			if inc != nil {
				weight = inc.weightIn(fc.wave)
			}
			c := fc.obj.Name
			if m.written[tag] == nil {
				m.written[tag], m.zeroSince[tag] = map[string]int32{}, map[string]time.Time{}
			}
			switch had := m.written[tag][c]; {
			case weight > 0:
				delete(m.zeroSince[tag], c)
				m.drained[tag] = false
			case had > 0:
				m.zeroSince[tag][c] = m.now
			}
			m.written[tag][c] = weight
		}
	}
}

// checkPeaks checks a build that never ramped peaks at no more than its
// canary percent.
func (m *model) checkPeaks() error {
	for _, st := range m.rm.Status.Revisions {
		rev := m.revision(st.Tag)
		if rev == nil || m.ramped[st.Tag] || m.full[st.Tag] {
			continue
		}
		t := rev.Spec.Targets[0]
		if limit := min(t.Canary.Percent, release.MaxPercent(t.Release)); st.PeakPercent > limit {
			return fmt.Errorf("%s (%s) never ramped and peaks at %d%%, above its canary's %d%%", st.Tag, st.State.Current, st.PeakPercent, limit)
		}
	}
	return nil
}

// settle brings every cluster up, stops every alert and runs the app
// until it settles, checking every run; then a failed build serves only
// when no build released before, and not failed, is left.
func (m *model) settle() error {
	clear(m.down)
	clear(m.firing)
	for i := range m.revs {
		delete(m.revs[i].Annotations, picchuv1alpha1.AnnotationPause)
	}
	m.logf("every cluster up, no alert firing, nothing paused")
	for range 200 {
		m.now = m.now.Add(min(max(m.next, 10*time.Millisecond), time.Minute))
		if err := m.run(); err != nil {
			return err
		}
	}
	healthy := slices.ContainsFunc(m.revs, func(rev picchuv1alpha1.Revision) bool {
		return !rev.Spec.Failed && m.released[rev.Spec.App.Tag]
	})
	for _, st := range m.rm.Status.Revisions {
		if rev := m.revision(st.Tag); rev != nil && rev.Spec.Failed && st.CurrentPercent > 0 && healthy {
			return fmt.Errorf("%s failed and still serves %d%% once settled, though a healthy build released before is left", st.Tag, st.CurrentPercent)
		}
	}
	return nil
}

func (m *model) revision(tag string) *picchuv1alpha1.Revision {
	for i := range m.revs {
		if m.revs[i].Spec.App.Tag == tag {
			return &m.revs[i]
		}
	}
	return nil
}

func (m *model) stateOf(tag string) string {
	if st := statusOfTag(m.rm.Status, tag); st != nil {
		return st.State.Current
	}
	return "nothing"
}

func (m *model) tagAt(s *snapshot, i int) string {
	if i < 0 {
		return "none"
	}
	return s.incarnations[i].tag
}

// summary is each build's recorded state and traffic.
func (m *model) summary() string {
	var parts []string
	for _, st := range m.rm.Status.Revisions {
		p := fmt.Sprintf("%s %s %d%%", st.Tag, st.State.Current, st.CurrentPercent)
		if len(st.WavePercents) > 0 {
			p += fmt.Sprint(st.WavePercents)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func at(ps []int32, i int) int32 {
	if i >= 0 && i < len(ps) {
		return ps[i]
	}
	return 0
}

// modelSequences is how many sequences TestModel_WeightsAreEarned plays:
// PICCHU_MODEL_SEQUENCES, or 300 (make fuzz plays 100 000).
func modelSequences(t *testing.T) int {
	if v := os.Getenv("PICCHU_MODEL_SEQUENCES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PICCHU_MODEL_SEQUENCES=%q is not a count", v)
		}
		return n
	}
	if testing.Short() {
		return 50
	}
	return 300
}

// TestModel_WeightsAreEarned plays random sequences in the release model
// (see model) and fails on the first broken promise, with the sequence.
func TestModel_WeightsAreEarned(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("PICCHU_MODEL_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	n := modelSequences(t)
	for i := range n {
		script := make([]byte, 2*(10+rng.IntN(50)))
		for j := range script {
			script[j] = byte(rng.UintN(256))
		}
		waves := rng.IntN(3) == 0
		m, err := newModel(waves)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.play(script); err != nil {
			t.Fatalf("sequence %d of %d (PICCHU_MODEL_SEED=%d, waves %v): %v\nscript: %v", i+1, n, seed, waves, err, script)
		}
	}
	t.Logf("%d sequences (PICCHU_MODEL_SEED=%d)", n, seed)
}

// FuzzModel plays the sequences the fuzzer makes in the release model:
// the first byte says whether the target releases in waves.
func FuzzModel(f *testing.F) {
	// A second build applied during the first build's canary, its alerts
	// firing during its own canary (the defects the model was written for).
	f.Add([]byte{0, 0, 1, 1, 0, 1, 3, 0, 0, 1, 3, 0, 4, 1, 3, 0, 3, 0})
	f.Add([]byte{1, 0, 1, 2, 0, 3, 3, 0, 0, 5, 3, 0, 5, 0, 3, 0, 4, 0, 3, 0})
	f.Add([]byte{0, 0, 5, 3, 0, 3, 0, 3, 0, 0, 6, 3, 0, 4, 1, 3, 0, 9, 0, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 400 {
			return
		}
		m, err := newModel(data[0]&1 == 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.play(data[1:]); err != nil {
			t.Fatal(err)
		}
	})
}

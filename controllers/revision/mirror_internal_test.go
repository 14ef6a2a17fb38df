package revision

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// TestMirrorWait: a change of what a person or a GitOps tool acts on is
// written MirrorInterval after the last write; the release's progress
// alone, ProgressInterval after it first moved, with every move since.
func TestMirrorWait(t *testing.T) {
	last := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	before := picchuv1alpha1.RevisionStatus{
		ObservedGeneration: 1,
		Summary:            "production=releasing 25%",
		Conditions: []metav1.Condition{
			{Type: picchuv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: picchuv1alpha1.ReasonProgressing, Message: "production: releasing 25%"},
			{Type: picchuv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonProgressing, Message: "production: releasing 25%"},
		},
		Targets: []picchuv1alpha1.RevisionTargetStatus{{Name: "production", State: "releasing",
			Release: picchuv1alpha1.RevisionReleaseStatus{CurrentPercent: 25, PeakPercent: 25}}},
	}
	r := &Reconciler{}
	for _, tc := range []struct {
		name   string
		change func(*picchuv1alpha1.RevisionStatus)
		want   time.Duration
	}{
		{"a step of the ramp is progress", func(st *picchuv1alpha1.RevisionStatus) {
			st.Targets[0].Release.CurrentPercent, st.Targets[0].Release.PeakPercent, st.Summary = 50, 50, "production=releasing 50%"
			st.Conditions[0].Message, st.Conditions[1].Message = "production: releasing 50%", "production: releasing 50%"
		}, DefaultProgressInterval},
		{"a state and replicas are progress", func(st *picchuv1alpha1.RevisionStatus) {
			st.Targets[0].State, st.Targets[0].Scale.Current = "canarying", 3
		}, DefaultProgressInterval},
		{"ready", func(st *picchuv1alpha1.RevisionStatus) {
			st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionTrue, picchuv1alpha1.ReasonReleased
		}, DefaultMirrorInterval},
		{"a condition's reason", func(st *picchuv1alpha1.RevisionStatus) { st.Conditions[1].Reason = "Waiting" }, DefaultMirrorInterval},
		{"a condition gone", func(st *picchuv1alpha1.RevisionStatus) { st.Conditions = st.Conditions[:1] }, DefaultMirrorInterval},
		{"a new generation", func(st *picchuv1alpha1.RevisionStatus) { st.ObservedGeneration = 2 }, DefaultMirrorInterval},
		{"a new target", func(st *picchuv1alpha1.RevisionStatus) {
			st.Targets = append(st.Targets, picchuv1alpha1.RevisionTargetStatus{Name: "staging"})
		}, DefaultMirrorInterval},
		{"alerts firing", func(st *picchuv1alpha1.RevisionStatus) { st.Targets[0].TriggeredAlerts = []string{"errors"} }, DefaultMirrorInterval},
		{"a hold", func(st *picchuv1alpha1.RevisionStatus) {
			st.Targets[0].Held = &picchuv1alpha1.RevisionHold{Reason: picchuv1alpha1.ReasonNotOwned}
		}, DefaultMirrorInterval},
		{"a pause", func(st *picchuv1alpha1.RevisionStatus) { st.Targets[0].Paused = true }, DefaultMirrorInterval},
		{"an ignored rollback", func(st *picchuv1alpha1.RevisionStatus) { st.Targets[0].IgnoredRollback = "clock" }, DefaultMirrorInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := before.DeepCopy()
			tc.change(after)
			if got, _ := r.mirrorWait(&before, after, mirrorRecord{written: last}, last); got != tc.want {
				t.Errorf("waits %s after a write, want %s", got, tc.want)
			}
			// A minute after the last write, what people act on goes at
			// once, and progress once it has waited its interval.
			later := last.Add(time.Minute)
			want := time.Duration(0)
			if tc.want == DefaultProgressInterval {
				want = DefaultProgressInterval
			}
			got, rec := r.mirrorWait(&before, after, mirrorRecord{written: last}, later)
			if got != want {
				t.Errorf("waits %s a minute after a write, want %s", got, want)
			}
			if got, _ := r.mirrorWait(&before, after, rec, later.Add(DefaultProgressInterval)); got > 0 {
				t.Errorf("waits %s more once the progress waited its interval", got)
			}
		})
	}
	if got, _ := (&Reconciler{MirrorInterval: time.Second, ProgressInterval: 5 * time.Second}).mirrorWait(&before, &before, mirrorRecord{written: last}, last); got != 5*time.Second {
		t.Errorf("configured intervals: progress waits %s, want 5s", got)
	}
}

// TestMirrorWait_ARampsStepsGoInOneWrite: the steps of a ramp, moving
// every 2 s, are written together once the first has waited
// ProgressInterval, never between; a change people act on meanwhile goes
// at once, the progress with it, and what moves after it waits again.
func TestMirrorWait_ARampsStepsGoInOneWrite(t *testing.T) {
	r := &Reconciler{}
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	written := picchuv1alpha1.RevisionStatus{ObservedGeneration: 1,
		Targets: []picchuv1alpha1.RevisionTargetStatus{{Name: "production", State: "released",
			Release: picchuv1alpha1.RevisionReleaseStatus{CurrentPercent: 100, PeakPercent: 100}}}}
	rec := mirrorRecord{written: start.Add(-time.Hour)}
	step := func(percent int32) *picchuv1alpha1.RevisionStatus {
		st := written.DeepCopy()
		st.Targets[0].Release.CurrentPercent = percent
		return st
	}
	var wait time.Duration
	for i, percent := range []int32{75, 50, 25, 0} {
		now := start.Add(time.Duration(i) * 2 * time.Second)
		wait, rec = r.mirrorWait(&written, step(percent), rec, now)
		if want := DefaultProgressInterval - time.Duration(i)*2*time.Second; wait != want {
			t.Fatalf("step to %d%% at %s: waits %s, want %s (the interval from the first step)", percent, now.Sub(start), wait, want)
		}
	}
	if !rec.moved.Equal(start) {
		t.Errorf("progress recorded as first moved at %s, want the first step's %s", rec.moved, start)
	}
	if wait, _ = r.mirrorWait(&written, step(0), rec, start.Add(DefaultProgressInterval)); wait > 0 {
		t.Errorf("the interval over: waits %s more", wait)
	}
	// A change people act on goes at once, however recent the progress.
	retired := step(0)
	retired.Conditions = []metav1.Condition{{Type: picchuv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonSettled}}
	if wait, _ = r.mirrorWait(&written, retired, mirrorRecord{written: start.Add(-time.Hour), moved: start}, start.Add(time.Second)); wait > 0 {
		t.Errorf("ready while the progress waits: waits %s, want 0", wait)
	}
	// Written then (the record starts again from that write), progress
	// that moves after it waits its own interval.
	scaledDown := retired.DeepCopy()
	scaledDown.Targets[0].Scale.Current = 0
	retired.Targets[0].Scale.Current = 2
	if wait, _ = r.mirrorWait(retired, scaledDown, mirrorRecord{written: start.Add(time.Second)}, start.Add(3*time.Second)); wait != DefaultProgressInterval {
		t.Errorf("progress after a write: waits %s, want %s", wait, DefaultProgressInterval)
	}
}

package releasemanager

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// TestDeployStartsWait: a status that differs from what is written only
// in builds that started their deploy waits, DeployStartWait from the
// first run that decided it; anything else is written at once.
func TestDeployStartsWait(t *testing.T) {
	at := metav1.NewTime(reportNow.Add(-time.Minute))
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	progressing := []metav1.Condition{
		cond(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonProgressing),
		cond(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, picchuv1alpha1.ReasonProgressing),
	}
	build := func(tag, state string, percent int32) picchuv1alpha1.ReleaseManagerRevisionStatus {
		return picchuv1alpha1.ReleaseManagerRevisionStatus{Tag: tag, State: picchuv1alpha1.ReleaseManagerRevisionStateStatus{Current: state}, CurrentPercent: percent}
	}
	written := picchuv1alpha1.ReleaseManagerStatus{LastUpdated: &at, ObservedGeneration: 1,
		Conditions: []metav1.Condition{cond(picchuv1alpha1.ConditionReady, metav1.ConditionTrue, "Synced")},
		Revisions:  []picchuv1alpha1.ReleaseManagerRevisionStatus{build("v1", "released", 100)}}
	started := func(st *picchuv1alpha1.ReleaseManagerStatus) {
		st.Revisions = append([]picchuv1alpha1.ReleaseManagerRevisionStatus{build("v2", "deploying", 0)}, st.Revisions...)
		st.Conditions = progressing
	}
	for _, tc := range []struct {
		name    string
		written func(*picchuv1alpha1.ReleaseManagerStatus)
		change  func(*picchuv1alpha1.ReleaseManagerStatus)
		since   time.Time
		want    time.Duration
	}{
		{"a new build started its deploy: it waits", nil, started, reportNow, DeployStartWait},
		{"and waits out what is left of the first run's wait", nil, started, reportNow.Add(-2 * time.Second), DeployStartWait - 2*time.Second},
		{"the wait over: now", nil, started, reportNow.Add(-DeployStartWait), 0},
		{"an app's first build, its generation observed: it waits",
			func(st *picchuv1alpha1.ReleaseManagerStatus) { *st = picchuv1alpha1.ReleaseManagerStatus{} },
			func(st *picchuv1alpha1.ReleaseManagerStatus) { started(st); st.ObservedGeneration = 1 }, reportNow, DeployStartWait},
		{"a build recorded created starts: it waits",
			func(st *picchuv1alpha1.ReleaseManagerStatus) {
				st.Revisions = append(st.Revisions, build("v2", "created", 0))
			},
			func(st *picchuv1alpha1.ReleaseManagerStatus) {
				st.Revisions[1].State.Current = "deploying"
				st.Conditions = progressing
			},
			reportNow, DeployStartWait},
		{"with the others' replica counts: it waits", nil, func(st *picchuv1alpha1.ReleaseManagerStatus) {
			started(st)
			st.Revisions[1].Scale.Current = 3
		}, reportNow, DeployStartWait},
		{"an app's first build, its clusters recorded synced: it waits",
			func(st *picchuv1alpha1.ReleaseManagerStatus) { *st = picchuv1alpha1.ReleaseManagerStatus{} },
			func(st *picchuv1alpha1.ReleaseManagerStatus) {
				started(st)
				st.Clusters = []picchuv1alpha1.ReleaseManagerClusterStatus{{Name: "a", Live: true, Synced: true}}
			}, reportNow, DeployStartWait},
		{"a cluster that did not take the run: now", nil, func(st *picchuv1alpha1.ReleaseManagerStatus) {
			started(st)
			st.Clusters = []picchuv1alpha1.ReleaseManagerClusterStatus{{Name: "a", Live: true, Message: "connection refused"}}
		}, reportNow, 0},
		{"nothing started: now", nil, func(st *picchuv1alpha1.ReleaseManagerStatus) { st.Conditions = progressing }, reportNow, 0},
		{"a deploy that starts with traffic: now", nil, func(st *picchuv1alpha1.ReleaseManagerStatus) {
			started(st)
			st.Revisions[0].CurrentPercent = 10
		}, reportNow, 0},
		{"a build recorded before that deploys again: now",
			func(st *picchuv1alpha1.ReleaseManagerStatus) {
				st.Revisions = append(st.Revisions, build("v0", "retired", 0))
			},
			func(st *picchuv1alpha1.ReleaseManagerStatus) {
				st.Revisions[1].State.Current = "deploying"
				st.Conditions = progressing
			},
			reportNow, 0},
		{"another build's traffic moved too: now", nil, func(st *picchuv1alpha1.ReleaseManagerStatus) {
			started(st)
			st.Revisions[1].CurrentPercent = 90
		}, reportNow, 0},
		{"another build's state moved too: now", nil, func(st *picchuv1alpha1.ReleaseManagerStatus) {
			started(st)
			st.Revisions[1].State.Current = "failing"
		}, reportNow, 0},
		{"another condition moved too: now", nil, func(st *picchuv1alpha1.ReleaseManagerStatus) {
			started(st)
			st.Conditions = append(st.Conditions, cond("Frozen", metav1.ConditionTrue, "Freeze"))
		}, reportNow, 0},
		{"Ready for another reason than progress: now", nil, func(st *picchuv1alpha1.ReleaseManagerStatus) {
			started(st)
			st.Conditions = []metav1.Condition{cond(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, "ClusterUnavailable")}
		}, reportNow, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := written.DeepCopy()
			if tc.written != nil {
				tc.written(w)
			}
			after := w.DeepCopy()
			tc.change(after)
			if got := deployStartsWait(w, after, tc.since, reportNow); got != tc.want {
				t.Errorf("waits %s, want %s", got, tc.want)
			}
		})
	}
}

// TestJoinNote: a build's path goes on where the notes left it.
func TestJoinNote(t *testing.T) {
	for _, tc := range []struct{ notes, note, want string }{
		{"v2 new → deploying", "v2 deploying → deployed → releasing", "v2 new → deploying → deployed → releasing"},
		{"v2 new → deploying; v1 released → retiring", "v1 retiring → retired", "v2 new → deploying; v1 released → retiring → retired"},
		{"v2 new → deploying", "v1 released → retiring", "v2 new → deploying; v1 released → retiring"},
		{"v2 new → deploying", "v2 deployed → releasing", "v2 new → deploying; v2 deployed → releasing"},
		{"v12 new → deploying", "v2 deploying → deployed", "v12 new → deploying; v2 deploying → deployed"},
		{"v2 rejected by target-1", "v3 rejected", "v2 rejected by target-1; v3 rejected"},
	} {
		if got := joinNote(tc.notes, tc.note); got != tc.want {
			t.Errorf("joinNote(%q, %q) = %q, want %q", tc.notes, tc.note, got, tc.want)
		}
	}
}

// TestUnwritten_DecidesFromWhatItDidNotWrite: a run decides from the
// status pending while the ReleaseManager is the version it was decided
// from; once anyone wrote it, from what is written, the wait still
// counting from the first run that did not write.
func TestUnwritten_DecidesFromWhatItDidNotWrite(t *testing.T) {
	var u unwritten
	key := types.NamespacedName{Namespace: "picchu", Name: "shop-production"}
	rm := &picchuv1alpha1.ReleaseManager{}
	rm.ResourceVersion = "7"
	if got, p := u.current(key, rm); got != rm || p != nil {
		t.Fatalf("nothing pending: got %v, %+v", got, p)
	}
	status := &picchuv1alpha1.ReleaseManagerStatus{Revisions: []picchuv1alpha1.ReleaseManagerRevisionStatus{{Tag: "v2"}}}
	u.keep(key, &pending{version: "7", status: status, since: reportNow})
	got, p := u.current(key, rm)
	if p == nil || len(got.Status.Revisions) != 1 || len(rm.Status.Revisions) != 0 {
		t.Fatalf("pending at version 7: got status %+v (the cached one %+v), pending %+v", got.Status, rm.Status, p)
	}
	written := rm.DeepCopy()
	written.ResourceVersion = "8"
	got, p = u.current(key, written)
	if got != written || p == nil || p.status != nil || !p.since.Equal(reportNow) {
		t.Fatalf("written since: got %v, pending %+v; want the written one, and the first run's time alone", got, p)
	}
	u.forget(key)
	if _, p := u.current(key, written); p != nil {
		t.Fatalf("forgotten, still pending %+v", p)
	}
}

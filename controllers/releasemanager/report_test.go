package releasemanager

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"testing/quick"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan"
	"github.com/medium/picchu/plan/applier"
)

var reportNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

const (
	reportSyncPeriod = time.Minute
	reportAlertCheck = 20 * time.Second
)

// reportSnapshot is a ReleaseManager of app shop in target production, on
// two live clusters (east, west), with the builds incs.
func reportSnapshot(incs ...*incarnation) *snapshot {
	rm := &picchuv1alpha1.ReleaseManager{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-production", Namespace: "picchu", Generation: 3},
		Spec:       picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: "production"},
	}
	s := &snapshot{rm: rm, now: reportNow, incarnations: incs}
	for _, name := range []string{"east", "west"} {
		s.fleet = append(s.fleet, &fleetCluster{
			obj: &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, live: true, factor: 1, conn: &applier.Cluster{},
		})
		s.observation = append(s.observation, release.ClusterObservation{Name: name, Live: true, Observed: true})
	}
	return s
}

// build is a build with a Revision, recorded in state at weight percent,
// whose step this run is step, taking weight after it.
func build(tag string, state release.State, recorded int32, step release.Step, weight int32) *incarnation {
	inc := &incarnation{
		tag:      tag,
		revision: &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "shop-" + tag}},
		target:   &picchuv1alpha1.RevisionTarget{Name: "production"},
	}
	inc.status.Tag = tag
	inc.status.State.Current = string(state)
	inc.status.CurrentPercent = recorded
	inc.step, inc.weight = step, weight
	return inc
}

func invalid(tag string) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, "shop-"+tag,
		field.ErrorList{field.Invalid(field.NewPath("spec", "template"), "x", "bad port name")})
}

// TestReport covers what a run comes to: the state and weight recorded
// per build, the clusters' statuses, the conditions, the events and when
// to run again.
func TestReport(t *testing.T) {
	type want struct {
		states   map[string]string // tag → state recorded; absent: no entry
		weights  map[string]int32
		ready    metav1.ConditionStatus
		reason   string // of Ready
		events   []string
		next     time.Duration
		unsynced []string
		stepsDue []time.Time // when each ramp step taken everywhere was due
	}
	for _, tc := range []struct {
		name    string
		snap    func() *snapshot
		results applier.Results
		want    want
	}{
		{
			name: "a sync done on every live cluster reaches its next state at once",
			snap: func() *snapshot {
				return reportSnapshot(build("v1", release.Deploying, 0,
					release.Step{State: release.Deploying, Action: release.Sync, Then: release.Deployed}, 0))
			},
			want: want{
				states: map[string]string{"v1": "deployed"}, weights: map[string]int32{"v1": 0},
				ready: metav1.ConditionTrue, reason: picchuv1alpha1.ReasonSynced,
				events: []string{"Normal StateChanged v1 deploying → deployed"}, next: again,
			},
		},
		{
			name: "a cluster that fails holds the next state and the weight, and is retried soon",
			snap: func() *snapshot {
				return reportSnapshot(
					build("v2", release.Releasing, 25, release.Step{State: release.Releasing, Action: release.Sync}, 50),
					build("v1", release.Releasing, 75, release.Step{State: release.Retiring, Action: release.Retire, Then: release.Retired}, 50))
			},
			results: applier.Results{{Cluster: "east"}, {Cluster: "west", Err: errors.New("connection refused")}},
			want: want{
				states:  map[string]string{"v2": "releasing", "v1": "retiring"},
				weights: map[string]int32{"v2": 25, "v1": 75},
				ready:   metav1.ConditionFalse, reason: picchuv1alpha1.ReasonClustersUnavailable,
				events:   []string{"Normal StateChanged v1 releasing → retiring"},
				next:     again,
				unsynced: []string{"west"},
			},
		},
		{
			name: "a rollback goes on in the clusters that answer, and the failing build waits for the others to be failed",
			snap: func() *snapshot {
				s := reportSnapshot(
					build("v2", release.Failing, 40, release.Step{State: release.Failing, Action: release.Sync}, 0),
					build("v1", release.Released, 60, release.Step{State: release.Released, Action: release.Sync}, 100))
				s.rollback = true
				return s
			},
			results: applier.Results{{Cluster: "east"}, {Cluster: "west", Err: errors.New("connection refused")}},
			want: want{
				states:  map[string]string{"v2": "failing", "v1": "released"},
				weights: map[string]int32{"v2": 0, "v1": 100},
				ready:   metav1.ConditionFalse, reason: picchuv1alpha1.ReasonClustersUnavailable,
				next:     again,
				unsynced: []string{"west"},
			},
		},
		{
			name: "a rollback no live cluster took is not recorded",
			snap: func() *snapshot {
				s := reportSnapshot(
					build("v2", release.Failing, 40, release.Step{State: release.Failing, Action: release.Sync}, 0),
					build("v1", release.Released, 60, release.Step{State: release.Released, Action: release.Sync}, 100))
				s.rollback = true
				return s
			},
			results: applier.Results{{Cluster: "east", Err: errors.New("connection refused")}, {Cluster: "west", Err: errors.New("connection refused")}},
			want: want{
				states:  map[string]string{"v2": "failing", "v1": "released"},
				weights: map[string]int32{"v2": 40, "v1": 60},
				ready:   metav1.ConditionFalse, reason: picchuv1alpha1.ReasonClustersUnavailable,
				next:     clusterRetry,
				unsynced: []string{"east", "west"},
			},
		},
		{
			name: "a due ramp step on every live cluster says when it was due, and runs again when the next is",
			snap: func() *snapshot {
				v2 := build("v2", release.Releasing, 25, release.Step{State: release.Releasing, Action: release.Sync}, 50)
				v2.ramping, v2.ramp = true, release.RampStep{Next: 50, WasDue: reportNow.Add(-2 * time.Second)}
				return reportSnapshot(v2, build("v1", release.Released, 75, release.Step{State: release.Released, Action: release.Sync}, 50))
			},
			want: want{
				states:  map[string]string{"v2": "releasing", "v1": "released"},
				weights: map[string]int32{"v2": 50, "v1": 50},
				// The step delay: 10 s when the release sets none.
				ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonProgressing, next: 10 * time.Second,
				stepsDue: []time.Time{reportNow.Add(-2 * time.Second)},
			},
		},
		{
			name: "a due ramp step a live cluster lacks is not taken, nor timed",
			snap: func() *snapshot {
				v2 := build("v2", release.Releasing, 25, release.Step{State: release.Releasing, Action: release.Sync}, 50)
				v2.ramping, v2.ramp = true, release.RampStep{Next: 50, WasDue: reportNow.Add(-2 * time.Second)}
				return reportSnapshot(v2, build("v1", release.Released, 75, release.Step{State: release.Released, Action: release.Sync}, 50))
			},
			results: applier.Results{{Cluster: "east"}, {Cluster: "west", Err: errors.New("connection refused")}},
			want: want{
				states:  map[string]string{"v2": "releasing", "v1": "released"},
				weights: map[string]int32{"v2": 25, "v1": 75},
				ready:   metav1.ConditionFalse, reason: picchuv1alpha1.ReasonClustersUnavailable, next: clusterRetry,
				unsynced: []string{"west"},
			},
		},
		{
			name: "a cluster that is down, with nothing changing, is retried within clusterRetry",
			snap: func() *snapshot {
				s := reportSnapshot(build("v1", release.Released, 100, release.Step{State: release.Released, Action: release.Sync}, 100))
				s.fleet[1].conn, s.fleet[1].problem = nil, "unreachable"
				return s
			},
			want: want{
				states: map[string]string{"v1": "released"}, weights: map[string]int32{"v1": 100},
				ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonClustersUnavailable, next: clusterRetry, unsynced: []string{"west"},
			},
		},
		{
			name: "a build a cluster rejects is held alone and reported, while the rollback goes on",
			snap: func() *snapshot {
				return reportSnapshot(
					build("v3", release.Deploying, 0, release.Step{State: release.Deploying, Action: release.Sync, Then: release.Deployed}, 0),
					build("v2", release.Failing, 0, release.Step{State: release.Failing, Action: release.Sync, Then: release.Failed}, 0),
					build("v1", release.Released, 100, release.Step{State: release.Released, Action: release.Sync}, 100))
			},
			results: applier.Results{{Cluster: "east", Err: &plan.Errors{Builds: map[string]error{"v3": invalid("v3"), "v2": invalid("v2")}}}, {Cluster: "west"}},
			want: want{
				states:  map[string]string{"v3": "deploying", "v2": "failed", "v1": "released"},
				weights: map[string]int32{"v3": 0, "v2": 0, "v1": 100},
				ready:   metav1.ConditionFalse, reason: picchuv1alpha1.ReasonClustersUnavailable,
				events: []string{
					"Normal StateChanged v2 failing → failed",
					"Warning Rejected v3 rejected by east: ReplicaSet.apps \"shop-v3\" is invalid: spec.template: Invalid value: \"x\": bad port name; " +
						"v2 rejected by east: ReplicaSet.apps \"shop-v2\" is invalid: spec.template: Invalid value: \"x\": bad port name",
					"Warning RolledBack v2 failed and was rolled back",
				},
				next: again, unsynced: []string{"east"},
			},
		},
		{
			name: "a build that times out stalls the ReleaseManager",
			snap: func() *snapshot {
				return reportSnapshot(build("v1", release.TimingOut, 0, release.Step{State: release.TimingOut}, 0))
			},
			want: want{
				states: map[string]string{"v1": "timingout"}, weights: map[string]int32{"v1": 0},
				ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonTimedOut, next: reportSyncPeriod,
			},
		},
		{
			name: "a state this version does not handle stalls the ReleaseManager",
			snap: func() *snapshot {
				return reportSnapshot(build("v1", "paused", 10, release.Step{State: "paused", Unknown: true}, 10))
			},
			want: want{
				states: map[string]string{"v1": "paused"}, weights: map[string]int32{"v1": 10},
				ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonUnknownState, next: reportSyncPeriod,
			},
		},
		{
			name: "alerts firing on a judged build are recorded, warned of, and read again soon",
			snap: func() *snapshot {
				inc := build("v2", release.Canarying, 10, release.Step{State: release.Canarying, Action: release.Sync, Due: reportNow.Add(time.Hour)}, 10)
				inc.verdict, inc.firing = release.Firing, []string{"shop_errors"}
				return reportSnapshot(inc, build("v1", release.Released, 90, release.Step{State: release.Released, Action: release.Sync}, 90))
			},
			want: want{
				states: map[string]string{"v2": "canarying", "v1": "released"}, weights: map[string]int32{"v2": 10, "v1": 90},
				ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonProgressing,
				events: []string{"Warning AlertsFiring v2: shop_errors firing while it was judged"},
				next:   reportAlertCheck,
			},
		},
		{
			name: "a step due soon runs then",
			snap: func() *snapshot {
				inc := build("v2", release.Releasing, 50, release.Step{State: release.Releasing, Action: release.Sync}, 50)
				inc.ramping, inc.ramp = true, release.RampStep{Due: reportNow.Add(3 * time.Second)}
				return reportSnapshot(inc)
			},
			want: want{
				states: map[string]string{"v2": "releasing"}, weights: map[string]int32{"v2": 50},
				ready: metav1.ConditionFalse, reason: picchuv1alpha1.ReasonProgressing, next: 3 * time.Second,
			},
		},
		{
			name: "an orphaned app runs again when its removal is due",
			snap: func() *snapshot {
				s := reportSnapshot(build("v1", release.Retired, 0, release.Step{State: release.Retired}, 0))
				s.orphanedSince = reportNow.Add(-time.Minute)
				s.removal = release.Removal{Due: reportNow.Add(4 * time.Minute)}
				return s
			},
			want: want{
				states: map[string]string{"v1": "retired"}, weights: map[string]int32{"v1": 0},
				ready: metav1.ConditionTrue, reason: picchuv1alpha1.ReasonSynced, next: time.Minute,
			},
		},
		{
			name: "a build deleted everywhere whose Revision is gone leaves the record",
			snap: func() *snapshot {
				inc := build("v1", release.Deleting, 0, release.Step{State: release.Deleting, Action: release.Delete, Then: release.Deleted}, 0)
				inc.revision, inc.target = nil, nil
				return reportSnapshot(inc)
			},
			want: want{
				states: map[string]string{}, weights: map[string]int32{},
				ready: metav1.ConditionTrue, reason: picchuv1alpha1.ReasonSynced,
				events: []string{"Normal StateChanged v1 deleting → deleted"}, next: again,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.snap()
			before := s.rm.Status.DeepCopy()
			out := report(s, settle(s, acted{results: tc.results}), reportSyncPeriod, reportAlertCheck)
			if !sameStatus(before, &s.rm.Status) {
				t.Errorf("report changed the snapshot's status")
			}
			states, weights := map[string]string{}, map[string]int32{}
			for _, st := range out.status.Revisions {
				states[st.Tag], weights[st.Tag] = st.State.Current, st.CurrentPercent
			}
			if !maps.Equal(states, tc.want.states) || !maps.Equal(weights, tc.want.weights) {
				t.Errorf("states %v weights %v, want %v %v", states, weights, tc.want.states, tc.want.weights)
			}
			ready := meta.FindStatusCondition(out.status.Conditions, picchuv1alpha1.ConditionReady)
			if ready == nil || ready.Status != tc.want.ready || ready.Reason != tc.want.reason {
				t.Errorf("Ready %+v, want %s %s", ready, tc.want.ready, tc.want.reason)
			}
			var events []string
			for _, e := range out.events {
				events = append(events, e.kind+" "+e.reason+" "+e.note)
			}
			if !slices.Equal(events, tc.want.events) {
				t.Errorf("events\n%s\nwant\n%s", strings.Join(events, "\n"), strings.Join(tc.want.events, "\n"))
			}
			if out.next != tc.want.next {
				t.Errorf("next run in %s, want %s", out.next, tc.want.next)
			}
			var unsynced []string
			for _, cs := range out.status.Clusters {
				if !cs.Synced {
					unsynced = append(unsynced, cs.Name)
					if cs.Message == "" {
						t.Errorf("cluster %s not synced, without a message", cs.Name)
					}
				}
			}
			if !slices.Equal(unsynced, tc.want.unsynced) {
				t.Errorf("clusters not synced %v, want %v", unsynced, tc.want.unsynced)
			}
			if !slices.EqualFunc(out.stepsDue, tc.want.stepsDue, time.Time.Equal) {
				t.Errorf("steps due at %v, want %v", out.stepsDue, tc.want.stepsDue)
			}
			checkKstatus(t, s.rm.Generation, &out.status)
		})
	}
}

// TestMergeEvents: a run's events of one kind and reason make one event,
// whose note names them all, within the API server's limit.
func TestMergeEvents(t *testing.T) {
	long := strings.Repeat("é", maxEventNote)
	for _, tc := range []struct {
		name string
		in   []statusEvent
		want []statusEvent
	}{
		{name: "none", in: nil, want: []statusEvent{}},
		{
			name: "two builds' state changes in one run make one event naming both, in order",
			in: []statusEvent{
				{kind: "Normal", reason: "StateChanged", note: "v2 releasing → released"},
				{kind: "Warning", reason: "RollingBack", note: "v3 failed"},
				{kind: "Normal", reason: "StateChanged", note: "v1 released → retiring"},
			},
			want: []statusEvent{
				{kind: "Normal", reason: "StateChanged", note: "v2 releasing → released; v1 released → retiring"},
				{kind: "Warning", reason: "RollingBack", note: "v3 failed"},
			},
		},
		{
			name: "a reason of two kinds makes two events",
			in:   []statusEvent{{kind: "Normal", reason: "R", note: "a"}, {kind: "Warning", reason: "R", note: "b"}},
			want: []statusEvent{{kind: "Normal", reason: "R", note: "a"}, {kind: "Warning", reason: "R", note: "b"}},
		},
		{
			name: "a note is cut to the API server's limit, on a rune",
			in:   []statusEvent{{kind: "Normal", reason: "R", note: "a"}, {kind: "Normal", reason: "R", note: long}},
			want: []statusEvent{{kind: "Normal", reason: "R", note: truncate("a; "+long, maxEventNote)}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeEvents(tc.in)
			if !slices.Equal(got, tc.want) {
				t.Errorf("mergeEvents = %q, want %q", got, tc.want)
			}
			for _, e := range got {
				if len(e.note) > maxEventNote || !utf8.ValidString(e.note) {
					t.Errorf("note of %d bytes (valid UTF-8: %t), over the limit of %d", len(e.note), utf8.ValidString(e.note), maxEventNote)
				}
			}
		})
	}
}

// TestReport_RetiredBuildCountsNoReplicas: a build recorded retired or
// failed counts no replica, whatever still terminates (its ReplicaSets were
// scaled to nothing before the state was recorded); its peak stays. One
// still retiring counts what runs.
func TestReport_RetiredBuildCountsNoReplicas(t *testing.T) {
	for _, tc := range []struct {
		step             release.Step
		current, desired int32
	}{
		{release.Step{State: release.Retiring, Action: release.Retire, Then: release.Retired}, 0, 0},
		{release.Step{State: release.Failing, Action: release.Retire, Then: release.Failed}, 0, 0},
		{release.Step{State: release.Retiring, Action: release.Sync}, 4, 4},
	} {
		inc := build("v1", tc.step.State, 0, tc.step, 0)
		inc.status.Scale.Peak = 6
		s := reportSnapshot(inc)
		for i := range s.observation {
			s.observation[i].Tags = map[string]release.Replicas{"v1": {Desired: 2, Available: 2}}
		}
		out := report(s, settle(s, acted{}), reportSyncPeriod, reportAlertCheck)
		got := out.status.Revisions[0]
		want := picchuv1alpha1.ReleaseManagerRevisionScaleStatus{Current: tc.current, Desired: tc.desired, Peak: 6}
		if got.Scale != want {
			t.Errorf("%s: scale %+v, want %+v", got.State.Current, got.Scale, want)
		}
	}
}

// TestScaleOnlyWait: a status that moved only in builds' replica counts
// waits for the next write, at most scaleRefresh after the last; any other
// change, or a status not written for scaleRefresh, is written at once.
func TestScaleOnlyWait(t *testing.T) {
	written := metav1.NewTime(reportNow.Add(-10 * time.Second))
	before := picchuv1alpha1.ReleaseManagerStatus{LastUpdated: &written, Revisions: []picchuv1alpha1.ReleaseManagerRevisionStatus{
		{Tag: "v2", State: picchuv1alpha1.ReleaseManagerRevisionStateStatus{Current: "deploying"}},
		{Tag: "v1", State: picchuv1alpha1.ReleaseManagerRevisionStateStatus{Current: "released"}, CurrentPercent: 100,
			Scale: picchuv1alpha1.ReleaseManagerRevisionScaleStatus{Current: 4, Desired: 4, Peak: 4}},
	}}
	for _, tc := range []struct {
		name   string
		change func(*picchuv1alpha1.ReleaseManagerStatus)
		now    time.Time
		want   time.Duration
	}{
		{"nothing moved: nothing to write", func(*picchuv1alpha1.ReleaseManagerStatus) {}, reportNow, 0},
		{"a ReplicaSet asked for: with the next write", func(st *picchuv1alpha1.ReleaseManagerStatus) { st.Revisions[0].Scale.Desired = 2 }, reportNow, 20 * time.Second},
		{"an autoscaler's step: with the next write", func(st *picchuv1alpha1.ReleaseManagerStatus) {
			st.Revisions[1].Scale.Desired, st.Revisions[1].Scale.Current = 6, 5
		}, reportNow, 20 * time.Second},
		{"replicas moved, and written scaleRefresh ago: now", func(st *picchuv1alpha1.ReleaseManagerStatus) { st.Revisions[0].Scale.Desired = 2 },
			written.Add(scaleRefresh), 0},
		{"a new peak: with the next write", func(st *picchuv1alpha1.ReleaseManagerStatus) {
			st.Revisions[1].Scale.Current, st.Revisions[1].Scale.Peak = 5, 5
		}, reportNow, 20 * time.Second},
		{"a percent moved: now", func(st *picchuv1alpha1.ReleaseManagerStatus) { st.Revisions[1].CurrentPercent = 75 }, reportNow, 0},
		{"replicas and a state moved: now", func(st *picchuv1alpha1.ReleaseManagerStatus) {
			st.Revisions[0].Scale.Desired, st.Revisions[0].State.Current = 2, "deployed"
		}, reportNow, 0},
		{"a new build: now", func(st *picchuv1alpha1.ReleaseManagerStatus) {
			st.Revisions = append(st.Revisions, picchuv1alpha1.ReleaseManagerRevisionStatus{Tag: "v3"})
		}, reportNow, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := before.DeepCopy()
			tc.change(after)
			if got := scaleOnlyWait(&before, after, tc.now); got != tc.want {
				t.Errorf("waits %s, want %s", got, tc.want)
			}
		})
	}
	if got := scaleOnlyWait(&picchuv1alpha1.ReleaseManagerStatus{}, &before, reportNow); got != 0 {
		t.Errorf("a status never written waits %s", got)
	}
}

// TestReport_RecordsEachClustersWeight: each build's record says what
// each cluster last took and when; a cluster that did not answer keeps its
// entry, stamped when it last changed.
func TestReport_RecordsEachClustersWeight(t *testing.T) {
	earlier := picchuv1alpha1.NewTimestamp(reportNow.Add(-time.Minute))
	v2 := build("v2", release.Failing, 40, release.Step{State: release.Failing, Action: release.Sync}, 0)
	v2.status.Clusters = []picchuv1alpha1.ReleaseManagerRevisionClusterStatus{
		{Name: "east", Percent: 40, LastUpdated: &earlier}, {Name: "west", Percent: 40, LastUpdated: &earlier},
	}
	v1 := build("v1", release.Released, 60, release.Step{State: release.Released, Action: release.Sync}, 100)
	s := reportSnapshot(v2, v1)
	s.rollback = true
	out := report(s, settle(s, acted{results: applier.Results{{Cluster: "east"}, {Cluster: "west", Err: errors.New("connection refused")}}}), reportSyncPeriod, reportAlertCheck)
	got := map[string]string{}
	for _, st := range out.status.Revisions {
		for _, c := range st.Clusters {
			got[st.Tag+"@"+c.Name] = fmt.Sprintf("%d%% at %s", c.Percent, c.LastUpdated.Format(time.RFC3339))
		}
	}
	at := func(t time.Time) string { return t.Format(time.RFC3339) }
	want := map[string]string{
		"v2@east": "0% at " + at(reportNow), "v2@west": "40% at " + at(earlier.Time),
		"v1@east": "100% at " + at(reportNow),
	}
	if !maps.Equal(got, want) {
		t.Errorf("per-cluster record %v, want %v", got, want)
	}
}

func TestClusterWeights(t *testing.T) {
	earlier := picchuv1alpha1.NewTimestamp(reportNow.Add(-time.Minute))
	now := picchuv1alpha1.NewTimestamp(reportNow)
	entry := func(name string, percent int32, at *picchuv1alpha1.Timestamp) picchuv1alpha1.ReleaseManagerRevisionClusterStatus {
		return picchuv1alpha1.ReleaseManagerRevisionClusterStatus{Name: name, Percent: percent, LastUpdated: at}
	}
	type entries = []picchuv1alpha1.ReleaseManagerRevisionClusterStatus
	both := map[string]bool{"east": true, "west": true}
	for _, tc := range []struct {
		name     string
		before   entries
		names    []string
		routed   map[string]bool
		weight   int32
		routable bool
		want     entries
	}{
		{"the first routing is stamped in every cluster", nil, []string{"east", "west"}, both, 10, true,
			entries{entry("east", 10, &now), entry("west", 10, &now)}},
		{"an unchanged weight keeps its stamp", entries{entry("east", 10, &earlier), entry("west", 10, &earlier)}, []string{"east", "west"}, both, 10, true,
			entries{entry("east", 10, &earlier), entry("west", 10, &earlier)}},
		{"a cluster not routed keeps what it had", entries{entry("east", 10, &earlier), entry("west", 10, &earlier)}, []string{"east", "west"},
			map[string]bool{"east": true}, 20, true, entries{entry("east", 20, &now), entry("west", 10, &earlier)}},
		{"a cluster never routed has no entry", nil, []string{"east", "west"}, map[string]bool{"west": true}, 20, true,
			entries{entry("west", 20, &now)}},
		{"a cluster gone from the fleet is dropped", entries{entry("east", 10, &earlier), entry("north", 10, &earlier)}, []string{"east"}, both, 10, true,
			entries{entry("east", 10, &earlier)}},
		{"a build no cluster routes to, and not routable, has no record", entries{entry("east", 10, &earlier)}, []string{"east"}, both, 0, false, nil},
		{"a build a lagging cluster still routes to keeps its record", entries{entry("east", 10, &earlier), entry("west", 10, &earlier)}, []string{"east", "west"},
			map[string]bool{"east": true}, 0, false, entries{entry("east", 0, &now), entry("west", 10, &earlier)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := clusterWeights(tc.before, tc.names, tc.routed, everywhere(tc.weight), reportNow, tc.routable)
			if g, w := fmt.Sprint(describeEntries(got)), fmt.Sprint(describeEntries(tc.want)); g != w {
				t.Errorf("clusterWeights = %s, want %s", g, w)
			}
		})
	}
}

// describeEntries says each entry as "name percent% at time".
func describeEntries(es []picchuv1alpha1.ReleaseManagerRevisionClusterStatus) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s %d%% at %s", e.Name, e.Percent, e.LastUpdated.Format(time.RFC3339Nano)))
	}
	if es == nil {
		return nil
	}
	return out
}

// checkKstatus checks the conditions follow kstatus: Ready is always
// there; Reconciling and Stalled are abnormal-true conditions, present
// only when True, and then Ready is False; every condition has a reason
// and the generation it was computed for.
func checkKstatus(t *testing.T, generation int64, st *picchuv1alpha1.ReleaseManagerStatus) {
	t.Helper()
	if st.ObservedGeneration != generation {
		t.Errorf("observedGeneration %d, want %d", st.ObservedGeneration, generation)
	}
	ready := meta.FindStatusCondition(st.Conditions, picchuv1alpha1.ConditionReady)
	if ready == nil {
		t.Fatalf("no Ready condition in %+v", st.Conditions)
	}
	for _, c := range st.Conditions {
		if c.Reason == "" || c.ObservedGeneration != generation {
			t.Errorf("condition %+v: want a reason and observedGeneration %d", c, generation)
		}
		if c.Status == metav1.ConditionFalse && c.Message == "" {
			t.Errorf("condition %s is False without a message", c.Type)
		}
		switch c.Type {
		case picchuv1alpha1.ConditionReconciling, picchuv1alpha1.ConditionStalled:
			if c.Status != metav1.ConditionTrue {
				t.Errorf("%s is %s: kstatus wants it True or absent", c.Type, c.Status)
			}
			if ready.Status != metav1.ConditionFalse {
				t.Errorf("%s is True while Ready is %s", c.Type, ready.Status)
			}
		}
	}
}

func mapsEqual[V comparable](a, b map[string]V) bool {
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

// TestClusterWeights_EachClusterSumsTo100: whatever clusters each run
// reaches, the per-cluster records of an app's builds say, for every
// cluster routed at least once, weights that sum to 100 (each cluster
// keeps the whole of the last routing it took).
func TestClusterWeights_EachClusterSumsTo100(t *testing.T) {
	names := []string{"east", "north", "west"}
	prop := func(seed int64) bool {
		rng := rand.New(rand.NewSource(seed))
		const builds = 3
		records := make([][]picchuv1alpha1.ReleaseManagerRevisionClusterStatus, builds)
		routedOnce := map[string]bool{}
		for run := range 20 {
			// A split of 100 among the builds, and the clusters reached.
			weights := make([]int32, builds)
			left := int32(100)
			for b := range builds - 1 {
				weights[b] = rng.Int31n(left + 1)
				left -= weights[b]
			}
			weights[builds-1] = left
			routed := map[string]bool{}
			for _, n := range names {
				if rng.Intn(3) > 0 {
					routed[n], routedOnce[n] = true, true
				}
			}
			now := reportNow.Add(time.Duration(run) * time.Second)
			for b := range builds {
				records[b] = clusterWeights(records[b], names, routed, everywhere(weights[b]), now, rng.Intn(2) == 0)
			}
			for _, n := range names {
				if !routedOnce[n] {
					continue
				}
				sum := int32(0)
				for b := range builds {
					for _, e := range records[b] {
						if e.Name == n {
							sum += e.Percent
						}
					}
				}
				if sum != 100 {
					t.Logf("seed %d, run %d: %s sums to %d", seed, run, n, sum)
					return false
				}
			}
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 300}); err != nil {
		t.Error(err)
	}
}

// TestReport_SaysWhichCanaryNoRequestReached: CanaryEvidence is False,
// naming the canary and the metric, while one holds, and gone after.
func TestReport_SaysWhichCanaryNoRequestReached(t *testing.T) {
	s := reportSnapshot(build("v2", release.Canarying, 10, release.Step{State: release.Canarying, Action: release.Sync}, 10),
		build("v1", release.Released, 90, release.Step{State: release.Released, Action: release.Sync}, 90))
	s.noEvidence = []string{"v2: no request counted for its tag in shop:availability:total"}
	out := report(s, settle(s, acted{results: applier.Results{{Cluster: "east"}, {Cluster: "west"}}}), reportSyncPeriod, reportAlertCheck)
	c := meta.FindStatusCondition(out.status.Conditions, picchuv1alpha1.ConditionCanaryEvidence)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != picchuv1alpha1.ReasonNoTraffic || !strings.Contains(c.Message, "v2: no request counted") {
		t.Errorf("CanaryEvidence %+v, want False (%s) naming v2", c, picchuv1alpha1.ReasonNoTraffic)
	}
	s.rm.Status = out.status
	s.noEvidence = nil
	out = report(s, settle(s, acted{results: applier.Results{{Cluster: "east"}, {Cluster: "west"}}}), reportSyncPeriod, reportAlertCheck)
	if c := meta.FindStatusCondition(out.status.Conditions, picchuv1alpha1.ConditionCanaryEvidence); c != nil {
		t.Errorf("CanaryEvidence %+v once requests were counted, want none", c)
	}
}

// everywhere is the same weight in every cluster.
func everywhere(weight int32) func(string) int32 { return func(string) int32 { return weight } }

// TestReport_AStepCountsFromWhenEveryClusterHadIt: a ramp step is stamped
// when the last cluster took its weights, not when its run started, on the
// build and on each cluster; the next step is due a delay after that, so
// no cluster holds a step shorter than its delay however slowly its API
// server wrote it.
func TestReport_AStepCountsFromWhenEveryClusterHadIt(t *testing.T) {
	v2 := build("v2", release.Releasing, 25, release.Step{State: release.Releasing, Action: release.Sync}, 50)
	v2.ramping, v2.ramp = true, release.RampStep{Next: 50}
	v1 := build("v1", release.Released, 75, release.Step{State: release.Released, Action: release.Sync}, 50)
	s := reportSnapshot(v2, v1)
	landed := reportNow.Add(1500 * time.Millisecond)
	out := report(s, settle(s, acted{results: applier.Results{{Cluster: "east"}, {Cluster: "west"}}, at: landed}), reportSyncPeriod, reportAlertCheck)
	for _, st := range out.status.Revisions {
		if st.LastUpdated == nil || !st.LastUpdated.Equal(landed) {
			t.Errorf("%s's step stamped %v, want %s", st.Tag, st.LastUpdated, landed)
		}
		for _, c := range st.Clusters {
			if c.LastUpdated == nil || !c.LastUpdated.Equal(landed) {
				t.Errorf("%s's step on %s stamped %v, want %s", st.Tag, c.Name, c.LastUpdated, landed)
			}
		}
	}
	delay := release.StepDelay(picchuv1alpha1.ReleaseInfo{})
	if want := landed.Add(delay).Sub(reportNow); out.next != want {
		t.Errorf("next run in %s, want %s: a delay after every cluster had the step", out.next, want)
	}
	if !out.stepDue.Equal(landed.Add(delay)) || *runPriority(out.stepDue) != priorityStep {
		t.Errorf("next step due %s, run at priority %d; want %s, %d (ahead of watch events)",
			out.stepDue, *runPriority(out.stepDue), landed.Add(delay), priorityStep)
	}
}

// TestReport_OnlyADueStepRunsAhead: a run whose next wake is no ramp step
// (a released build, a deploy) is queued at the priority of watch events.
func TestReport_OnlyADueStepRunsAhead(t *testing.T) {
	sync := release.Step{State: release.Released, Action: release.Sync}
	s := reportSnapshot(build("v1", release.Released, 100, sync, 100),
		build("v2", release.Deploying, 0, release.Step{State: release.Deploying, Action: release.Sync}, 0))
	out := report(s, settle(s, acted{results: applier.Results{{Cluster: "east"}, {Cluster: "west"}}}), reportSyncPeriod, reportAlertCheck)
	if !out.stepDue.IsZero() || *runPriority(out.stepDue) != priorityOther {
		t.Errorf("no step due, yet stepDue %s, priority %d; want none, %d", out.stepDue, *runPriority(out.stepDue), priorityOther)
	}
}

// TestMoveOf: a ramp's step runs the ReleaseManager again when the next
// one is due, a delay after the step was stamped (when every cluster had
// it, here 700 ms into the run); any other move of traffic at once.
func TestMoveOf(t *testing.T) {
	landed := reportNow.Add(700 * time.Millisecond)
	sync := release.Step{State: release.Releasing, Action: release.Sync}
	ramping := func(recorded, next int32) *incarnation {
		inc := build("v2", release.Releasing, recorded, sync, next)
		inc.ramping, inc.ramp = true, release.RampStep{Next: next}
		return inc
	}
	delay := release.StepDelay(picchuv1alpha1.ReleaseInfo{})
	for _, tc := range []struct {
		name      string
		inc       *incarnation
		took      int32
		waves     bool
		wantNext  time.Time
		wantOther bool
	}{
		{"unmoved", ramping(25, 25), 25, false, time.Time{}, false},
		{"a ramp's step: when the next is due", ramping(25, 50), 50, false, landed.Add(delay), false},
		{"a ramp's last step: at once", ramping(50, 100), 100, false, time.Time{}, true},
		{"down, to the ramping build: with its steps", build("v1", release.Released, 75, sync, 50), 50, false, time.Time{}, false},
		{"down to nothing: at once", build("v3", release.Failing, 25, release.Step{State: release.Failing, Action: release.Sync}, 0), 0, false,
			time.Time{}, true},
		{"up, not by its ramp's step: at once", build("v1", release.Released, 50, sync, 100), 100, false, time.Time{}, true},
		{"a ramp's step, not the one decided: at once", ramping(25, 50), 100, false, time.Time{}, true},
		{"in waves: at once", ramping(25, 50), 50, true, time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := reportSnapshot(tc.inc)
			if tc.waves {
				s.waves = []picchuv1alpha1.ReleaseWave{{Name: "canary"}, {Name: "rest"}}
			}
			st := tc.inc.status
			if st.CurrentPercent != tc.took {
				stamp := picchuv1alpha1.NewTimestamp(landed)
				st.CurrentPercent, st.LastUpdated = tc.took, &stamp
			}
			next, other := s.moveOf(tc.inc, st)
			if !next.Equal(tc.wantNext) || other != tc.wantOther {
				t.Errorf("moveOf = %s, %t; want %s, %t", next, other, tc.wantNext, tc.wantOther)
			}
		})
	}
}

// TestFromStart: a wait decided at a run's start is counted from it, not
// from the run's end, and is never less than again.
func TestFromStart(t *testing.T) {
	for _, tc := range []struct {
		wait, took, want time.Duration
	}{
		{2 * time.Second, 700 * time.Millisecond, 1300 * time.Millisecond},
		{2 * time.Second, 3 * time.Second, again},
		{again, time.Second, again},
		{0, time.Second, 0},
		{time.Minute, 0, time.Minute},
	} {
		if got := fromStart(tc.wait, reportNow, reportNow.Add(tc.took)); got != tc.want {
			t.Errorf("fromStart(%s) after a run of %s = %s, want %s", tc.wait, tc.took, got, tc.want)
		}
	}
}

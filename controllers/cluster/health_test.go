package cluster

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/breaker"
)

func TestNextCheck(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	const period = 15 * time.Second
	for _, tc := range []struct {
		name string
		h    breaker.Snapshot
		want time.Duration
	}{
		{"an API server that answered with an error is asked again after the period", breaker.Snapshot{State: breaker.Closed}, period},
		{"a failure that counts is checked again within a second", breaker.Snapshot{State: breaker.Closed, ConsecutiveFailures: 1}, failedCheckRetry},
		{"an open breaker is probed when it lets a probe through", breaker.Snapshot{State: breaker.Open, RetryAt: now.Add(4 * time.Second)}, 4 * time.Second},
		{"never later than the period", breaker.Snapshot{State: breaker.Open, RetryAt: now.Add(5 * time.Minute)}, period},
		{"a probe already due is made at once", breaker.Snapshot{State: breaker.Open, RetryAt: now.Add(-time.Second)}, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextCheck(tc.h, period, now); got != tc.want {
				t.Errorf("nextCheck = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSetHealth_LatencyOnlyWhenItMoves: a healthy cluster's status is the
// same from one check to the next, so checking it writes nothing; a
// latency that doubled or halved by 100 ms at least is written (a few
// milliseconds' jitter is not), and one of a check that got no answer
// never is.
func TestSetHealth_LatencyOnlyWhenItMoves(t *testing.T) {
	since := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	closed := breaker.Snapshot{State: breaker.Closed, Since: since}
	cl := &picchuv1alpha1.Cluster{}
	for _, step := range []struct {
		latency  time.Duration
		answered bool
		want     time.Duration
	}{
		{10 * time.Millisecond, true, 10 * time.Millisecond},
		{40 * time.Millisecond, true, 10 * time.Millisecond},
		{2 * time.Millisecond, true, 10 * time.Millisecond},
		{150 * time.Millisecond, true, 150 * time.Millisecond},
		{250 * time.Millisecond, true, 150 * time.Millisecond},
		{400 * time.Millisecond, true, 400 * time.Millisecond},
		{5 * time.Second, false, 400 * time.Millisecond},
		{10 * time.Millisecond, true, 10 * time.Millisecond},
	} {
		setHealth(cl, closed, step.latency, step.answered)
		h := cl.Status.Health
		if h.Breaker != "Closed" || !h.Since.Equal(&metav1.Time{Time: since}) || h.RetryAt != nil || h.Latency == nil || h.Latency.Duration != step.want {
			t.Errorf("after a check of %s (answered %t): %+v, want Closed since %s, latency %s", step.latency, step.answered, h, since, step.want)
		}
	}
	open := breaker.Snapshot{State: breaker.Open, Since: since, LastError: "dial tcp: connection refused", RetryAt: since.Add(time.Second)}
	setHealth(cl, open, 0, false)
	if h := cl.Status.Health; h.Breaker != "Open" || h.LastError == "" || h.RetryAt == nil || !h.RetryAt.Time.Equal(open.RetryAt) {
		t.Errorf("open: %+v, want the breaker open with its last error and next probe", h)
	}
}

// TestSetHealth_StoredStatusIsUnchanged: a check of a cluster whose
// breaker has not moved computes the status the API server stored (its
// times to the second), so the controller writes nothing.
func TestSetHealth_StoredStatusIsUnchanged(t *testing.T) {
	since := time.Date(2026, 11, 25, 9, 0, 0, 123456789, time.UTC)
	for _, h := range []breaker.Snapshot{
		{State: breaker.Closed, Since: since},
		{State: breaker.Open, Since: since, LastError: "dial tcp: connection refused", RetryAt: since.Add(1500 * time.Millisecond)},
	} {
		cl := &picchuv1alpha1.Cluster{}
		setHealth(cl, h, 20*time.Millisecond, h.State == breaker.Closed)
		data, err := json.Marshal(cl)
		if err != nil {
			t.Fatal(err)
		}
		stored := &picchuv1alpha1.Cluster{}
		if err := json.Unmarshal(data, stored); err != nil {
			t.Fatal(err)
		}
		next := stored.DeepCopy()
		setHealth(next, h, 21*time.Millisecond, h.State == breaker.Closed)
		if !equality.Semantic.DeepEqual(stored.Status, next.Status) {
			t.Errorf("%s: the next check changed the stored status\n%+v\n%+v", h.State, stored.Status.Health, next.Status.Health)
		}
	}
}

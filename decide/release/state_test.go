package release

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

func TestNext(t *testing.T) {
	to := DefaultTimeouts
	for _, tc := range []struct {
		name string
		f    Facts
		want Step
	}{
		{"new build starts deploying with a deadline",
			Facts{Now: t0, RevisionExists: true},
			Step{State: Deploying, Action: Sync, Due: t0.Add(15 * time.Minute)}},
		{"created deploys",
			Facts{Now: t0, State: Created, Since: t0.Add(-time.Minute), RevisionExists: true},
			Step{State: Deploying, Action: Sync, Due: t0.Add(15 * time.Minute)}},
		{"created too long times out",
			Facts{Now: t0, State: Created, Since: t0.Add(-61 * time.Minute), RevisionExists: true},
			Step{State: TimingOut}},
		{"created without revision is deleted",
			Facts{Now: t0, State: Created, Since: t0},
			Step{State: Deleting, Action: Delete, Then: Deleted}},
		{"deploying, not yet deployed: sync and come back at the deadline",
			Facts{Now: t0, State: Deploying, Since: t0.Add(-time.Minute), RevisionExists: true, Deployment: NotDeployed},
			Step{State: Deploying, Action: Sync, Due: t0.Add(14 * time.Minute)}},
		{"deploying, unknown: hold on data it cannot see, deadline still runs",
			Facts{Now: t0, State: Deploying, Since: t0.Add(-time.Minute), RevisionExists: true, Deployment: Unknown},
			Step{State: Deploying, Action: Sync, Due: t0.Add(14 * time.Minute)}},
		{"deploying and deployed: deployed once the sync succeeds",
			Facts{Now: t0, State: Deploying, Since: t0.Add(-time.Minute), RevisionExists: true, Deployment: IsDeployed},
			Step{State: Deploying, Action: Sync, Then: Deployed}},
		{"deployed at the deadline still counts",
			Facts{Now: t0, State: Deploying, Since: t0.Add(-20 * time.Minute), RevisionExists: true, Deployment: IsDeployed},
			Step{State: Deploying, Action: Sync, Then: Deployed}},
		{"deploy deadline passed",
			Facts{Now: t0, State: Deploying, Since: t0.Add(-15 * time.Minute), RevisionExists: true, Deployment: NotDeployed},
			Step{State: TimingOut}},
		{"deploying without revision is deleted",
			Facts{Now: t0, State: Deploying, Since: t0},
			Step{State: Deleting, Action: Delete, Then: Deleted}},
		{"deployed stays deployed",
			Facts{Now: t0, State: Deployed, Since: t0, RevisionExists: true, Deployment: IsDeployed, Percent: 100},
			Step{State: Deployed, Action: Sync}},
		{"deployed holds while a cluster cannot be seen",
			Facts{Now: t0, State: Deployed, Since: t0, RevisionExists: true, Deployment: Unknown},
			Step{State: Deployed, Action: Sync}},
		{"deployed that lost replicas deploys again",
			Facts{Now: t0, State: Deployed, Since: t0, RevisionExists: true, Deployment: NotDeployed},
			Step{State: Deploying, Action: Sync, Due: t0.Add(15 * time.Minute)}},
		{"deployed without revision and traffic is deleted",
			Facts{Now: t0, State: Deployed, Since: t0},
			Step{State: Deleting, Action: Delete, Then: Deleted}},
		{"deployed without revision keeps serving until traffic moves",
			Facts{Now: t0, State: Deployed, Since: t0, Percent: 100},
			Step{State: Deleting, Action: Sync}},
		{"deleting with traffic keeps serving",
			Facts{Now: t0, State: Deleting, Since: t0, Percent: 40},
			Step{State: Deleting, Action: Sync}},
		{"deleting without traffic deletes",
			Facts{Now: t0, State: Deleting, Since: t0},
			Step{State: Deleting, Action: Delete, Then: Deleted}},
		{"deleting whose revision came back deploys",
			Facts{Now: t0, State: Deleting, Since: t0, RevisionExists: true},
			Step{State: Deploying, Action: Sync, Due: t0.Add(15 * time.Minute)}},
		{"deleting without traffic holds its pods while it drains",
			Facts{Now: t0, State: Deleting, Since: t0, DrainEnd: t0.Add(20 * time.Second)},
			Step{State: Deleting, Action: Hold, Due: t0.Add(20 * time.Second)}},
		{"deleting deletes once drained",
			Facts{Now: t0, State: Deleting, Since: t0, DrainEnd: t0},
			Step{State: Deleting, Action: Delete, Then: Deleted}},
		{"retiring without traffic is retired, its pods held while it drains",
			Facts{Now: t0, State: Retiring, Since: t0, RevisionExists: true, DrainEnd: t0.Add(time.Second)},
			Step{State: Retiring, Action: Hold, Then: Retired, Due: t0.Add(time.Second)}},
		{"retiring, brought back while it serves, ramps again",
			Facts{Now: t0, State: Retiring, Since: t0, RevisionExists: true, Eligible: true, Percent: 30},
			Step{State: Releasing, Action: Sync}},
		{"retired holds its pods while it drains",
			Facts{Now: t0, State: Retired, Since: t0, RevisionExists: true, DrainEnd: t0.Add(30 * time.Second)},
			Step{State: Retired, Action: Hold, Due: t0.Add(30 * time.Second)}},
		{"retired retires once drained",
			Facts{Now: t0, State: Retired, Since: t0, RevisionExists: true, DrainEnd: t0.Add(-time.Second)},
			Step{State: Retired, Action: Retire}},
		{"failing without traffic is failed, its pods held while it drains",
			Facts{Now: t0, State: Failing, Since: t0, RevisionExists: true, Failed: true, DrainEnd: t0.Add(time.Second)},
			Step{State: Failing, Action: Hold, Then: Failed, Due: t0.Add(time.Second)}},
		{"failed holds its pods while it drains",
			Facts{Now: t0, State: Failed, Since: t0, RevisionExists: true, Failed: true, DrainEnd: t0.Add(time.Second)},
			Step{State: Failed, Action: Hold, Due: t0.Add(time.Second)}},
		{"a releasing build its alerts fire for is not released",
			Facts{Now: t0, State: Releasing, Since: t0, RevisionExists: true, Eligible: true, PeakPercent: 100, Verdict: Firing},
			Step{State: Releasing, Action: Sync}},
		{"deleted is dropped",
			Facts{Now: t0, State: Deleted, Since: t0},
			Step{State: Deleted, Drop: true}},
		{"deleted whose revision came back deploys",
			Facts{Now: t0, State: Deleted, Since: t0, RevisionExists: true},
			Step{State: Deploying, Action: Sync, Due: t0.Add(15 * time.Minute)}},
		{"timingout is stuck",
			Facts{Now: t0, State: TimingOut, Since: t0, RevisionExists: true, Deployment: IsDeployed},
			Step{State: TimingOut}},
		{"a redeploying build whose revision is gone serves until traffic moves",
			Facts{Now: t0, State: Deploying, Since: t0, Percent: 100},
			Step{State: Deleting, Action: Sync}},
		{"timingout without revision is deleted",
			Facts{Now: t0, State: TimingOut, Since: t0},
			Step{State: Deleting, Action: Delete, Then: Deleted}},
		{"a state of the release engine is held and reported",
			Facts{Now: t0, State: "canaryingdatadog", Since: t0, RevisionExists: true},
			Step{State: "canaryingdatadog", Unknown: true}},
		{"missing timestamps never time out",
			Facts{Now: t0, State: Deploying, RevisionExists: true, Deployment: NotDeployed},
			Step{State: Deploying, Action: Sync, Due: time.Time{}.Add(15 * time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Next(tc.f, to); got != tc.want {
				t.Errorf("Next(%+v)\n got %+v\nwant %+v", tc.f, got, tc.want)
			}
		})
	}
}

// FuzzNext feeds Next any stored status: it never panics, always names a
// state, never asks to act on an unknown state, only deletes or retires a
// build that takes no traffic, and never moves a build it does not know.
func FuzzNext(f *testing.F) {
	f.Add("deploying", int64(0), int64(60), true, 2, int32(0), uint16(0), int64(0), int64(0))
	f.Add("", int64(-1), int64(0), false, 0, int32(100), uint16(0xffff), int64(-1), int64(1<<40))
	f.Add("canarying", int64(1<<40), int64(-5), true, 1, int32(-3), uint16(0x0f0f), int64(5), int64(3600))
	f.Add("testing", int64(10), int64(20), true, 2, int32(0), uint16(0x0031), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, state string, since, now int64, exists bool, deployment int, percent int32, flags uint16, created, ttl int64) {
		bit := func(n uint) bool { return flags&(1<<n) != 0 }
		facts := Facts{
			Now: time.Unix(now, 0), State: State(state), Since: time.Unix(since, 0),
			RevisionExists: exists, Deployment: Deployment(deployment), Percent: percent,
			Failed: bit(0), Eligible: bit(1), Created: time.Unix(created, 0), TTL: time.Duration(ttl) * time.Second,
			PeakPercent: int32(flags >> 8), MaxPercent: percent / 2,
			Test: ExternalTest{Enabled: bit(2), Started: bit(3), Completed: bit(4), Succeeded: bit(5),
				LastUpdated: time.Unix(since/2, 0), Timeout: time.Duration(ttl)},
			Canary:  Canary{Percent: int32(flags & 0x7f), TTL: time.Duration(ttl), HasSLOs: bit(6), Start: time.Unix(created, 0)},
			Window:  Window{Open: bit(7), Opens: time.Unix(now+ttl, 0)},
			Verdict: Verdict(flags>>9) % 4,
		}
		if bit(8) {
			facts.Since, facts.Created, facts.Test.LastUpdated, facts.Canary.Start = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		}
		s := Next(facts, DefaultTimeouts)
		if s.State == "" {
			t.Fatalf("no state for %+v", facts)
		}
		if s.Unknown && (s.Action != Hold || s.Then != "" || s.State != State(state)) {
			t.Fatalf("acts on unknown state: %+v", s)
		}
		if (s.Action == Delete || s.Action == Retire) && percent > 0 {
			t.Fatalf("%s a build with %d%% of traffic: %+v -> %+v", s.Action, percent, facts, s)
		}
		if s.Action == Delete && exists {
			t.Fatalf("deletes a build whose Revision exists: %+v -> %+v", facts, s)
		}
		if facts.State == Canarying && facts.Verdict.Holds() && s.State == Canaried {
			t.Fatalf("a canary passes while its alerts are %s: %+v", facts.Verdict, facts)
		}
	})
}

package release

import (
	"testing"
	"time"
)

// TestNext_EveryState covers every state of the release engine and each of
// its exits, in the order they are checked.
func TestNext_EveryState(t *testing.T) {
	to := DefaultTimeouts
	hour := time.Hour
	// base is an eligible, deployed build with nothing configured.
	base := func(s State) Facts {
		return Facts{Now: t0, State: s, Since: t0.Add(-time.Minute), RevisionExists: true, Deployment: IsDeployed,
			Eligible: true, Created: t0.Add(-hour), TTL: 24 * hour, MaxPercent: 100}
	}
	with := func(s State, change func(*Facts)) Facts {
		f := base(s)
		change(&f)
		return f
	}
	canary := Canary{Percent: 10, TTL: 5 * time.Minute, HasSLOs: true}
	test := ExternalTest{Enabled: true, Timeout: 30 * time.Minute}
	for _, tc := range []struct {
		name string
		f    Facts
		want Step
	}{
		// deploying
		{"deploying: failed fails", with(Deploying, func(f *Facts) { f.Failed = true }), Step{State: Failing, Action: Sync}},
		{"deploying: external test failed fails", with(Deploying, func(f *Facts) {
			f.Test = ExternalTest{Enabled: true, Started: true, Completed: true}
		}), Step{State: Failing, Action: Sync}},
		// deployed
		{"deployed: failed fails", with(Deployed, func(f *Facts) { f.Failed = true }), Step{State: Failing, Action: Sync}},
		{"deployed: eligible without canary waits for release", base(Deployed), Step{State: PendingRelease, Action: Sync}},
		{"deployed: eligible with canary canaries", with(Deployed, func(f *Facts) { f.Canary = canary }), Step{State: Canarying, Action: Sync}},
		{"deployed: a canary without SLOs is skipped", with(Deployed, func(f *Facts) { f.Canary = canary; f.Canary.HasSLOs = false }),
			Step{State: PendingRelease, Action: Sync}},
		{"deployed: a canary that already ran is not run again", with(Deployed, func(f *Facts) {
			f.Canary = canary
			f.Canary.Start = t0.Add(-time.Hour)
		}), Step{State: PendingRelease, Action: Sync}},
		{"deployed: not eligible waits for its TTL", with(Deployed, func(f *Facts) { f.Eligible = false }),
			Step{State: Deployed, Action: Sync, Due: t0.Add(23 * hour)}},
		{"deployed: not eligible past its TTL retires", with(Deployed, func(f *Facts) { f.Eligible = false; f.TTL = hour }),
			Step{State: Retiring, Action: Sync}},
		{"deployed: unknown fleet holds", with(Deployed, func(f *Facts) { f.Deployment = Unknown }), Step{State: Deployed, Action: Sync}},
		{"deployed: external test pending", with(Deployed, func(f *Facts) { f.Test = test }),
			Step{State: PendingTest, Action: Sync, Due: t0.Add(30 * time.Minute)}},
		{"deployed: external test started", with(Deployed, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.LastUpdated = true, t0.Add(-10*time.Minute)
		}), Step{State: Testing, Action: Sync, Due: t0.Add(20 * time.Minute)}},
		{"deployed: external test succeeded", with(Deployed, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.Completed, f.Test.Succeeded = true, true, true
		}), Step{State: Tested, Action: Sync}},
		// pendingtest
		{"pendingtest: failed fails", with(PendingTest, func(f *Facts) { f.Test = test; f.Failed = true }), Step{State: Failing, Action: Sync}},
		{"pendingtest: waits until the test's own timeout", with(PendingTest, func(f *Facts) { f.Test = test; f.Since = t0.Add(-20 * time.Minute) }),
			Step{State: PendingTest, Action: Sync, Due: t0.Add(10 * time.Minute)}},
		{"pendingtest: the default test timeout applies, not 15 minutes", with(PendingTest, func(f *Facts) {
			f.Test = ExternalTest{Enabled: true}
			f.Since = t0.Add(-time.Hour)
		}), Step{State: PendingTest, Action: Sync, Due: t0.Add(hour)}},
		{"pendingtest: timed out", with(PendingTest, func(f *Facts) { f.Test = test; f.Since = t0.Add(-30 * time.Minute) }),
			Step{State: TimingOut}},
		{"pendingtest: started", with(PendingTest, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.LastUpdated = true, t0
		}), Step{State: Testing, Action: Sync, Due: t0.Add(30 * time.Minute)}},
		{"pendingtest: succeeded", with(PendingTest, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.Completed, f.Test.Succeeded = true, true, true
		}), Step{State: Tested, Action: Sync}},
		{"pendingtest: test disabled", with(PendingTest, func(f *Facts) {}), Step{State: Deployed, Action: Sync}},
		// testing
		{"testing: the test failed", with(Testing, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.Completed = true, true
		}), Step{State: Failing, Action: Sync}},
		{"testing: spec.failed is honoured", with(Testing, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Failed = true, true
		}), Step{State: Failing, Action: Sync}},
		{"testing: timed out after the runner's last report", with(Testing, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.LastUpdated = true, t0.Add(-31*time.Minute)
		}), Step{State: TimingOut}},
		{"testing: runs", with(Testing, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.LastUpdated = true, t0.Add(-time.Minute)
		}), Step{State: Testing, Action: Sync, Due: t0.Add(29 * time.Minute)}},
		{"testing: back to pending", with(Testing, func(f *Facts) { f.Test = test; f.Test.LastUpdated = t0 }),
			Step{State: PendingTest, Action: Sync, Due: t0.Add(30 * time.Minute)}},
		{"testing: succeeded", with(Testing, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.Completed, f.Test.Succeeded = true, true, true
		}), Step{State: Tested, Action: Sync}},
		{"testing: test disabled", base(Testing), Step{State: Deployed, Action: Sync}},
		// tested
		{"tested: failed fails", with(Tested, func(f *Facts) { f.Failed = true }), Step{State: Failing, Action: Sync}},
		{"tested: eligible canaries", with(Tested, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.Completed, f.Test.Succeeded = true, true, true
			f.Canary = canary
		}), Step{State: Canarying, Action: Sync}},
		{"tested: eligible waits for release", base(Tested), Step{State: PendingRelease, Action: Sync}},
		{"tested: not eligible waits for its TTL, never times out", with(Tested, func(f *Facts) { f.Eligible = false; f.Since = t0.Add(-hour) }),
			Step{State: Tested, Action: Sync, Due: t0.Add(23 * hour)}},
		{"tested: test started again", with(Tested, func(f *Facts) {
			f.Test = test
			f.Test.Started, f.Test.LastUpdated = true, t0
		}), Step{State: Testing, Action: Sync, Due: t0.Add(30 * time.Minute)}},
		// canarying
		{"canarying: failed fails", with(Canarying, func(f *Facts) { f.Failed = true; f.Canary = canary }), Step{State: Failing, Action: Sync}},
		{"canarying: not started yet", with(Canarying, func(f *Facts) { f.Canary = canary }), Step{State: Canarying, Action: Sync}},
		{"canarying: runs until start + ttl", with(Canarying, func(f *Facts) { f.Canary = canary; f.Canary.Start = t0.Add(-time.Minute) }),
			Step{State: Canarying, Action: Sync, Due: t0.Add(4 * time.Minute)}},
		{"canarying: done", with(Canarying, func(f *Facts) { f.Canary = canary; f.Canary.Start = t0.Add(-5 * time.Minute) }),
			Step{State: Canaried, Action: Sync}},
		{"canarying: canary removed from the spec", base(Canarying), Step{State: Canaried, Action: Sync}},
		{"canarying: done but alerts cannot be read holds", with(Canarying, func(f *Facts) {
			f.Canary = canary
			f.Canary.Start = t0.Add(-5 * time.Minute)
			f.Verdict = Unobserved
		}), Step{State: Canarying, Action: Sync}},
		{"canarying: done but alerts fire holds", with(Canarying, func(f *Facts) {
			f.Canary = canary
			f.Canary.Start = t0.Add(-5 * time.Minute)
			f.Verdict = Firing
		}), Step{State: Canarying, Action: Sync}},
		{"canarying: done but no request reached it holds", with(Canarying, func(f *Facts) {
			f.Canary = canary
			f.Canary.Start = t0.Add(-5 * time.Minute)
			f.Verdict = NoEvidence
		}), Step{State: Canarying, Action: Sync}},
		{"canarying: done and healthy passes", with(Canarying, func(f *Facts) {
			f.Canary = canary
			f.Canary.Start = t0.Add(-5 * time.Minute)
			f.Verdict = Healthy
		}), Step{State: Canaried, Action: Sync}},
		{"canarying: firing and failed fails", with(Canarying, func(f *Facts) { f.Canary = canary; f.Failed = true; f.Verdict = Firing }),
			Step{State: Failing, Action: Sync}},
		// canaried
		{"canaried: failed fails", with(Canaried, func(f *Facts) { f.Failed = true }), Step{State: Failing, Action: Sync}},
		{"canaried: waits for release", base(Canaried), Step{State: PendingRelease, Action: Sync}},
		{"canaried: not eligible retires", with(Canaried, func(f *Facts) { f.Eligible = false }), Step{State: Retiring, Action: Sync}},
		// pendingrelease
		{"pendingrelease: failed fails", with(PendingRelease, func(f *Facts) { f.Failed = true }), Step{State: Failing, Action: Sync}},
		{"pendingrelease: not eligible retires", with(PendingRelease, func(f *Facts) { f.Eligible = false }), Step{State: Retiring, Action: Sync}},
		{"pendingrelease: schedule open releases", with(PendingRelease, func(f *Facts) { f.Window.Open = true }), Step{State: Releasing, Action: Sync}},
		{"pendingrelease: waits for the window", with(PendingRelease, func(f *Facts) { f.Window.Opens = t0.Add(3 * hour) }),
			Step{State: PendingRelease, Action: Sync, Due: t0.Add(3 * hour)}},
		// releasing
		{"releasing: failed fails", with(Releasing, func(f *Facts) { f.Failed = true; f.Percent = 40 }), Step{State: Failing, Action: Sync}},
		{"releasing: lost its traffic retires", with(Releasing, func(f *Facts) { f.Eligible = false }), Step{State: Retiring, Action: Sync}},
		{"releasing: ramps", with(Releasing, func(f *Facts) { f.Percent, f.PeakPercent = 40, 40 }), Step{State: Releasing, Action: Sync}},
		{"releasing: released at 100", with(Releasing, func(f *Facts) { f.Percent, f.PeakPercent = 100, 100 }), Step{State: Released, Action: Sync}},
		{"releasing: released at its max", with(Releasing, func(f *Facts) { f.Percent, f.PeakPercent, f.MaxPercent = 50, 50, 50 }),
			Step{State: Released, Action: Sync}},
		{"releasing: at 100 with waves of clusters left ramps on", with(Releasing, func(f *Facts) { f.Percent, f.PeakPercent, f.WavesLeft = 100, 100, true }),
			Step{State: Releasing, Action: Sync}},
		{"releasing: a recommissioned build is released at once", with(Releasing, func(f *Facts) { f.PeakPercent = 100 }),
			Step{State: Released, Action: Sync}},
		// released
		{"released: serves", with(Released, func(f *Facts) { f.Percent, f.PeakPercent = 100, 100 }), Step{State: Released, Action: Sync}},
		{"released: stays released whatever the waves say", with(Released, func(f *Facts) { f.Percent, f.PeakPercent, f.WavesLeft = 100, 100, true }),
			Step{State: Released, Action: Sync}},
		{"released: failed fails", with(Released, func(f *Facts) { f.Failed = true; f.Percent = 100 }), Step{State: Failing, Action: Sync}},
		{"released: lost its traffic retires", with(Released, func(f *Facts) { f.Eligible = false; f.PeakPercent = 100 }),
			Step{State: Retiring, Action: Sync}},
		{"released without revision leaves when its traffic has moved", with(Released, func(f *Facts) { f.RevisionExists = false }),
			Step{State: Deleting, Action: Delete, Then: Deleted}},
		// retiring
		{"retiring: serves until its traffic has moved", with(Retiring, func(f *Facts) { f.Eligible = false; f.Percent = 10 }),
			Step{State: Retiring, Action: Sync}},
		{"retiring: retires", with(Retiring, func(f *Facts) { f.Eligible = false }), Step{State: Retiring, Action: Retire, Then: Retired}},
		{"retiring: failed fails", with(Retiring, func(f *Facts) { f.Eligible = false; f.Failed = true }), Step{State: Failing, Action: Sync}},
		{"retiring: eligible again deploys", base(Retiring), Step{State: Deploying, Action: Sync, Due: t0.Add(15 * time.Minute)}},
		{"retiring: no revision", with(Retiring, func(f *Facts) { f.RevisionExists = false }), Step{State: Deleting, Action: Delete, Then: Deleted}},
		// retired
		{"retired: stays retired", with(Retired, func(f *Facts) { f.Eligible = false }), Step{State: Retired, Action: Retire}},
		{"retired: recommissioned", base(Retired), Step{State: Deploying, Action: Sync, Due: t0.Add(15 * time.Minute)}},
		{"retired: failed", with(Retired, func(f *Facts) { f.Eligible = false; f.Failed = true }), Step{State: Failing, Action: Sync}},
		// failing
		{"failing: traffic goes back first", with(Failing, func(f *Facts) { f.Failed = true; f.Percent = 30 }), Step{State: Failing, Action: Sync}},
		{"failing: then fails", with(Failing, func(f *Facts) { f.Failed = true }), Step{State: Failing, Action: Retire, Then: Failed}},
		{"failing: no longer failed deploys", base(Failing), Step{State: Deploying, Action: Sync, Due: t0.Add(15 * time.Minute)}},
		// failed
		{"failed: stays failed", with(Failed, func(f *Facts) { f.Failed = true }), Step{State: Failed, Action: Retire}},
		{"failed: no longer failed deploys", base(Failed), Step{State: Deploying, Action: Sync, Due: t0.Add(15 * time.Minute)}},
		{"failed: no revision", with(Failed, func(f *Facts) { f.RevisionExists = false }), Step{State: Deleting, Action: Delete, Then: Deleted}},
		// timingout
		{"timingout: failed fails", with(TimingOut, func(f *Facts) { f.Failed = true }), Step{State: Failing, Action: Sync}},
		{"timingout: stuck", base(TimingOut), Step{State: TimingOut}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Next(tc.f, to); got != tc.want {
				t.Errorf("Next(%+v)\n got %+v\nwant %+v", tc.f, got, tc.want)
			}
		})
	}
}

// TestNext_EveryStateIsHandled checks every state constant has a handler,
// and a missing timestamp or zero value in any of them does not panic.
func TestNext_EveryStateIsHandled(t *testing.T) {
	all := []State{Created, Deploying, Deployed, PendingTest, Testing, Tested, Canarying, Canaried, PendingRelease,
		Releasing, Released, Retiring, Retired, Failing, Failed, Deleting, Deleted, TimingOut}
	if len(States()) != len(all) {
		t.Errorf("States() = %v, want the %d states", States(), len(all))
	}
	for _, s := range all {
		for _, f := range []Facts{{State: s}, {State: s, RevisionExists: true}, {State: s, RevisionExists: true, Failed: true, Eligible: true}} {
			if got := Next(f, Timeouts{}); got.Unknown || got.State == "" {
				t.Errorf("Next(%+v) = %+v", f, got)
			}
		}
	}
}

package release

// passThrough are the states that only wait for something else (the
// release schedule, a freeze, a person): a build that enters one while
// nothing makes it wait leaves it in the same tick.
var passThrough = map[State]bool{Canaried: true, PendingRelease: true}

// maxPassed bounds the states one tick passes through (deployed, then
// canaried or pendingrelease).
const maxPassed = 3

// Advance is Next carried on through the states that only wait: when a
// step enters canaried or pendingrelease, Next decides again from it, as
// a tick at the same time, just after, would. A deploy that finishes this
// tick (deploying, Then deployed) is carried on from deployed the same
// way, when the build moves on from there at once: the step it comes to
// is Unfinished in deploying, so the build is recorded deployed, and past
// it, only once the tick's action is done on every live cluster, as
// before. It stops in a state that holds the build (the schedule's window
// is shut, a freeze, a pause), at a step with anything but Sync to do, and
// before any state may refuses: the caller refuses a state whose checks it
// did not make this tick (a judged state, for a build whose alerts were
// not checked). It returns the step and the states passed through on the
// way to it, in order. Advance saves the controller a run per state
// passed, each of which waits its turn in the queue behind every other
// app's runs; what it decides is what those runs would decide, but for
// the times each state was entered: now, for all.
func Advance(f Facts, t Timeouts, may func(State) bool) (Step, []State) {
	step := Next(f, t)
	var passed []State
	var unfinished State
	for range maxPassed {
		from := step.State
		switch {
		case len(passed) == 0 && finishesDeploy(f, step):
			from = step.Then
		case !passThrough[step.State] || step.State == f.State || !passable(step):
			return unless(step, unfinished), passed
		}
		g := f
		g.State, g.Since = from, f.Now
		next := Next(g, t)
		stays := next.State == from
		if !passable(next) || (!stays && may != nil && !may(next.State)) {
			return unless(step, unfinished), passed
		}
		if stays {
			if from != step.State {
				// Deployed holds the build: it is recorded there once the
				// deploy is done, as Next said.
				return step, passed
			}
			// It waits there: with what it waits for (its Due).
			return unless(next, unfinished), passed
		}
		if from != step.State {
			unfinished = step.State
		}
		passed = append(passed, from)
		f, step = g, next
	}
	return unless(step, unfinished), passed
}

// finishesDeploy says step, decided from f, is a deploy that finishes:
// deploying, deployed once its action is done.
func finishesDeploy(f Facts, step Step) bool {
	done := step
	done.Then = ""
	return f.State == Deploying && step.State == Deploying && step.Then == Deployed && passable(done)
}

// unless is step, Unfinished in state when one is given.
func unless(step Step, state State) Step {
	if state != "" {
		step.Unfinished = state
	}
	return step
}

// passable says a step only moves the build on: Sync, nothing to finish
// before its state (Then), no clock restarted, nothing unknown or dropped.
func passable(s Step) bool {
	return s.Action == Sync && s.Then == "" && !s.Restart && !s.Unknown && !s.Drop
}

// AfterTraffic is a build's step once the tick's traffic is shared
// (Allocate), carried on as the next tick would decide from what the
// sharing records: the build's new peak (peak) and its eligibility
// (eligible, lost to a newer build that took all of its traffic). A
// build whose ramp reaches its release's maximum this tick is released
// once every live cluster takes the weights (its step's Then, so a
// cluster that lags keeps it releasing); a build left with no traffic and
// no eligibility leaves now, as Next decides from a state it stays in,
// and is retired once every live cluster routes it nothing (Then): its
// pods go at the next tick (retired retires them), after the record says
// it has no traffic, never before. Anything but a Sync step that only
// moves the build on, into released or out of a state it stayed in, is
// left as it is. It saves the ReleaseManager two runs, and its status
// two writes, at the end of every release. The caller passes no new peak
// for a target that releases in waves, whose maximum is reached wave by
// wave.
func AfterTraffic(f Facts, t Timeouts, step Step, peak int32, eligible bool) Step {
	if !passable(step) || (peak <= f.PeakPercent && eligible == f.Eligible) {
		return step
	}
	g := f
	if step.State != f.State {
		g.State, g.Since = step.State, f.Now
	}
	g.PeakPercent, g.Eligible = max(f.PeakPercent, peak), eligible
	next := Next(g, t)
	switch {
	case next.State == step.State || !passable(next):
		return step
	case step.State.IsRamping() && next.State.IsReleased():
		step.Then = next.State
		return step
	case !eligible && step.State == f.State && next.State == Retiring:
		// Lost to a newer build that took all of its traffic: with none
		// left, the next tick would retire it.
		h := g
		h.State, h.Percent = next.State, 0
		if gone := Next(h, t); gone.State == Retiring && gone.Then == Retired {
			next.Then = Retired
		}
		return next
	}
	return step
}

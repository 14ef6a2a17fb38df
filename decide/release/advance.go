package release

// passThrough are the states that only wait for something else (the
// release schedule, a freeze, a person): a build that enters one while
// nothing makes it wait leaves it in the same tick.
var passThrough = map[State]bool{Canaried: true, PendingRelease: true}

// maxPassed bounds the states one tick passes through (canaried, then
// pendingrelease).
const maxPassed = 2

// Advance is Next carried on through the states that only wait: when a
// step enters canaried or pendingrelease, Next decides again from it, as
// a tick at the same time, just after, would. It stops in a state that
// holds the build (the schedule's window is shut, a freeze, a pause), at a
// step with anything but Sync to do, and before any state may refuses:
// the caller refuses a state whose checks it did not make this tick (a
// judged state, for a build whose alerts were not checked). It returns
// the step and the states passed through on the way to it, in order.
// Advance saves the controller a run per state passed, each of which
// waits its turn in the queue behind every other app's runs; what it
// decides is what those runs would decide, but for the times each state
// was entered: now, for all.
func Advance(f Facts, t Timeouts, may func(State) bool) (Step, []State) {
	step := Next(f, t)
	var passed []State
	for range maxPassed {
		if !passThrough[step.State] || step.State == f.State || !passable(step) {
			return step, passed
		}
		g := f
		g.State, g.Since = step.State, f.Now
		next := Next(g, t)
		stays := next.State == step.State
		if !passable(next) || (!stays && may != nil && !may(next.State)) {
			return step, passed
		}
		if stays {
			// It waits there: with what it waits for (its Due).
			return next, passed
		}
		passed = append(passed, step.State)
		f, step = g, next
	}
	return step, passed
}

// passable says a step only moves the build on: Sync, nothing to finish
// before its state (Then), no clock restarted, nothing unknown or dropped.
func passable(s Step) bool {
	return s.Action == Sync && s.Then == "" && !s.Restart && !s.Unknown && !s.Drop
}

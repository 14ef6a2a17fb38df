// Package slack tells a team in Slack how its releases go: a release that
// starts, a canary that passes, a ramp, a build released, failed (naming
// its alerts), rolled back or recommissioned. Each release (an app's build
// in a target) has one thread; each app posts to its own channel, or to the
// operator's default.
//
// A Notifier never holds up a release: Notify only queues the notice, and
// one goroutine posts them, rate-limited, dropping (and counting) what a
// full queue cannot take. A Slack outage or a bad token costs a log line and
// a metric per notice, nothing else.
package slack

// Package silence decides which Alertmanager silences Picchu holds for the
// builds of an app in a target, from the target's releaseSilences: pure
// functions of the builds' states, the silences Picchu knows of and the
// time, with no client and no clock.
//
// A build's silences are held while its release is under way: while it
// ramps (releasing), and while it retires with traffic left. Each lasts
// until the release is expected to end (Remaining: the ramp's steps from
// the build's percent to release.max, each held for the step delay, and
// the waves still to go, each after the bake of the wave before) plus two
// margins, but never more than a bound (--max-silence, DefaultMaxLength)
// ahead, and is extended when it would end less than one margin after
// the release is expected to (or, for a release longer than the bound,
// less than half the bound from now), so a silence is written once per
// margin of slippage at most, not at every event. A silence is expired as
// soon as its build's release ends: released, failed or failing (rolled
// back), retired without traffic, or the build gone, and when the
// Revision no longer asks for it.
//
// Every silence Picchu creates carries the matchers the Revision gives,
// plus namespace="<app>-<target>" (Scope: only alerts about the app in the
// target are silenced), slo!="true" and canary!="true", so Picchu's own
// SLO and canary alerts are never silenced, and a comment ending in a
// marker ("[picchu silence <namespace>/<app>/<target>/<tag>/<index>
// instance <id>]") by which the Picchu instance that created it finds it
// in Alertmanager again, created by "picchu". An instance changes and
// expires only silences whose marker names it, and adopts those whose
// marker names none (Owns).
package silence

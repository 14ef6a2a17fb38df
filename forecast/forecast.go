// Package forecast holds what a forecast of a release says: when each
// step lands on each cluster of a target, wave by wave, what holds the
// release on the way and until when, and when it is done. The forecast is
// made by running the release engine's own decisions forward on a virtual
// clock (releasemanager.Forecast); this package only holds and prints it.
package forecast

import (
	"time"
)

// Outcome is how the forecast release ends.
type Outcome string

const (
	// Released: the build reaches its release.max in every wave, at Finish.
	Released Outcome = "released"
	// Held: something with no end the forecast knows holds the build (a
	// pause), and nothing moves until a person acts.
	Held Outcome = "held"
	// NotReleased: the build is not eligible for release, or leaves it
	// (it expires, is superseded).
	NotReleased Outcome = "not released"
	// Beyond: the release does not end within the forecast's horizon.
	Beyond Outcome = "beyond the horizon"
)

// Forecast is the forecast of one build's release in one target.
type Forecast struct {
	App    string `json:"app"`
	Target string `json:"target"`
	Fleet  string `json:"fleet"`
	Tag    string `json:"tag"`
	// Made is the time the forecast starts from; State is the build's
	// state then ("new" for a build not applied yet).
	Made  time.Time `json:"made"`
	State string    `json:"state"`
	// Outcome is how the release ends, Why says more when it is not
	// released, and Finish is when it is released.
	Outcome Outcome    `json:"outcome"`
	Why     string     `json:"why,omitempty"`
	Finish  *time.Time `json:"finish,omitempty"`
	// Waves are the target's clusters, wave by wave (one wave without
	// waves), each with its steps.
	Waves []Wave `json:"waves"`
	// Holds are what holds the build on the way, in the order they begin.
	Holds []Hold `json:"holds,omitempty"`
	// Drains are the builds the release takes the last traffic from, and
	// when their pods go: their scale-down delay after their last route.
	Drains []Drain `json:"drains,omitempty"`
	// Assumed are what the forecast takes for granted beyond its rules:
	// checks passing, deploys taking no time.
	Assumed []string `json:"assumed,omitempty"`
}

// Wave is one wave of the target's clusters.
type Wave struct {
	// Name is the wave's as status names it ("east (1/2)"), "" without waves.
	Name string `json:"name,omitempty"`
	// Bake is how long the wave after this one waits once the build is
	// released here.
	Bake     string    `json:"bake,omitempty"`
	Clusters []Cluster `json:"clusters"`
}

// Cluster is one cluster's steps.
type Cluster struct {
	Name string `json:"name"`
	// Standby says it is a hot standby: it takes the weights, not traffic.
	Standby bool `json:"standby,omitempty"`
	// From is the percent the build takes there when the forecast is made.
	From  int32  `json:"from"`
	Steps []Step `json:"steps"`
}

// Step is a percent the build takes on a cluster, and when.
type Step struct {
	Percent int32     `json:"percent"`
	At      time.Time `json:"at"`
}

// Hold is something that holds the build.
type Hold struct {
	// Cause is one of canary, schedule, freeze, bake, pause, ineligible.
	Cause string `json:"cause"`
	// Detail says which and why ("Saturday", "east: change freeze").
	Detail string    `json:"detail"`
	From   time.Time `json:"from"`
	// Until is when it ends; nil when no end is known.
	Until *time.Time `json:"until,omitempty"`
}

// Drain is a build that lost its last route to the release, and when its
// pods go.
type Drain struct {
	Tag string `json:"tag"`
	// At is when its pods go; Delay is its scale-down delay.
	At    time.Time `json:"at"`
	Delay string    `json:"delay"`
}

// The causes of holds.
const (
	Canary   = "canary"
	Schedule = "schedule"
	Freeze   = "freeze"
	Bake     = "bake"
	Pause    = "pause"
	// Ineligible: the build is not eligible for release (release.eligible
	// false); it waits, deployed, for its ttl.
	Ineligible = "ineligible"
)

// Steps are every step of the forecast, in the order they land (then by
// wave and cluster), with where.
func (f Forecast) Steps() []Landed {
	var out []Landed
	for _, w := range f.Waves {
		for _, c := range w.Clusters {
			for _, s := range c.Steps {
				out = append(out, Landed{Wave: w.Name, Cluster: c.Name, Step: s})
			}
		}
	}
	sortLanded(out)
	return out
}

// Landed is a step with where it lands.
type Landed struct {
	Wave, Cluster string
	Step
}

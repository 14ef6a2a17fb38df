package release

import (
	"time"
)

// State is the state of an incarnation, as stored in the ReleaseManager's
// status.revisions[].state.current. The names are the original's.
type State string

// The incarnation states.
const (
	Created        State = "created"
	Deploying      State = "deploying"
	Deployed       State = "deployed"
	PendingTest    State = "pendingtest"
	Testing        State = "testing"
	Tested         State = "tested"
	Canarying      State = "canarying"
	Canaried       State = "canaried"
	PendingRelease State = "pendingrelease"
	Releasing      State = "releasing"
	Released       State = "released"
	Retiring       State = "retiring"
	Retired        State = "retired"
	Failing        State = "failing"
	Failed         State = "failed"
	Deleting       State = "deleting"
	Deleted        State = "deleted"
	TimingOut      State = "timingout"
)

// Action is what the reconciler must do on every cluster of the fleet for
// an incarnation in its (next) state.
type Action string

const (
	// Hold does nothing to the incarnation's objects.
	Hold Action = ""
	// Sync applies the incarnation's objects: config copies and ReplicaSet.
	Sync Action = "sync"
	// Delete removes every object of the incarnation.
	Delete Action = "delete"
)

// Deployment is what the fleet's ReplicaSets say about a build.
type Deployment int

const (
	// Unknown: a live cluster could not be observed, so nothing is concluded.
	Unknown Deployment = iota
	// NotDeployed: some live cluster lacks available replicas of the build.
	NotDeployed
	// IsDeployed: every live cluster runs the build with every desired
	// replica available (summed over the live clusters), at least one each.
	IsDeployed
)

// Facts are what a tick of one incarnation is decided from.
type Facts struct {
	// Now is the time of the decision.
	Now time.Time
	// State is the stored state; empty for an incarnation seen for the first time.
	State State
	// Since is when the stored state was entered (zero when unknown).
	Since time.Time
	// RevisionExists says the incarnation's Revision still exists and targets this target.
	RevisionExists bool
	// Deployment is what the fleet shows for the build.
	Deployment Deployment
	// Percent of traffic the build takes now.
	Percent int32
}

// Timeouts bound the time an incarnation may stay in a state.
type Timeouts struct {
	// Created bounds the created state.
	Created time.Duration
	// Deploying bounds the deploying state: the deploy deadline.
	Deploying time.Duration
}

// DefaultTimeouts are the original's: one hour in created, 15 minutes to deploy.
var DefaultTimeouts = Timeouts{Created: time.Hour, Deploying: 15 * time.Minute}

// Step is the decision of one tick for one incarnation.
type Step struct {
	// State is the state to store now.
	State State
	// Action is what to do on every cluster.
	Action Action
	// Then, when set, is the state to store once Action succeeded on every
	// cluster of the fleet; until then the incarnation stays in State.
	Then State
	// Due, when not zero, is when this incarnation needs another tick even
	// if nothing changes (a deadline).
	Due time.Time
	// Unknown says the stored state is not one this version of Picchu
	// handles: the incarnation is held as it is, and this is reported.
	Unknown bool
	// Drop says the incarnation is gone for good and its status entry can go.
	Drop bool
}

// Next decides the tick of one incarnation. It handles every state a
// deploy goes through: created, deploying, deployed, deleting, deleted and
// timingout; any other stored state is held and reported as Unknown.
func Next(f Facts, t Timeouts) Step {
	state := f.State
	if state == "" {
		state = Created
	}
	switch state {
	case Created:
		if !f.RevisionExists {
			return deleting(f)
		}
		if !f.Since.IsZero() && f.Now.Sub(f.Since) > t.Created {
			return Step{State: TimingOut}
		}
		// Deploying starts at once: its deadline runs from now.
		return Step{State: Deploying, Action: Sync, Due: f.Now.Add(t.Deploying)}
	case Deploying:
		if !f.RevisionExists {
			return deleting(f)
		}
		if f.Deployment == IsDeployed {
			return Step{State: Deploying, Action: Sync, Then: Deployed}
		}
		due := f.Since.Add(t.Deploying)
		if !f.Since.IsZero() && !f.Now.Before(due) {
			return Step{State: TimingOut}
		}
		return Step{State: Deploying, Action: Sync, Due: due}
	case Deployed:
		if !f.RevisionExists {
			return deleting(f)
		}
		if f.Deployment == NotDeployed {
			return Step{State: Deploying, Action: Sync, Due: f.Now.Add(t.Deploying)}
		}
		return Step{State: Deployed, Action: Sync}
	case Deleting:
		if f.RevisionExists {
			return Step{State: Deploying, Action: Sync, Due: f.Now.Add(t.Deploying)}
		}
		return deleting(f)
	case Deleted:
		if f.RevisionExists {
			return Step{State: Deploying, Action: Sync, Due: f.Now.Add(t.Deploying)}
		}
		return Step{State: Deleted, Drop: true}
	case TimingOut:
		if !f.RevisionExists {
			return deleting(f)
		}
		return Step{State: TimingOut}
	default:
		return Step{State: state, Unknown: true}
	}
}

// deleting keeps a build that still takes traffic until the traffic has
// moved (its pods serve until then), then deletes it everywhere.
func deleting(f Facts) Step {
	if f.Percent > 0 {
		return Step{State: Deleting, Action: Sync}
	}
	return Step{State: Deleting, Action: Delete, Then: Deleted}
}

package releasemanager

import (
	"time"

	"github.com/medium/picchu/decide/release"
)

// drainEnd is when a build that lost its last route may lose its pods
// (release.Facts.DrainEnd): its scale-down delay after its traffic last
// moved on record, the build's or any cluster's, whichever came last; the
// delay from now while a cluster this run reaches still routes it (the
// run takes its route away there first). Zero for a build with traffic on
// record, or that never had any: nothing sends it requests.
func (s *snapshot) drainEnd(inc *incarnation) time.Time {
	st := inc.status
	if st.CurrentPercent > 0 {
		return time.Time{}
	}
	delay := s.scaleDownDelayOf(inc)
	var last time.Time
	if st.LastUpdated != nil {
		last = st.LastUpdated.Time
	}
	// A cluster's record may hold a route the build's does not: one
	// written while another live cluster was down counts for no record
	// of the build's, and stays on the cluster.
	for _, c := range st.Clusters {
		if c.Percent > 0 && s.reaches(c.Name) {
			return s.now.Add(delay)
		}
		if c.LastUpdated != nil {
			last = latest(last, c.LastUpdated.Time)
		}
	}
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(delay)
}

// draining says the build lost its last route less than its scale-down
// delay ago, or still has a route on a cluster this run reaches: its pods
// stay.
func (s *snapshot) draining(inc *incarnation) bool {
	end := s.drainEnd(inc)
	return !end.IsZero() && s.now.Before(end)
}

// scaleDownDelayOf is how long the build keeps its pods once it lost its
// last route: its target's release.scaleDownDelay, else the operator's.
func (s *snapshot) scaleDownDelayOf(inc *incarnation) time.Duration {
	if inc.target != nil && inc.target.Release.ScaleDownDelay != nil {
		return max(inc.target.Release.ScaleDownDelay.Duration, 0)
	}
	return s.scaleDownDelay
}

// reaches says this run can write to the fleet's cluster name.
func (s *snapshot) reaches(name string) bool {
	for _, fc := range s.fleet {
		if fc.obj.Name == name {
			return fc.conn != nil
		}
	}
	return false
}

// aborting says this run takes a failing build's traffic back in one
// step (release.rollback: immediate): a failing build that aborts still
// has traffic on record.
func (s *snapshot) aborting() bool {
	for _, inc := range s.incarnations {
		if inc.step.State == release.Failing && inc.status.CurrentPercent > 0 && inc.aborts() {
			return true
		}
	}
	return false
}

package releasemanager

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/medium/picchu/integrations/slack"
)

// DefaultStuckAfter is how long a release may hold, because a cluster or
// the metrics provider cannot be reached, before Slack is told it is stuck.
const DefaultStuckAfter = 10 * time.Minute

// stuckClocks time, per ReleaseManager, how long its release has been
// held by something a person must look at. They live in memory: after a
// restart a hold is timed from the first run that sees it.
type stuckClocks struct {
	mu    sync.Mutex
	holds map[string]stuckHold
}

// stuckHold is a hold that started at since, and whether it was told.
type stuckHold struct {
	since time.Time
	told  bool
}

// observe records whether key's release is held at now, and says whether
// to tell that it is stuck: once per hold, when it has lasted after.
func (c *stuckClocks) observe(key string, held bool, now time.Time, after time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !held {
		delete(c.holds, key)
		return false
	}
	if c.holds == nil {
		c.holds = map[string]stuckHold{}
	}
	h, ok := c.holds[key]
	if !ok {
		h = stuckHold{since: now}
	}
	tell := !h.told && after > 0 && now.Sub(h.since) >= after
	h.told = h.told || tell
	c.holds[key] = h
	return tell
}

// forget drops key's clock, when its ReleaseManager goes.
func (c *stuckClocks) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.holds, key)
}

// heldBy is the build in progress (the newest) and why it holds, when a
// cluster or the metrics provider could not be reached this run; empty
// otherwise.
func heldBy(s *snapshot, c conditionInputs) (tag, why string) {
	if len(c.progressing) == 0 {
		return "", ""
	}
	var whys []string
	if len(c.unavailable) > 0 {
		whys = append(whys, "not synced on "+strings.Join(c.unavailable, ", "))
	}
	if len(s.alertProblems) > 0 {
		whys = append(whys, "alerts cannot be read ("+strings.Join(s.alertProblems, "; ")+")")
	}
	if lines, _ := s.preflightFailures(); len(lines) > 0 {
		whys = append(whys, "pre-flight checks fail ("+strings.Join(lines, "; ")+")")
	}
	if len(whys) == 0 {
		return "", ""
	}
	for _, inc := range s.incarnations {
		if inc.step.State.IsInProgress() {
			tag = inc.tag
			break
		}
	}
	return tag, strings.Join(whys, "; ")
}

// stuckNotice tells that the release of tag has held for after, and why.
func stuckNotice(s *snapshot, tag, why string, after time.Duration) slack.Notice {
	n := slack.Notice{App: s.rm.Spec.App, Target: s.rm.Spec.Target, Tag: tag, Kind: slack.Stuck,
		Reason: fmt.Sprintf("held for %s: %s", after, why)}
	for _, inc := range s.incarnations {
		if inc.tag == tag {
			n.Channel = channelOf(inc.target)
		}
	}
	return n
}

package slack

import (
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// Kind is what happened to a release.
type Kind string

// The kinds of notice.
const (
	// Started: the build's canary started.
	Started Kind = "started"
	// CanaryPassed: its canary passed.
	CanaryPassed Kind = "canary-passed"
	// Ramping: its ramp started.
	Ramping Kind = "ramping"
	// Released: it takes all the traffic it may.
	Released Kind = "released"
	// Failed: it failed; its traffic goes back to the release before.
	Failed Kind = "failed"
	// RolledBack: its traffic is back on the release before.
	RolledBack Kind = "rolled-back"
	// Recommissioned: an earlier build is brought back, no healthy one
	// being left.
	Recommissioned Kind = "recommissioned"
	// Paused and Resumed: a person paused or resumed the release (By).
	Paused  Kind = "paused"
	Resumed Kind = "resumed"
	// Promoted: a person promoted the release (By).
	Promoted Kind = "promoted"
	// Retried: a person retried the failed build (By).
	Retried Kind = "retried"
	// RolledBackTo: a person rolled the app back to this build (By).
	RolledBackTo Kind = "rolled back to"
	// Stuck: the release has held, a cluster or the metrics provider
	// being unreachable, for longer than a threshold (Reason says).
	Stuck Kind = "stuck"
)

// Notice is one thing to tell about a release: an app's build in a target.
type Notice struct {
	App, Target, Tag string
	Kind             Kind
	// Channel is the app's channel; empty for the Notifier's default.
	Channel string
	// Alerts are the alerts that failed the build, Reason why it failed.
	Alerts []string
	Reason string
	// By is who asked, for a notice of a person's control.
	By string
	// Finish is when a ramping build should be released, as forecast
	// (status.releasing.forecastFinish); zero when unknown.
	Finish time.Time
}

// release identifies the thread of a notice.
type release struct{ app, target, tag string }

func (n Notice) release() release { return release{n.App, n.Target, n.Tag} }

// Text is the notice as one line of Slack markdown, also the message's
// fallback text. Every part that comes from outside Picchu (the app, tag
// and target, the alerts, the reason, who asked) is escaped as Slack
// requires, so that it shows as written: a reason holding <!channel>
// notifies no one, and one holding <https://…|…> links nowhere.
func (n Notice) Text() string {
	build := fmt.Sprintf("*%s* `%s` in %s", escape(n.App), escape(n.Tag), escape(n.Target))
	switch n.Kind {
	case Started:
		return build + ": canary started"
	case CanaryPassed:
		return build + ": canary passed"
	case Ramping:
		if !n.Finish.IsZero() {
			return build + ": ramping up, to be released by " + n.Finish.UTC().Format("2006-01-02 15:04 MST")
		}
		return build + ": ramping up"
	case Released:
		return build + ": released"
	case Failed:
		var why []string
		if len(n.Alerts) > 0 {
			alerts := make([]string, len(n.Alerts))
			for i, a := range n.Alerts {
				alerts[i] = escape(a)
			}
			why = append(why, "alerts firing: "+strings.Join(alerts, ", "))
		}
		if n.Reason != "" {
			why = append(why, escape(n.Reason))
		}
		if len(why) == 0 {
			return build + ": failed; rolling back"
		}
		return build + ": failed (" + strings.Join(why, "; ") + "); rolling back"
	case RolledBack:
		return build + ": rolled back"
	case Recommissioned:
		return build + ": recommissioned, no healthy build being left"
	case Stuck:
		return build + ": stuck, " + escape(n.Reason)
	case Paused, Resumed, Promoted, Retried, RolledBackTo:
		return fmt.Sprintf("%s: %s by %s", build, n.Kind, escape(n.By))
	}
	return fmt.Sprintf("%s: %s", build, n.Kind)
}

// escaper escapes the three characters Slack's markdown gives a meaning
// of its own to: < and > delimit links and mentions (<!channel>,
// <@U123>), & starts the escapes themselves.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escape is text from outside Picchu, made to show as written in Slack.
func escape(text string) string { return escaper.Replace(text) }

// blocks are the message's blocks: the text, as one section.
func (n Notice) blocks() []slack.Block {
	return []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, n.Text(), false, false), nil, nil)}
}

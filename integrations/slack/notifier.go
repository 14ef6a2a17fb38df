package slack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
	"golang.org/x/time/rate"
)

// Options configure a Notifier.
type Options struct {
	// Token returns the bot token at each post (from a Secret: see
	// SecretToken), so a rotated token needs no restart.
	Token func(context.Context) (string, error)
	// Channel is where notices without a channel of their own go.
	Channel string
	// APIURL is Slack's Web API base URL; empty for Slack's own.
	APIURL string
	// Rate and Burst limit the posts: 1 per second, 5 at once, when zero
	// (Slack's chat.postMessage allows about one per second per channel).
	Rate  rate.Limit
	Burst int
	// Queue is how many notices may wait: 1000 when zero.
	Queue int
	// Timeout bounds one post: 10 s when zero.
	Timeout time.Duration
	Log     logr.Logger
}

// maxThreads bounds the threads remembered; past it they are forgotten and
// a release's next notice starts a new thread.
const maxThreads = 10000

// Notifier posts notices to Slack, in the background.
type Notifier struct {
	opts    Options
	queue   chan Notice
	limiter *rate.Limiter

	// Read and written by the posting goroutine alone.
	threads map[release]string
	last    map[release]Kind

	outcome *prometheus.CounterVec
}

// New returns a Notifier; Start runs it.
func New(opts Options) (*Notifier, error) {
	if opts.Token == nil {
		return nil, errors.New("slack: no token")
	}
	if opts.Channel == "" {
		return nil, errors.New("slack: no default channel")
	}
	if opts.Rate == 0 {
		opts.Rate, opts.Burst = 1, max(opts.Burst, 5)
	}
	if opts.Queue <= 0 {
		opts.Queue = 1000
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	return &Notifier{
		opts: opts, queue: make(chan Notice, opts.Queue), limiter: rate.NewLimiter(opts.Rate, max(opts.Burst, 1)),
		threads: map[release]string{}, last: map[release]Kind{},
		outcome: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "picchu_slack_notifications_total",
			Help: "Slack notices by outcome: sent, failed (Slack or the token), dropped (queue full) or duplicate.",
		}, []string{"outcome"}),
	}, nil
}

// RegisterMetrics registers the Notifier's metrics with reg; registering
// them again (another Notifier of the process) is not an error.
func (n *Notifier) RegisterMetrics(reg prometheus.Registerer) error {
	if err := reg.Register(n.outcome); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
	}
	return nil
}

// Notify queues a notice and returns at once: false when the queue is full
// and the notice is dropped.
func (n *Notifier) Notify(notice Notice) bool {
	select {
	case n.queue <- notice:
		return true
	default:
		n.outcome.WithLabelValues("dropped").Inc()
		n.opts.Log.Info("Slack notice dropped: the queue is full", "app", notice.App, "tag", notice.Tag, "kind", notice.Kind)
		return false
	}
}

// Start posts queued notices until ctx is done.
func (n *Notifier) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case notice := <-n.queue:
			n.post(ctx, notice)
		}
	}
}

// post posts one notice in its release's thread, unless it repeats the
// release's last notice.
func (n *Notifier) post(ctx context.Context, notice Notice) {
	rel := notice.release()
	if n.last[rel] == notice.Kind {
		n.outcome.WithLabelValues("duplicate").Inc()
		return
	}
	if err := n.limiter.Wait(ctx); err != nil {
		return
	}
	ts, err := n.send(ctx, notice, n.threads[rel])
	var limited *slack.RateLimitedError
	if errors.As(err, &limited) && limited.RetryAfter <= time.Minute {
		select {
		case <-ctx.Done():
			return
		case <-time.After(limited.RetryAfter):
		}
		ts, err = n.send(ctx, notice, n.threads[rel])
	}
	if err != nil {
		n.outcome.WithLabelValues("failed").Inc()
		n.opts.Log.Error(err, "posting a Slack notice", "app", notice.App, "target", notice.Target, "tag", notice.Tag, "kind", notice.Kind)
		return
	}
	n.outcome.WithLabelValues("sent").Inc()
	if len(n.last) >= maxThreads {
		n.threads, n.last = map[release]string{}, map[release]Kind{}
	}
	n.last[rel] = notice.Kind
	if n.threads[rel] == "" {
		n.threads[rel] = ts
	}
}

// send posts the notice, in thread when it is not empty, and returns the
// message's timestamp.
func (n *Notifier) send(ctx context.Context, notice Notice, thread string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	token, err := n.opts.Token(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the Slack token: %w", err)
	}
	var options []slack.Option
	if n.opts.APIURL != "" {
		options = append(options, slack.OptionAPIURL(n.opts.APIURL))
	}
	channel := notice.Channel
	if channel == "" {
		channel = n.opts.Channel
	}
	msg := []slack.MsgOption{slack.MsgOptionText(notice.Text(), false), slack.MsgOptionBlocks(notice.blocks()...)}
	if thread != "" {
		msg = append(msg, slack.MsgOptionTS(thread))
	}
	_, ts, err := slack.New(token, options...).PostMessageContext(ctx, channel, msg...)
	if err != nil {
		return "", fmt.Errorf("posting to Slack channel %s: %w", channel, err)
	}
	return ts, nil
}

// NeedLeaderElection says a Notifier runs in every replica: each replica's
// controllers tell of the apps they release.
func (n *Notifier) NeedLeaderElection() bool { return false }

// Package plugin holds the commands of kubectl-picchu, the kubectl plugin of
// Picchu. NewRootCommand builds them; tests run them in-process with
// NewRootCommandWithOptions, a clock and a user of their own.
package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// FieldManager is the field manager of every change the plugin makes.
const FieldManager = "kubectl-picchu"

// Options are what the commands read besides their flags and arguments.
type Options struct {
	genericiooptions.IOStreams
	// Now is the clock that ages are measured and requests are dated
	// with (time.Now when nil).
	Now func() time.Time
	// WhoAmI names the user a change is recorded as made by, in the
	// control-by annotation (SelfSubjectReviewUser when nil). When it
	// fails, the change is recorded as made by "unknown".
	WhoAmI func(ctx context.Context, cfg *rest.Config) (string, error)
	// Serving, when set, is told the URL that `kubectl picchu dashboard`
	// serves at, once it does (for a program that runs the dashboard).
	Serving func(url string)
}

// NewRootCommand returns the `kubectl picchu` command, which reads and
// writes streams, with the wall clock and the user the API server names.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return NewRootCommandWithOptions(Options{IOStreams: streams})
}

// NewRootCommandWithOptions returns the `kubectl picchu` command with o.
// Run it with SetArgs and ExecuteContext; an error is returned, not printed.
func NewRootCommandWithOptions(o Options) *cobra.Command {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.WhoAmI == nil {
		o.WhoAmI = SelfSubjectReviewUser
	}
	flags := genericclioptions.NewConfigFlags(true)
	// The plugin uses no discovery cache: no --cache-dir.
	flags.CacheDir = nil
	r := &runner{Options: o, flags: flags}
	root := &cobra.Command{
		Use:   "kubectl-picchu",
		Short: "Watch and steer Picchu's progressive releases",
		Long: `Watch and steer Picchu's progressive releases.

Picchu releases each build of an app (a Revision) to every target step by
step. kubectl picchu shows where each build is and lets a person pause,
resume, promote, abort, retry or roll back a release. It changes nothing
but annotations and spec.failed on the app's Revisions; Picchu acts on them.
Each change records who made it in the picchu.medium.engineering/control-by
annotation.`,
		Example: `  # List the apps of the current namespace and what each target releases
  kubectl picchu get

  # Show the builds of app demo in each target, redrawn every second
  kubectl picchu get demo --watch

  # Forecast every cluster's steps of demo's newest build
  kubectl picchu plan demo

  # Watch every release in a browser, with your own rights
  kubectl picchu dashboard

  # Pause the newest build of demo, then resume it
  kubectl picchu pause demo
  kubectl picchu resume demo`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl picchu"},
		SilenceUsage:  true,
		SilenceErrors: true,
		CompletionOptions: cobra.CompletionOptions{
			DisableDefaultCmd: true,
		},
	}
	root.SetIn(o.In)
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	r.flags.AddFlags(root.PersistentFlags())
	root.AddCommand(
		r.newGetCommand(),
		r.newStatusCommand(),
		r.newHistoryCommand(),
		r.newPlanCommand(),
		r.newPauseCommand(),
		r.newResumeCommand(),
		r.newPromoteCommand(),
		r.newAbortCommand(),
		r.newRetryCommand(),
		r.newRollbackCommand(),
		r.newDashboardCommand(),
	)
	return root
}

// runner holds what every command shares.
type runner struct {
	Options
	flags *genericclioptions.ConfigFlags
}

// The plugin's client rate limit, kubectl's (its discovery client's):
// unless the kubeconfig sets one.
const (
	clientQPS   = 50
	clientBurst = 300
)

// session is a connection to the delivery cluster.
type session struct {
	client    client.Client
	config    *rest.Config
	scheme    *runtime.Scheme
	namespace string
}

// connect builds a client from the kubeconfig flags.
func (r *runner) connect() (*session, error) {
	cfg, err := r.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = FieldManager
	if cfg.QPS == 0 && cfg.Burst == 0 && cfg.RateLimiter == nil {
		// client-go's defaults (5 requests a second, bursts of 10) would
		// throttle a --watch of a few requests a frame at short
		// intervals, and a throttled request fails when the wait would
		// pass its context's deadline: kubectl's own limits instead.
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
	}
	ns, _, err := r.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering the Kubernetes types: %w", err)
	}
	if err := picchuv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering Picchu's types: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building a client for %s: %w", cfg.Host, err)
	}
	return &session{client: c, config: cfg, scheme: scheme, namespace: ns}, nil
}

// SelfSubjectReviewUser asks the API server who the client authenticates
// as, with a SelfSubjectReview.
func SelfSubjectReviewUser(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("building a client for %s: %w", cfg.Host, err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who the client is (SelfSubjectReview): %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", fmt.Errorf("the API server's SelfSubjectReview names no user")
	}
	return review.Status.UserInfo.Username, nil
}

// Command picchu is the Picchu operator: progressive delivery of Revisions to
// fleets of Kubernetes clusters.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/applier"
	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/controllers/release"
	"github.com/medium/picchu/controllers/releasemetrics"
	"github.com/medium/picchu/controllers/remote"
	"github.com/medium/picchu/controllers/schedule"
)

// leaderElectionID is the original's, so an old and a new operator never
// lead at once.
const leaderElectionID = "de705aec.picchu.medium.engineering"

// clusterHealthTimeout bounds each health check of a target cluster.
const clusterHealthTimeout = 5 * time.Second

func main() {
	ctx := ctrl.SetupSignalHandler()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "picchu:", err)
		os.Exit(1)
	}
}

// config is everything the command line sets.
type config struct {
	kubeconfig              string
	metricsAddr             string
	probeAddr               string
	enableLeaderElection    bool
	leaderElectionNamespace string
	enableWebhooks          bool
	webhookPort             int
	webhookCertDir          string
	syncPeriodSeconds       int
	namespaces              string
	allowExecCredentials    bool
	controllers             controllers.Options
	zap                     zap.Options
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("picchu", flag.ContinueOnError)
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the delivery cluster (default: in-cluster config or $KUBECONFIG)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", ":8383", "address the Prometheus metrics endpoint binds to (0 turns it off)")
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", ":8081", "address the health and readiness probes bind to")
	fs.BoolVar(&c.enableLeaderElection, "enable-leader-election", false, "elect a leader so that only one replica acts")
	fs.StringVar(&c.leaderElectionNamespace, "leader-election-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the leader-election lease (default: $POD_NAMESPACE, or the in-cluster namespace)")
	fs.BoolVar(&c.enableWebhooks, "enable-webhooks", os.Getenv("ENABLE_WEBHOOKS") != "false", "serve the admission webhooks (off when $ENABLE_WEBHOOKS is false; run without them locally)")
	fs.IntVar(&c.webhookPort, "webhook-port", 9443, "port the admission webhooks are served on")
	fs.StringVar(&c.webhookCertDir, "webhook-cert-dir", "", "directory holding tls.crt and tls.key of the webhook server (default: controller-runtime's)")
	fs.IntVar(&c.syncPeriodSeconds, "sync-period-seconds", 15, "seconds between safety resyncs of every object")
	fs.StringVar(&c.namespaces, "namespaces", os.Getenv("POD_NAMESPACE"), "comma-separated namespaces of the delivery cluster holding Picchu's Clusters and Revisions: Secrets and ConfigMaps (Cluster credentials, configSelector) are read only there (default: $POD_NAMESPACE; empty: every namespace)")
	fs.BoolVar(&c.allowExecCredentials, "allow-exec-credentials", false, "accept exec plugins in Cluster Secrets: whoever may write a Cluster's Secret can then run commands as the operator")
	fs.IntVar(&c.controllers.ConcurrentRevisions, "concurrent-revisions", 20, "Revisions reconciled in parallel")
	fs.IntVar(&c.controllers.ConcurrentReleaseManagers, "concurrent-release-managers", 50, "ReleaseManagers reconciled in parallel")
	fs.StringVar(&c.controllers.PrometheusQueryAddress, "prometheus-query-address", "", "Prometheus or Thanos API queried for SLO and canary alerts")
	fs.DurationVar(&c.controllers.PrometheusQueryTTL, "prometheus-query-ttl", 10*time.Second, "how long an alert query's answer is cached")
	fs.BoolVar(&c.controllers.PrometheusEnabled, "prometheus-enabled", true, "query Prometheus for SLO and canary alerts")
	fs.DurationVar(&c.controllers.PrometheusQueryTimeout, "prometheus-query-timeout", 5*time.Second, "deadline of every alert query to Prometheus")
	fs.StringVar(&c.controllers.DatadogSecret, "datadog-secret", "", "namespace/name of the Secret holding the Datadog api-key and app-key (empty turns Datadog checks off)")
	fs.StringVar(&c.controllers.DatadogSite, "datadog-site", "datadoghq.com", "Datadog site the monitors are read from")
	fs.DurationVar(&c.controllers.DatadogQueryTTL, "datadog-query-ttl", 10*time.Second, "how long a Datadog monitor query's answer is cached")
	fs.IntVar(&c.controllers.ProvenPercent, "slo-proven-percent", 50, "peak percent in a revision's first acceptance or production target from which SLO alerts no longer fail it")
	fs.BoolVar(&c.controllers.HumaneReleasesEnabled, "humane-releases-enabled", true, "let humane and inhumane schedules release (false: only \"always\" releases)")
	fs.StringVar(&c.controllers.ServiceLevelsNamespace, "service-levels-namespace", "service-level-objectives", "namespace of Sloth service levels on target clusters (empty turns them off)")
	fs.DurationVar(&c.controllers.Timeouts.Created, "created-timeout", release.DefaultTimeouts.Created, "how long a build may stay in created before it times out")
	fs.DurationVar(&c.controllers.Timeouts.Deploying, "deploying-timeout", release.DefaultTimeouts.Deploying, "how long a build may take to deploy on every live cluster before it times out")
	fs.IntVar(&c.controllers.KeepDone, "keep-done-builds", release.DefaultKeepDone, "builds of a target that are done with (retired, failed) kept at most, whatever their ttl: older ones are garbage collected")
	fs.DurationVar(&c.controllers.RemovalGrace, "app-removal-grace", controllers.DefaultRemovalGrace, "how long an app no Revision targets any longer stays on its clusters before it is removed (an app with traffic stays until its ReleaseManager is deleted)")
	fs.DurationVar(&c.controllers.Timeouts.Testing, "external-test-timeout", release.DefaultTimeouts.Testing, "how long an external test may go without a report when the Revision's externalTest.timeout is not set")
	c.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.syncPeriodSeconds < 1 {
		return nil, fmt.Errorf("--sync-period-seconds must be at least 1, got %d", c.syncPeriodSeconds)
	}
	if c.controllers.KeepDone < 1 {
		return nil, fmt.Errorf("--keep-done-builds must be at least 1, got %d", c.controllers.KeepDone)
	}
	if c.controllers.ConcurrentRevisions < 1 || c.controllers.ConcurrentReleaseManagers < 1 {
		return nil, errors.New("--concurrent-revisions and --concurrent-release-managers must be at least 1")
	}
	if c.controllers.Timeouts.Created <= 0 || c.controllers.Timeouts.Deploying <= 0 || c.controllers.Timeouts.Testing <= 0 {
		return nil, errors.New("--created-timeout, --deploying-timeout and --external-test-timeout must be positive")
	}
	if c.controllers.ProvenPercent < 1 || c.controllers.ProvenPercent > 100 {
		return nil, fmt.Errorf("--slo-proven-percent must be from 1 to 100, got %d", c.controllers.ProvenPercent)
	}
	if c.controllers.PrometheusQueryTTL <= 0 || c.controllers.PrometheusQueryTimeout <= 0 || c.controllers.DatadogQueryTTL <= 0 {
		return nil, errors.New("--prometheus-query-ttl, --prometheus-query-timeout and --datadog-query-ttl must be positive")
	}
	for _, ns := range splitNamespaces(c.namespaces) {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("--namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	if c.controllers.DatadogSecret != "" {
		key, err := datadogSecretKey(c.controllers.DatadogSecret)
		if err != nil {
			return nil, err
		}
		if watched := splitNamespaces(c.namespaces); len(watched) > 0 && !slices.Contains(watched, key.Namespace) {
			return nil, fmt.Errorf("--datadog-secret %q: Secrets are read only from --namespaces %q", c.controllers.DatadogSecret, c.namespaces)
		}
	}
	c.controllers.SyncPeriod = time.Duration(c.syncPeriodSeconds) * time.Second
	return c, nil
}

// splitNamespaces splits --namespaces; none means every namespace.
func splitNamespaces(flag string) []string {
	var out []string
	for ns := range strings.SplitSeq(flag, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// run starts the manager and blocks until ctx ends or the manager fails.
func run(ctx context.Context, args []string) error {
	c, err := parseFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&c.zap)))
	log := ctrl.Log.WithName("setup")

	cfg, err := restConfig(c.kubeconfig)
	if err != nil {
		return err
	}
	scheme, err := applier.NewScheme()
	if err != nil {
		return err
	}
	syncPeriod := c.controllers.SyncPeriod
	opts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: c.metricsAddr},
		HealthProbeBindAddress:  c.probeAddr,
		LeaderElection:          c.enableLeaderElection,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: c.leaderElectionNamespace,
		Cache:                   controllers.DeliveryCache(splitNamespaces(c.namespaces)),
	}
	opts.Cache.SyncPeriod = &syncPeriod
	if c.enableWebhooks {
		opts.WebhookServer = webhook.NewServer(webhook.Options{Port: c.webhookPort, CertDir: c.webhookCertDir})
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	calendar, err := schedule.New(c.controllers.HumaneReleasesEnabled)
	if err != nil {
		return err
	}
	if err := releasemetrics.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering release metrics: %w", err)
	}
	remoteEvents := controllers.NewRemoteEvents()
	registry := remote.NewRegistry(scheme, ctrl.Log.WithName("remote"), remoteEvents.Notify)
	registry.Policy = remote.Policy{AllowExec: c.allowExecCredentials}
	if err := (&controllers.ClusterReconciler{
		Client:        mgr.GetClient(),
		Registry:      registry,
		HealthPeriod:  c.controllers.SyncPeriod,
		HealthTimeout: clusterHealthTimeout,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the cluster controller: %w", err)
	}
	promSource, ddSource, err := alertSources(mgr.GetClient(), c.controllers)
	if err != nil {
		return err
	}
	if err := (&controllers.RevisionReconciler{
		Client:                  mgr.GetClient(),
		Recorder:                mgr.GetEventRecorder("picchu"),
		ProvenPercent:           int32(c.controllers.ProvenPercent),
		MaxConcurrentReconciles: c.controllers.ConcurrentRevisions,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the revision controller: %w", err)
	}
	if err := (&controllers.ReleaseManagerReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Registry:                registry,
		RemoteEvents:            remoteEvents,
		Recorder:                mgr.GetEventRecorder("picchu"),
		SyncPeriod:              c.controllers.SyncPeriod,
		MaxConcurrentReconciles: c.controllers.ConcurrentReleaseManagers,
		Timeouts:                c.controllers.Timeouts,
		Calendar:                calendar,
		ServiceLevelsNamespace:  c.controllers.ServiceLevelsNamespace,
		Prometheus:              promSource,
		Datadog:                 ddSource,
		ProvenPercent:           int32(c.controllers.ProvenPercent),
		AlertCheckInterval:      c.controllers.PrometheusQueryTTL,
		RemovalGrace:            c.controllers.RemovalGrace,
		KeepDone:                c.controllers.KeepDone,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the release manager controller: %w", err)
	}
	ready := healthz.Ping
	if c.enableWebhooks {
		if err := picchuv1alpha1.SetupWebhooksWithManager(mgr); err != nil {
			return fmt.Errorf("setting up webhooks: %w", err)
		}
		ready = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	log.Info("starting manager", "webhooks", c.enableWebhooks, "leaderElection", c.enableLeaderElection,
		"syncPeriod", c.controllers.SyncPeriod.String(), "namespaces", c.namespaces, "allowExecCredentials", c.allowExecCredentials)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

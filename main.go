// Command picchu is the Picchu operator: progressive delivery of Revisions to
// fleets of Kubernetes clusters.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/silence"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/fleet/throttle"
	"github.com/medium/picchu/integrations/alertmanager"
	"github.com/medium/picchu/integrations/images"
	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/releasemetrics"
	"github.com/medium/picchu/shard"
)

// defaultImageRegistryAllowedHosts are the public token realm and blob
// stores of Docker Hub and GHCR, which are not the registries' own hosts.
const defaultImageRegistryAllowedHosts = "auth.docker.io,production.cloudflare.docker.com,pkg-containers.githubusercontent.com"

// leaderElectionID is the original's, so an old and a new operator never
// lead at once.
const leaderElectionID = "de705aec.picchu.medium.engineering"

func main() {
	withoutWatchList()
	collectSooner(os.LookupEnv)
	ctx := ctrl.SetupSignalHandler()
	exitAfter(ctx, exitDeadline)
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
	pprofAddr               string
	enableLeaderElection    bool
	leaderElectionNamespace string
	enableWebhooks          bool
	webhookPort             int
	webhookCertDir          string
	syncPeriodSeconds       int
	namespaces              string
	protectedNamespaces     string
	appNamespacePolicy      string
	crossNamespaceSources   string
	// imageRegistryAllowedHosts is --image-registry-allowed-hosts, as given.
	imageRegistryAllowedHosts string
	prometheusEnabled         bool
	humaneReleasesEnabled     bool
	scaleDownDelay            time.Duration
	kubeAPIQPS                float64
	kubeAPIBurst              int
	clusterAPIQPS             float64
	shards                    shardFlags
	operator                  operator.Options
	zap                       zap.Options
	// ignored are the flags of ignoredFlags the command line set.
	ignored []string
}

// parseFlags parses the command line args into a config, and checks it.
func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("picchu", flag.ContinueOnError)
	c.bind(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.ignored = ignoredSet(fs)
	if err := c.check(); err != nil {
		return nil, err
	}
	c.fillOperator()
	return c, nil
}

// bind declares every flag of the command line on fs, each setting a
// field of c.
func (c *config) bind(fs *flag.FlagSet) {
	c.bindManager(fs)
	c.bindClients(fs)
	c.bindAlerts(fs)
	c.bindReleases(fs)
	for _, f := range ignoredFlags {
		f.bind(fs)
	}
	c.bindLifecycle(fs)
	c.shards.bind(fs)
	c.zap.BindFlags(fs)
}

// bindManager declares the flags of the manager: where it reads the
// delivery cluster, serves metrics, probes and webhooks, how it elects a
// leader, and its resync.
func (c *config) bindManager(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig of the delivery cluster (default: in-cluster config or $KUBECONFIG)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", ":8383", "address the Prometheus metrics endpoint binds to (0 turns it off)")
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", ":8081", "address the health and readiness probes bind to")
	fs.StringVar(&c.pprofAddr, "pprof-bind-address", "0", "address Go's profiler (/debug/pprof/, with block and mutex profiles) binds to, such as 127.0.0.1:6060; it shows the operator's internals, so bind it to loopback (0 turns it off)")
	fs.BoolVar(&c.enableLeaderElection, "enable-leader-election", false, "elect a leader so that only one replica acts")
	fs.StringVar(&c.leaderElectionNamespace, "leader-election-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the leader-election lease (default: $POD_NAMESPACE, or the in-cluster namespace)")
	fs.BoolVar(&c.enableWebhooks, "enable-webhooks", os.Getenv("ENABLE_WEBHOOKS") != "false", "serve the admission webhooks (off when $ENABLE_WEBHOOKS is false; run without them locally)")
	fs.IntVar(&c.webhookPort, "webhook-port", 9443, "port the admission webhooks are served on")
	fs.StringVar(&c.webhookCertDir, "webhook-cert-dir", "", "directory holding tls.crt and tls.key of the webhook server (default: controller-runtime's)")
	fs.IntVar(&c.syncPeriodSeconds, "sync-period-seconds", int(operator.DefaultSyncPeriod/time.Second), "seconds between safety resyncs of every object: runs come from events and due times, this only catches what both missed")
}

// bindClients declares the flags of the operator's clients and workers:
// their rates, the namespaces they read, what credentials they accept and
// how many objects they reconcile at once.
func (c *config) bindClients(fs *flag.FlagSet) {
	fs.Float64Var(&c.kubeAPIQPS, "kube-api-qps", throttle.DefaultQPS, "requests per second the delivery cluster's client sends at most, on average")
	fs.IntVar(&c.kubeAPIBurst, "kube-api-burst", throttle.DefaultBurst, "requests the delivery cluster's client sends at once at most, above --kube-api-qps")
	fs.Float64Var(&c.clusterAPIQPS, "cluster-api-qps", throttle.DefaultQPS, "requests per second each target cluster's client sends at most, on average")
	fs.IntVar(&c.operator.ClusterBurst, "cluster-api-burst", throttle.DefaultBurst, "requests each target cluster's client sends at once at most, above --cluster-api-qps")
	fs.StringVar(&c.namespaces, "namespaces", ownNamespace(), "comma-separated namespaces of the delivery cluster holding Picchu's Clusters and Revisions: Secrets and ConfigMaps (Cluster credentials, configSelector) are read only there (default: $POD_NAMESPACE, or the in-cluster namespace; required: \"*\" reads every namespace)")
	fs.StringVar(&c.crossNamespaceSources, "allow-cross-namespace-sources", "", "comma-separated namespaces (among --namespaces) whose Secrets a ClusterSecrets, and whose ConfigMaps and Secrets a Mirror's additionalConfigSelectors, in another namespace may copy to clusters; empty: each copies only from its own namespace, and one whose source is elsewhere is Stalled (SourceNotAllowed)")
	fs.BoolVar(&c.operator.AllowExecCredentials, "allow-exec-credentials", false, "accept exec plugins in Cluster Secrets: whoever may write a Cluster's Secret can then run commands as the operator")
	fs.IntVar(&c.operator.ConcurrentRevisions, "concurrent-revisions", 20, "Revisions reconciled in parallel")
	fs.IntVar(&c.operator.ConcurrentReleaseManagers, "concurrent-release-managers", 50, "ReleaseManagers reconciled in parallel")
}

// bindAlerts declares the flags of the alert sources and of the Slack
// notices.
func (c *config) bindAlerts(fs *flag.FlagSet) {
	fs.StringVar(&c.operator.PrometheusQueryAddress, "prometheus-query-address", "", "Prometheus or Thanos API queried for SLO and canary alerts")
	fs.DurationVar(&c.operator.PrometheusQueryTTL, "prometheus-query-ttl", 10*time.Second, "how long an alert query's answer is cached")
	fs.StringVar(&c.operator.PrometheusClusterLabel, "prometheus-cluster-label", prometheus.DefaultClusterLabel, "label that names the cluster an alert or SLO series comes from (each Cluster's value is spec.prometheus.clusterLabelValue, or its name): alerts that carry it fail a build naming the cluster, only clusters of the build's fleet count, and waves' evidence and baseline comparisons count series by it")
	fs.BoolVar(&c.operator.PrometheusNamespaceEnforced, "prometheus-namespace-enforced", false, "the Prometheus enforces the label namespace on the rules and series of app namespaces (prometheus-operator's enforcedNamespaceLabel: namespace): baseline comparisons then count an SLI's raw series of the app's namespace alone (docs/security.md)")
	fs.BoolVar(&c.prometheusEnabled, "prometheus-enabled", true, "query Prometheus for SLO and canary alerts")
	fs.DurationVar(&c.operator.PrometheusQueryTimeout, "prometheus-query-timeout", 5*time.Second, "deadline of every alert query to Prometheus")
	fs.StringVar(&c.operator.DatadogSecret, "datadog-secret", "", "namespace/name of the Secret holding the Datadog api-key and app-key (empty turns Datadog checks off)")
	fs.StringVar(&c.operator.DatadogSite, "datadog-site", "datadoghq.com", "Datadog site the monitors are read from")
	fs.DurationVar(&c.operator.DatadogQueryTTL, "datadog-query-ttl", 10*time.Second, "how long a Datadog monitor query's answer is cached")
	fs.StringVar(&c.operator.SlackTokenSecret, "slack-token-secret", "", "namespace/name of the Secret holding the Slack bot token under \"token\" (empty turns Slack notices off)")
	fs.StringVar(&c.operator.SlackChannel, "slack-channel", "", "Slack channel of apps whose alerts name none with a \"channel\" label")
	fs.StringVar(&c.operator.SlackAPIURL, "slack-api-url", "", "Slack Web API base URL (empty: Slack's own)")
	fs.DurationVar(&c.operator.SlackStuckAfter, "slack-stuck-after", releasemanager.DefaultStuckAfter, "tell Slack a release is stuck once it has held this long because a cluster or the metrics provider cannot be reached (0: never)")
}

// bindReleases declares the flags of what a release checks, holds and
// writes: capacity and image preflights, silences, SLO proof, schedules,
// service levels, dev routes, the instance's mark, protected namespaces
// and the cluster Prometheus.
func (c *config) bindReleases(fs *flag.FlagSet) {
	fs.BoolVar(&c.operator.PreflightCapacity, "preflight-capacity", true, "before a build takes traffic on a cluster, check that its nodes have room for the build's pods that wait for one, and hold it there until they do (reads every target cluster's nodes and the pods bound to them)")
	fs.BoolVar(&c.operator.InspectImagePlatforms, "inspect-image-platforms", false, "read the platforms of the images of builds about to take traffic from their registries: such a build holds on clusters with no ready node of a platform its image offers, and its pods require nodes of those platforms")
	fs.StringVar(&c.imageRegistryAllowedHosts, "image-registry-allowed-hosts", defaultImageRegistryAllowedHosts, "comma-separated hosts, besides an image's own registry (host and port), that --inspect-image-platforms may send requests to: a token realm or blob store elsewhere (host, host:port, or *.domain; the default lets Docker Hub and GHCR images be read; setting it replaces the list)")
	fs.StringVar(&c.operator.AlertmanagerAddress, "alertmanager-address", "", "base URL of the Alertmanager (API v2) where the releaseSilences of Revisions are held while their builds are released (empty turns release silences off)")
	fs.DurationVar(&c.operator.MaxSilence, "max-silence", silence.DefaultMaxLength, "how far ahead a release silence ends at most: one that covers a longer or paused release is renewed while it is needed (at least 10m)")
	fs.IntVar(&c.operator.ProvenPercent, "slo-proven-percent", 0, "peak percent in a revision's first acceptance or production target from which SLO alerts no longer fail it, as in the original (50 there); 0 judges a build until it is released and its release.watch is over")
	fs.DurationVar(&c.scaleDownDelay, "scale-down-delay", releasemanager.DefaultScaleDownDelay, "how long a build that lost its last route keeps its pods, while proxies still send it requests, when its release.scaleDownDelay is unset (0: they go in the run after)")
	fs.BoolVar(&c.humaneReleasesEnabled, "humane-releases-enabled", true, "let humane and inhumane schedules release (false: only \"always\" releases)")
	fs.StringVar(&c.operator.ServiceLevelsNamespace, "service-levels-namespace", "service-level-objectives", "namespace of Sloth service levels on target clusters (empty turns them off)")
	fs.StringVar(&c.operator.DevRoutesServiceHost, "dev-routes-service-host", "", "service the \"00_dev-<app>\" routes of Clusters with enableDevRoutes send to (empty: no dev routes)")
	fs.IntVar(&c.operator.DevRoutesServicePort, "dev-routes-service-port", 80, "port of --dev-routes-service-host")
	fs.StringVar(&c.operator.InstanceID, "instance-id", "", "identifies this Picchu on target clusters and in Alertmanager: it marks what it writes there, and writes over or deletes only what carries its mark (default: the UID of the delivery cluster's kube-system namespace)")
	fs.StringVar(&c.protectedNamespaces, "protected-namespaces", "", "comma-separated namespaces, or prefixes ending in *, that no app may be deployed in, beside "+
		strings.Join(picchuv1alpha1.DefaultProtectedNamespaces, ", ")+" (always protected), the delivery namespaces and the operator's, and the add-ons' ("+
		strings.Join(picchuv1alpha1.AddOnNamespaces, ", ")+"), each of which a leading - removes (-monitoring)")
	fs.StringVar(&c.appNamespacePolicy, "app-namespace-policy", "", "comma-separated DELIVERY=PATTERN entries: the apps of delivery namespace DELIVERY (* for any without an entry) may be deployed only in namespaces matching one of its PATTERNs, a name or a prefix ending in *, where {namespace} is DELIVERY (*={namespace}-*: each team's apps in namespaces named after it); empty leaves every namespace that is not protected")
	fs.StringVar(&c.operator.ClusterPrometheusAddress, "cluster-prometheus-address", "", "in-cluster Prometheus the KEDA Prometheus trigger of ambient-mesh apps with a targetRequestsRate asks for request rates (empty: such apps keep their HPA)")
}

// bindLifecycle declares the flags of how long builds may take, and how
// long builds and apps that are done with are kept.
func (c *config) bindLifecycle(fs *flag.FlagSet) {
	fs.DurationVar(&c.operator.Timeouts.Created, "created-timeout", release.DefaultTimeouts.Created, "how long a build may stay in created before it times out")
	fs.DurationVar(&c.operator.Timeouts.Deploying, "deploying-timeout", release.DefaultTimeouts.Deploying, "how long a build may take to deploy on every live cluster before it times out")
	fs.IntVar(&c.operator.KeepDone, "keep-done-builds", release.DefaultKeepDone, "builds of a target that are done with (retired, failed) kept at most, whatever their ttl: older ones are garbage collected")
	fs.DurationVar(&c.operator.RemovalGrace, "app-removal-grace", releasemanager.DefaultRemovalGrace, "how long an app no Revision targets any longer stays on its clusters before it is removed (an app with traffic stays until its ReleaseManager is deleted)")
	fs.DurationVar(&c.operator.Timeouts.Testing, "external-test-timeout", release.DefaultTimeouts.Testing, "how long an external test may go without a report when the Revision's externalTest.timeout is not set")
}

// ignoredSet is the names of the flags of ignoredFlags that fs's command
// line set, in the order of their names.
func ignoredSet(fs *flag.FlagSet) []string {
	var ignored []string
	fs.Visit(func(f *flag.Flag) {
		if slices.ContainsFunc(ignoredFlags, func(i ignoredFlag) bool { return i.name == f.Name }) {
			ignored = append(ignored, f.Name)
		}
	})
	return ignored
}

// fillOperator sets the operator's options that come from flags checked
// and converted: periods, rates and lists.
func (c *config) fillOperator() {
	c.operator.SyncPeriod = time.Duration(c.syncPeriodSeconds) * time.Second
	c.operator.ClusterQPS = float32(c.clusterAPIQPS)
	c.operator.Namespaces = splitNamespaces(c.namespaces)
	c.operator.ProtectedNamespaces = splitNamespaces(c.protectedNamespaces)
	c.operator.OwnNamespace = ownNamespace()
	c.operator.AppNamespacePolicy, _ = picchuv1alpha1.ParseAppNamespacePolicy(c.appNamespacePolicy)
	c.operator.ImageRegistryAllowedHosts, _ = images.ParseHosts(strings.Split(c.imageRegistryAllowedHosts, ","))
	c.operator.CrossNamespaceSources = splitNamespaces(c.crossNamespaceSources)
	c.operator.HumaneReleasesDisabled = !c.humaneReleasesEnabled
	c.operator.ScaleDownDelay = c.scaleDownDelay
	if c.scaleDownDelay == 0 {
		c.operator.ScaleDownDelay = releasemanager.NoScaleDownDelay
	}
	if !c.prometheusEnabled {
		c.operator.PrometheusQueryAddress = ""
	}
}

// ignoredFlag is a flag of the original operator that Picchu accepts, so
// that the original's command line still starts it, and ignores, saying why
// at start-up: the original never read it either, or what it tuned is not
// done here.
type ignoredFlag struct {
	name, why string
	// bind declares the flag with the original's type and default.
	bind func(fs *flag.FlagSet)
}

var ignoredFlags = []ignoredFlag{
	{
		name: "manage-route53", why: "the original declared it and never read it; Picchu manages no DNS records",
		bind: func(fs *flag.FlagSet) {
			fs.Bool("manage-route53", false, "ignored: accepted for the original's command line, which never read it")
		},
	},
	{
		name: "service-levels-fleet", why: "the original declared it and never read it; service levels go to every cluster of each target's fleet, in --service-levels-namespace",
		bind: func(fs *flag.FlagSet) {
			fs.String("service-levels-fleet", "delivery", "ignored: accepted for the original's command line, which never read it")
		},
	},
	{
		name: "slack-query-ttl", why: "it cached the original's scan of a Slack channel's last messages, made to skip duplicate posts; Picchu skips a notice that repeats its release's last one from memory and reads no channel history, so there is nothing to cache",
		bind: func(fs *flag.FlagSet) {
			fs.Duration("slack-query-ttl", 120*time.Second, "ignored: accepted for the original's command line; it cached a scan of Slack messages Picchu does not make")
		},
	},
}

// logIgnored logs, for each ignored flag the command line set, that it is
// ignored and why.
func (c *config) logIgnored(log logr.Logger) {
	for _, name := range c.ignored {
		for _, f := range ignoredFlags {
			if f.name == name {
				log.Info("flag --"+name+" is ignored: "+f.why, "flag", name)
			}
		}
	}
}

// check says what is wrong with the flags parsed, naming the flag: the
// first wrong one, in the order of the checks below.
func (c *config) check() error {
	for _, check := range []func() error{
		c.checkLimits,
		c.checkValues,
		c.checkNamespaces,
		c.checkSecrets,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkLimits checks the flags that are numbers: periods, rates, counts,
// percents and ports.
func (c *config) checkLimits() error {
	if c.syncPeriodSeconds < 1 {
		return fmt.Errorf("--sync-period-seconds must be at least 1, got %d", c.syncPeriodSeconds)
	}
	if c.kubeAPIQPS <= 0 || c.clusterAPIQPS <= 0 || c.kubeAPIBurst < 1 || c.operator.ClusterBurst < 1 {
		return errors.New("--kube-api-qps and --cluster-api-qps must be positive, --kube-api-burst and --cluster-api-burst at least 1")
	}
	if err := c.shards.check(c.enableLeaderElection); err != nil {
		return err
	}
	if c.operator.KeepDone < 1 {
		return fmt.Errorf("--keep-done-builds must be at least 1, got %d", c.operator.KeepDone)
	}
	if c.operator.ConcurrentRevisions < 1 || c.operator.ConcurrentReleaseManagers < 1 {
		return errors.New("--concurrent-revisions and --concurrent-release-managers must be at least 1")
	}
	if c.operator.Timeouts.Created <= 0 || c.operator.Timeouts.Deploying <= 0 || c.operator.Timeouts.Testing <= 0 {
		return errors.New("--created-timeout, --deploying-timeout and --external-test-timeout must be positive")
	}
	if c.operator.ProvenPercent < 0 || c.operator.ProvenPercent > 100 {
		return fmt.Errorf("--slo-proven-percent must be from 0 to 100, got %d", c.operator.ProvenPercent)
	}
	if c.scaleDownDelay < 0 {
		return fmt.Errorf("--scale-down-delay must not be negative, got %s", c.scaleDownDelay)
	}
	if c.operator.DevRoutesServicePort < 1 || c.operator.DevRoutesServicePort > 65535 {
		return fmt.Errorf("--dev-routes-service-port must be a port number from 1 to 65535, got %d", c.operator.DevRoutesServicePort)
	}
	if c.operator.PrometheusQueryTTL <= 0 || c.operator.PrometheusQueryTimeout <= 0 || c.operator.DatadogQueryTTL <= 0 {
		return errors.New("--prometheus-query-ttl, --prometheus-query-timeout and --datadog-query-ttl must be positive")
	}
	return nil
}

// checkValues checks the flags whose values have a form: an address,
// patterns, a label value, hosts, a label name, a bound on silences and
// the instance's mark; and that --namespaces names some.
func (c *config) checkValues() error {
	if c.operator.AlertmanagerAddress != "" {
		if _, err := alertmanager.New(alertmanager.Config{Address: c.operator.AlertmanagerAddress}); err != nil {
			return fmt.Errorf("--alertmanager-address: %w", err)
		}
	}
	for _, ns := range splitNamespaces(c.protectedNamespaces) {
		if name, removed := strings.CutPrefix(ns, "-"); removed {
			if !slices.Contains(picchuv1alpha1.AddOnNamespaces, name) {
				return fmt.Errorf("--protected-namespaces: %q removes %q, which is not among the add-ons' namespaces (%s): %s are always protected",
					ns, name, strings.Join(picchuv1alpha1.AddOnNamespaces, ", "), strings.Join(picchuv1alpha1.DefaultProtectedNamespaces, ", "))
			}
			continue
		}
		if !protectedPattern.MatchString(ns) {
			return fmt.Errorf("--protected-namespaces: %q is neither a namespace name nor a prefix of one ending in *", ns)
		}
	}
	if _, err := picchuv1alpha1.ParseAppNamespacePolicy(c.appNamespacePolicy); err != nil {
		return fmt.Errorf("--app-namespace-policy: %w", err)
	}
	if id := c.operator.InstanceID; id != "" {
		if errs := validation.IsValidLabelValue(id); len(errs) > 0 {
			return fmt.Errorf("--instance-id: %q is not a label value: %s", id, strings.Join(errs, "; "))
		}
	}
	if _, err := images.ParseHosts(strings.Split(c.imageRegistryAllowedHosts, ",")); err != nil {
		return fmt.Errorf("--image-registry-allowed-hosts: %w", err)
	}
	if strings.TrimSpace(c.namespaces) == "" {
		// Empty used to mean every namespace: a Deployment that lost its
		// POD_NAMESPACE silently read every Secret of the cluster.
		return errors.New(`--namespaces is empty, $POD_NAMESPACE is not set and the operator does not run in a cluster: name the namespaces that hold Picchu's Clusters and Revisions, or "*" to read Secrets and ConfigMaps of every namespace`)
	}
	if l := c.operator.PrometheusClusterLabel; !labelName.MatchString(l) {
		return fmt.Errorf("--prometheus-cluster-label: %q is not a Prometheus label name", l)
	}
	if c.operator.MaxSilence < 2*silence.DefaultMargin {
		return fmt.Errorf("--max-silence must be at least %s (two margins), got %s", 2*silence.DefaultMargin, c.operator.MaxSilence)
	}
	if err := silence.CheckInstance(c.operator.InstanceID); err != nil {
		return fmt.Errorf("--instance-id: %w", err)
	}
	return nil
}

// checkNamespaces checks that --namespaces and
// --allow-cross-namespace-sources name namespaces, and that the operator
// reads the second's.
func (c *config) checkNamespaces() error {
	for _, ns := range splitNamespaces(c.namespaces) {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	watched := splitNamespaces(c.namespaces)
	for _, ns := range splitNamespaces(c.crossNamespaceSources) {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--allow-cross-namespace-sources: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
		// Allowed but not read, it would only trade one refusal for another.
		if len(watched) > 0 && !slices.Contains(watched, ns) {
			return fmt.Errorf("--allow-cross-namespace-sources: namespace %s is not among --namespaces %q, whose Secrets alone the operator reads", ns, c.namespaces)
		}
	}
	return nil
}

// checkSecrets checks that the Secrets of Datadog and Slack are in
// namespaces the operator reads, and that Slack has a channel.
func (c *config) checkSecrets() error {
	if c.operator.DatadogSecret != "" {
		if err := secretWatched("--datadog-secret", c.operator.DatadogSecret, c.namespaces); err != nil {
			return err
		}
	}
	if c.operator.SlackTokenSecret != "" {
		if err := secretWatched("--slack-token-secret", c.operator.SlackTokenSecret, c.namespaces); err != nil {
			return err
		}
		if c.operator.SlackChannel == "" {
			return errors.New("--slack-token-secret needs --slack-channel, the channel of apps whose alerts name none")
		}
	}
	return nil
}

// labelName is a Prometheus label name.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// protectedPattern is a namespace name, or a prefix of one ending in "*".
var protectedPattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?|[a-z0-9][-a-z0-9]{0,61}\*|\*)$`)

// secretWatched checks that flag's value names a Secret ("namespace/name")
// in a namespace the operator watches (namespaces, the --namespaces flag).
func secretWatched(flag, value, namespaces string) error {
	key, err := operator.SecretKey(flag, value)
	if err != nil {
		return err
	}
	if watched := splitNamespaces(namespaces); len(watched) > 0 && !slices.Contains(watched, key.Namespace) {
		return fmt.Errorf("%s %q: Secrets are read only from --namespaces %q", flag, value, namespaces)
	}
	return nil
}

// inClusterNamespace is where a pod's service account names its namespace.
var inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ownNamespace is the operator's namespace: $POD_NAMESPACE, or, in a pod,
// the pod's; "" when neither says.
func ownNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	data, err := os.ReadFile(inClusterNamespace)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// splitNamespaces splits --namespaces; "*", or none, means every namespace.
func splitNamespaces(flag string) []string {
	if strings.TrimSpace(flag) == "*" {
		return nil
	}
	var out []string
	for ns := range strings.SplitSeq(flag, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// restConfig is the client config of the delivery cluster: kubeconfig's,
// or controller-runtime's default when it is empty.
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
	c.logIgnored(log)

	mgr, err := c.newManager(ctx)
	if err != nil {
		return err
	}
	if err := registerMetrics(); err != nil {
		return err
	}
	if err := c.setup(mgr); err != nil {
		return err
	}
	log.Info("starting manager", "webhooks", c.enableWebhooks, "leaderElection", c.enableLeaderElection,
		"syncPeriod", c.operator.SyncPeriod.String(), "shards", c.shards.n, "namespaces", c.namespaces, "allowExecCredentials", c.operator.AllowExecCredentials)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// newManager is the manager of the delivery cluster, with its liveness
// check; it sets the operator's shard coordinator.
func (c *config) newManager(ctx context.Context) (ctrl.Manager, error) {
	cfg, err := restConfig(c.kubeconfig)
	if err != nil {
		return nil, err
	}
	throttle.Limit(cfg, throttle.Delivery, float32(c.kubeAPIQPS), c.kubeAPIBurst)
	scheme, err := operator.NewScheme()
	if err != nil {
		return nil, err
	}
	if c.operator.Shards, err = c.shards.coordinator(cfg, scheme, c.leaderElectionNamespace); err != nil {
		return nil, err
	}
	if c.pprofAddr != "" && c.pprofAddr != "0" {
		// Sample the waits of blocked goroutines (those over 1 ms) and one
		// in 100 contended locks, for the block and mutex profiles.
		goruntime.SetBlockProfileRate(int(time.Millisecond))
		goruntime.SetMutexProfileFraction(100)
	}
	mgr, err := ctrl.NewManager(cfg, c.managerOptions(ctx, scheme))
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding health check: %w", err)
	}
	return mgr, nil
}

// managerOptions are the options of the manager: its scheme, servers,
// leader election, shutdown and cache.
func (c *config) managerOptions(ctx context.Context, scheme *runtime.Scheme) ctrl.Options {
	syncPeriod := c.operator.SyncPeriod
	opts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: c.metricsAddr},
		HealthProbeBindAddress:  c.probeAddr,
		PprofBindAddress:        c.pprofAddr,
		LeaderElection:          c.enableLeaderElection,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: c.leaderElectionNamespace,
		// A replica that stops hands leadership over at once, not after
		// the lease runs out.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(shutdownGrace),
		Cache:                         operator.DeliveryCache(c.operator.Namespaces),
		NewCache:                      newSyncedOrStopping(ctx),
	}
	opts.Cache.SyncPeriod = &syncPeriod
	if c.enableWebhooks {
		opts.WebhookServer = webhook.NewServer(webhook.Options{Port: c.webhookPort, CertDir: c.webhookCertDir})
	}
	return opts
}

// registerMetrics registers the operator's metrics with those the manager
// serves.
func registerMetrics() error {
	if err := releasemetrics.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering release metrics: %w", err)
	}
	if err := throttle.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering the throttling metric: %w", err)
	}
	if err := shard.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering the shard metrics: %w", err)
	}
	if err := access.RegisterMetrics(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering the cluster health metrics: %w", err)
	}
	return nil
}

// setup adds the operator's controllers, and its webhooks when enabled,
// to mgr, with the readiness check: ready once the webhook server has
// started, at once without webhooks.
func (c *config) setup(mgr ctrl.Manager) error {
	if _, err := operator.Setup(mgr, c.operator); err != nil {
		return err
	}
	ready := healthz.Ping
	if c.enableWebhooks {
		if err := operator.SetupWebhooks(mgr, c.operator); err != nil {
			return err
		}
		ready = mgr.GetWebhookServer().StartedChecker()
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	return nil
}

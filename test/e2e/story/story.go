// Package story is the demo's story, run on a local fleet (test/e2e/fleet) by
// `make demo` with a live view, and by the end-to-end tests with assertions
// on what it observed:
//
//  1. v1 is released to 100 % in every target cluster;
//  2. v2 canaries and ramps to 100 % while v1 retires;
//  3. v3, half of whose requests fail, canaries; its canary alert fires in
//     Prometheus, and Picchu fails it and rolls it back in every cluster.
//
// Builds are the manifests of config/samples/demo, applied as a user would.
package story

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/forecast"
	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/kit"
)

const (
	// SampleApp is the app of the sample manifests.
	SampleApp = "demo"
	// DefaultErrorRatio is the share of v3's requests that fail.
	DefaultErrorRatio = 0.5
	// BudgetFactor is how much longer than its configured delays (plus the
	// time its build took to deploy) a phase may take.
	BudgetFactor = 1.2
	// queryTTL is how long the operator caches an alert query in the fleet
	// (fleet.OperatorArgs' --prometheus-query-ttl).
	queryTTL = time.Second

	defaultPollInterval = 200 * time.Millisecond
	// resetTimeout bounds the removal of an earlier run's builds.
	resetTimeout = 3 * time.Minute
	// slack is added to a phase's budget for its timeout: a phase that
	// overruns is reported, not cut short.
	slack = 2 * time.Minute
)

// SamplesDir is where the sample manifests live: config/samples/demo.
func SamplesDir() string { return filepath.Join(kit.RepoRoot(), "config", "samples", "demo") }

// Options says how to run the story.
type Options struct {
	Fleet *fleet.Fleet
	// App is the app's name ("demo" when empty): every "demo" of the sample
	// manifests is replaced with it, so tests can run apps side by side.
	App string
	// Samples is the directory of revision-v1.yaml, -v2 and -v3 (SamplesDir when empty).
	Samples string
	// ErrorRatio is the share of v3's requests that fail (DefaultErrorRatio when zero).
	ErrorRatio float64
	// PollInterval is how often the fleet is observed (200ms when zero).
	PollInterval time.Duration
	// Observe, when set, receives every observation, with the phase's name.
	Observe func(phase string, s Snapshot)
	// Logf, when set, narrates the story.
	Logf func(format string, args ...any)
	// Router, when set, routes every build of the story with it (the
	// samples leave it to the default, istio).
	Router picchuv1alpha1.Router
}

func (o *Options) defaults() {
	if o.App == "" {
		o.App = SampleApp
	}
	if o.Samples == "" {
		o.Samples = SamplesDir()
	}
	if o.ErrorRatio == 0 {
		o.ErrorRatio = DefaultErrorRatio
	}
	if o.PollInterval == 0 {
		o.PollInterval = defaultPollInterval
	}
	if o.Observe == nil {
		o.Observe = func(string, Snapshot) {}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// Phase is one part of the story and its timing.
type Phase struct {
	Name string
	// Tag is the build the phase applies.
	Tag string
	// Started is when the build was applied, Deployed when it first was
	// past deploying, Ended when the phase's outcome held everywhere.
	Started, Deployed, Ended time.Time
	// Delays is what the build's configuration makes the phase wait, and
	// DelaysExplained says of what it is made.
	Delays          time.Duration
	DelaysExplained string
	// Forecast is what kubectl picchu plan said of the build just before
	// it was applied (nil when it could not say).
	Forecast *forecast.Forecast
}

// ForecastTook says when the forecast had the build released, from when it
// was applied, and whether it had one.
func (p Phase) ForecastTook() (time.Duration, bool) {
	if p.Forecast == nil || p.Forecast.Finish == nil {
		return 0, false
	}
	return p.Forecast.Finish.Sub(p.Forecast.Made), true
}

// Took is how long the phase took.
func (p Phase) Took() time.Duration { return p.Ended.Sub(p.Started) }

// DeployTook is how long the build took to deploy.
func (p Phase) DeployTook() time.Duration {
	if p.Deployed.IsZero() {
		return 0
	}
	return p.Deployed.Sub(p.Started)
}

// Budget is BudgetFactor times the configured delays, plus the deploy time.
func (p Phase) Budget() time.Duration {
	return time.Duration(BudgetFactor*float64(p.Delays)) + p.DeployTook()
}

// Within says the phase ended within its budget.
func (p Phase) Within() bool { return !p.Ended.IsZero() && p.Took() <= p.Budget() }

// Result is what a run of the story did.
type Result struct {
	Phases []Phase
	// Final is the last observation.
	Final Snapshot
}

// Run runs the story: it removes the builds of an earlier run of the app,
// then runs the three phases. It fails when a phase does not reach its
// outcome within its budget plus two minutes; a phase that ends late but
// within that is reported by Phase.Within.
func Run(ctx context.Context, opts Options) (*Result, error) {
	opts.defaults()
	r := &runner{Options: opts, result: &Result{}}
	if err := Reset(ctx, opts.Fleet, opts.App); err != nil {
		return r.result, err
	}
	for tag, ratio := range map[string]float64{"v1": 0, "v2": 0, "v3": opts.ErrorRatio} {
		if err := mesh.SetErrorRatio(ctx, opts.Fleet.MeshURL, opts.App, tag, ratio); err != nil {
			return r.result, fmt.Errorf("setting the error ratio of %s %s: %w", opts.App, tag, err)
		}
	}
	steps := []struct {
		name, tag string
		outcome   func(Snapshot) error
	}{
		{"v1 released", "v1", r.released("v1", "")},
		{"v2 canaried and released, v1 retired", "v2", r.released("v2", "v1")},
		{"v3 fails its canary and is rolled back", "v3", r.rolledBack("v3", "v2")},
	}
	for _, s := range steps {
		if err := r.phase(ctx, s.name, s.tag, s.outcome); err != nil {
			return r.result, err
		}
	}
	return r.result, nil
}

type runner struct {
	Options
	result *Result
}

// phase applies the build tag and waits until outcome holds.
func (r *runner) phase(ctx context.Context, name, tag string, outcome func(Snapshot) error) error {
	rev, err := Manifest(r.Samples, r.App, tag)
	if err != nil {
		return err
	}
	if r.Router != "" {
		for i := range rev.Spec.Targets {
			rev.Spec.Targets[i].Router = r.Router
		}
	}
	p := Phase{Name: name, Tag: tag}
	first := !slices.ContainsFunc(Observe(ctx, r.Fleet, r.App).Builds, func(b Build) bool { return b.State == "released" })
	if p.Delays, p.DelaysExplained, err = delays(rev, tag == "v3", first); err != nil {
		return err
	}
	if plan, err := Plan(ctx, r.Fleet, rev); err != nil {
		r.Logf("%s: no forecast: %v", name, err)
	} else {
		p.Forecast = &plan
		var text strings.Builder
		_ = plan.WriteText(&text)
		r.Logf("%s: kubectl picchu plan -f %s says:\n%s", name, rev.Name, strings.TrimRight(text.String(), "\n"))
	}
	r.Logf("%s: applying %s", name, rev.Name)
	p.Started = time.Now()
	if err := kit.Apply(ctx, r.Fleet.Delivery.Client, rev); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	timeout := time.Duration(BudgetFactor*float64(p.Delays)) + slack
	err = r.poll(ctx, name, timeout, func(s Snapshot) error {
		if b := s.Build(tag); p.Deployed.IsZero() && deployed(b.State) {
			p.Deployed = s.At
		}
		return outcome(s)
	})
	if err != nil {
		r.result.Phases = append(r.result.Phases, p)
		return fmt.Errorf("%s: %w", name, err)
	}
	p.Ended = r.result.Final.At
	r.result.Phases = append(r.result.Phases, p)
	r.Logf("%s: done in %s (budget %s)", name, p.Took().Round(100*time.Millisecond), p.Budget().Round(100*time.Millisecond))
	return nil
}

// poll observes the fleet until check passes, for at most timeout.
func (r *runner) poll(ctx context.Context, phase string, timeout time.Duration, check func(Snapshot) error) error {
	return kit.Poll(ctx, r.PollInterval, timeout, "the outcome", func(ctx context.Context) error {
		s := Observe(ctx, r.Fleet, r.App)
		r.result.Final = s
		r.Observe(phase, s)
		return check(s)
	})
}

// deployed says a build in state is past deploying.
func deployed(state string) bool {
	switch state {
	case "", "created", "deploying":
		return false
	}
	return true
}

// released is the outcome of a release: tag released with 100 % of the
// traffic in every cluster, with Running pods there; the build before it,
// if any, retired without pods.
func (r *runner) released(tag, previous string) func(Snapshot) error {
	return func(s Snapshot) error {
		if err := s.Err; err != nil {
			return err
		}
		if st := s.Build(tag).State; st != "released" {
			return fmt.Errorf("%s is %q", tag, st)
		}
		if previous != "" {
			if st := s.Build(previous).State; st != "retired" {
				return fmt.Errorf("%s is %q", previous, st)
			}
		}
		for _, c := range s.Clusters {
			if err := serving(c, tag); err != nil {
				return err
			}
			if previous != "" && c.Pods[previous].Running > 0 {
				return fmt.Errorf("%s: %s still has %d pods Running", c.Name, previous, c.Pods[previous].Running)
			}
		}
		return nil
	}
}

// rolledBack is the outcome of a failed canary: tag failed, and all the
// traffic back on stable in every cluster, with Running pods there.
func (r *runner) rolledBack(tag, stable string) func(Snapshot) error {
	return func(s Snapshot) error {
		if err := s.Err; err != nil {
			return err
		}
		b := s.Build(tag)
		if !b.Failed || (b.State != "failing" && b.State != "failed") {
			return fmt.Errorf("%s is %q, failed=%v", tag, b.State, b.Failed)
		}
		for _, c := range s.Clusters {
			if err := serving(c, stable); err != nil {
				return err
			}
		}
		return nil
	}
}

// serving checks that tag has all of a cluster's traffic and all of its
// wanted pods Running.
func serving(c Cluster, tag string) error {
	if c.Err != nil {
		return fmt.Errorf("%s: %w", c.Name, c.Err)
	}
	if len(c.Weights) != 1 || c.Weights[tag] != 100 {
		return fmt.Errorf("%s routes %q", c.Name, c.Routes())
	}
	if p := c.Pods[tag]; p.Desired == 0 || p.Running < p.Desired {
		return fmt.Errorf("%s: %s has %d of %d pods Running", c.Name, tag, p.Running, p.Desired)
	}
	return nil
}

// delays is what a build's configuration makes its phase wait. A release
// waits for its canary's TTL and the step delay between its ramp's steps;
// the first build of an app, with no traffic to take from another, takes
// all of it after its canary. A failing canary waits for its alert: the
// SLO's failAfter, three scrapes and evaluations for Prometheus to see a
// rate of the new tag's errors and evaluate the alert, and the operator's
// alert query cache.
// operatorScaleDownDelay is the operator's --scale-down-delay as the fleet
// runs it (its default).
const operatorScaleDownDelay = 30 * time.Second

func delays(rev *picchuv1alpha1.Revision, failing, first bool) (time.Duration, string, error) {
	t := rev.Spec.Targets[0]
	if failing {
		var failAfter time.Duration
		for _, slo := range t.ServiceLevelObjectives {
			if slo.Enabled && slo.ServiceLevelIndicator.Canary.Enabled {
				d, err := time.ParseDuration(slo.ServiceLevelIndicator.Canary.FailAfter)
				if err != nil {
					return 0, "", fmt.Errorf("%s: slo %s: canary.failAfter: %w", rev.Name, slo.Name, err)
				}
				failAfter = d
				break
			}
		}
		total := failAfter + mesh.DefaultLag + 3*fleet.ScrapeInterval + queryTTL
		return total, fmt.Sprintf("failAfter %s + the mesh's route lag %s + 3 scrapes of %s + query cache %s",
			failAfter, mesh.DefaultLag, fleet.ScrapeInterval, queryTTL), nil
	}
	canary := time.Duration(t.Canary.TTL) * time.Second
	if first {
		return canary, fmt.Sprintf("canary %s; the app's first build then takes all traffic", canary), nil
	}
	steps := 0
	for p := int32(0); ; steps++ {
		next := release.NextPercent(t.Release, p)
		if next <= p {
			break
		}
		p = next
	}
	delay := release.StepDelay(t.Release)
	// The build before keeps its pods its scale-down delay after its last
	// route: the phase ends once they are gone.
	drain := operatorScaleDownDelay
	if t.Release.ScaleDownDelay != nil {
		drain = t.Release.ScaleDownDelay.Duration
	}
	total := canary + time.Duration(max(steps-1, 0))*delay + drain
	return total, fmt.Sprintf("canary %s + %d steps × %s + the previous build's scale-down delay %s", canary, max(steps-1, 0), delay, drain), nil
}

// Manifest reads samples/revision-<tag>.yaml, with every "demo" replaced
// by app, as a Revision.
func Manifest(samples, app, tag string) (*picchuv1alpha1.Revision, error) {
	path := filepath.Join(samples, "revision-"+tag+".yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", tag, err)
	}
	if app != SampleApp {
		data = []byte(strings.ReplaceAll(string(data), SampleApp, app))
	}
	// A Revision decodes leniently (see its UnmarshalJSON), which a strict
	// decode does not see into: decode its parts strictly instead.
	var strict struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              picchuv1alpha1.RevisionSpec `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(data, &strict); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	rev := &picchuv1alpha1.Revision{TypeMeta: strict.TypeMeta, ObjectMeta: strict.ObjectMeta, Spec: strict.Spec}
	if len(rev.Spec.Targets) != 1 || rev.Spec.Targets[0].Name != Target {
		return nil, fmt.Errorf("%s: want exactly one target, named %q", path, Target)
	}
	return rev, nil
}

// Reset removes an earlier run of app, as a person removes an app: it
// deletes its Revisions, then its ReleaseManagers (Picchu never takes a
// serving app down on its own), and waits until Picchu has removed the app
// from the fleet: no Revision or ReleaseManager left, no namespace on a
// target. A ReleaseManager made again meanwhile from a Revision the
// operator's cache still held is deleted again.
func Reset(ctx context.Context, f *fleet.Fleet, app string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, defaultPollInterval, resetTimeout, true, func(ctx context.Context) (bool, error) {
		last = removeStep(ctx, f, app)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("removing an earlier run of %s: %w (last: %v)", app, err, last)
	}
	return nil
}

// removeStep deletes what is left of app and says what remains, if anything.
func removeStep(ctx context.Context, f *fleet.Fleet, app string) error {
	c := f.Delivery.Client
	revs := &picchuv1alpha1.RevisionList{}
	if err := c.List(ctx, revs, client.InNamespace(f.Namespace), client.MatchingFields{picchuv1alpha1.RevisionAppField: app}); err != nil {
		return fmt.Errorf("listing revisions of %s: %w", app, err)
	}
	for i := range revs.Items {
		if err := c.Delete(ctx, &revs.Items[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting revision %s: %w", revs.Items[i].Name, err)
		}
	}
	if len(revs.Items) > 0 {
		return fmt.Errorf("revision %s remains", revs.Items[0].Name)
	}
	rms := &picchuv1alpha1.ReleaseManagerList{}
	if err := c.List(ctx, rms, client.InNamespace(f.Namespace), client.MatchingLabels{picchuv1alpha1.LabelApp: app}); err != nil {
		return fmt.Errorf("listing release managers of %s: %w", app, err)
	}
	for i := range rms.Items {
		if !rms.Items[i].DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.Delete(ctx, &rms.Items[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting release manager %s: %w", rms.Items[i].Name, err)
		}
	}
	if len(rms.Items) > 0 {
		return fmt.Errorf("release manager %s remains", rms.Items[0].Name)
	}
	for _, t := range f.Targets {
		ns := app + "-" + Target
		err := t.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if err == nil {
			return fmt.Errorf("%s: namespace %s remains", t.Name, ns)
		}
		if client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// Tags are the builds of the story, in order.
var Tags = []string{"v1", "v2", "v3"}

package releasemanager

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan"
	"github.com/medium/picchu/plan/manifests"
)

// monitoring is what the app's monitoring objects are built from: the
// settings of a build.
func (s *snapshot) monitoring(inc *incarnation) manifests.Monitoring {
	t := inc.target
	return manifests.Monitoring{
		App: s.rm.Spec.App, Target: s.rm.Spec.Target,
		SLOs: t.ServiceLevelObjectives, Labels: t.ServiceLevelObjectiveLabels,
		ServiceMonitors: t.ServiceMonitors, AlertRules: t.AlertRules,
		ClusterLabel: s.services.ClusterLabel,
	}
}

// monitoringObjects are the monitoring objects a run wants on every
// cluster, built once per run.
type monitoringObjects struct {
	// err says why they could not be built (a bad SLO or monitor); every
	// cluster reports it.
	err           error
	monitors      []*monitoringv1.ServiceMonitor
	sloRules      *monitoringv1.PrometheusRule
	alertRules    *monitoringv1.PrometheusRule
	serviceLevels *slothv1.PrometheusServiceLevel
	canaries      []*monitoringv1.PrometheusRule
}

// monitoringObjects builds the app's ServiceMonitors, SLO recording rules,
// legacy alert rules and Sloth service levels from the newest build, and the
// canary alert rules of each build that canaries.
func (s *snapshot) monitoringObjects(newest *incarnation) (out monitoringObjects) {
	m := s.monitoring(newest)
	err := m.Check()
	if err != nil {
		// The webhook refuses these; a Revision that got past it writes
		// nothing another team's verdicts could read.
		err = fmt.Errorf("spec.targets: what could reach another team's verdicts is refused: %w", err)
	} else if out.monitors, err = manifests.ServiceMonitors(m); err == nil {
		if out.sloRules, err = manifests.SLORules(m); err == nil && s.serviceLevels != "" {
			out.serviceLevels, err = manifests.ServiceLevels(m, s.serviceLevels)
		}
	}
	if err != nil {
		out.err = fmt.Errorf("build %s: %w", newest.tag, err)
		return out
	}
	out.alertRules = manifests.AlertRules(m)
	for _, inc := range s.incarnations {
		if inc.revision == nil || !inc.step.State.RunsCanary() {
			continue
		}
		rule, err := manifests.CanaryRules(s.monitoring(inc), inc.tag)
		if err != nil {
			out.err = fmt.Errorf("build %s: %w", inc.tag, err)
			return out
		}
		if rule != nil {
			out.canaries = append(out.canaries, rule)
		}
	}
	return out
}

// monitoringSteps apply the monitoring objects to a cluster and delete
// every monitoring object Picchu wrote there for the app that is no longer
// wanted. The Sloth service levels' namespace is created when a cluster
// does not have it.
func (s *snapshot) monitoringSteps(objs monitoringObjects) []plan.Step {
	if objs.err != nil {
		return []plan.Step{{Op: plan.Fail, Err: objs.err}}
	}
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	ns := picchuv1alpha1.AppNamespace(app, target)
	var steps, canaries []plan.Step
	for _, sm := range objs.monitors {
		steps = append(steps, plan.Step{Op: plan.Apply, Object: sm})
	}
	steps = append(steps, plan.Step{Op: plan.Prune, Namespace: ns, Selector: manifests.MonitoringSelector(app, target, ""),
		Kinds: []schema.GroupVersionKind{serviceMonitorKind}, Keep: namesOf(steps)})
	for _, obj := range []struct {
		want client.Object
		name string
	}{
		{nilIfNil(objs.sloRules), manifests.SLORuleName(app)},
		{nilIfNil(objs.alertRules), manifests.AlertRuleName(app)},
	} {
		steps = append(steps, applyOrDelete(obj.want, &monitoringv1.PrometheusRule{
			ObjectMeta: metav1.ObjectMeta{Name: obj.name, Namespace: ns, Labels: manifests.MonitoringSelector(app, target, "")},
		}))
	}
	if s.serviceLevels != "" {
		if objs.serviceLevels == nil {
			steps = append(steps, plan.Step{Op: plan.Remove, Object: serviceLevelsOf(app, target, s.serviceLevels)})
		} else {
			// The original wrote one per build, labelled for the app and
			// target; once this one is applied (Sloth is served), they go.
			steps = append(steps, plan.Step{Op: plan.ApplyCreating, Object: objs.serviceLevels, Namespace: s.serviceLevels},
				plan.Step{Op: plan.Prune, Namespace: s.serviceLevels, Selector: manifests.MonitoringSelector(app, target, ""),
					Kinds: []schema.GroupVersionKind{serviceLevelsKind}, Keep: []string{objs.serviceLevels.Name}, Legacy: true})
		}
	}
	for _, rule := range objs.canaries {
		canaries = append(canaries, plan.Step{Op: plan.Apply, Object: rule})
	}
	return append(append(steps, canaries...), plan.Step{Op: plan.Prune, Namespace: ns,
		Selector: manifests.MonitoringSelector(app, target, manifests.RuleTypeCanary),
		Kinds:    []schema.GroupVersionKind{prometheusRuleKind}, Keep: namesOf(canaries)})
}

// serviceLevelsOf names the app's Sloth service levels in namespace.
func serviceLevelsOf(app, target, namespace string) *slothv1.PrometheusServiceLevel {
	return &slothv1.PrometheusServiceLevel{ObjectMeta: metav1.ObjectMeta{
		Name: manifests.ServiceLevelName(app, target), Namespace: namespace, Labels: manifests.MonitoringSelector(app, target, ""),
	}}
}

package releasemanager

import (
	"context"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
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
	var err error
	if out.monitors, err = manifests.ServiceMonitors(m); err == nil {
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

// syncMonitoring applies the monitoring objects to a cluster and deletes
// every monitoring object Picchu wrote there for the app that is no longer
// wanted.
func (s *snapshot) syncMonitoring(ctx context.Context, c *applier.Cluster, objs *monitoringObjects) error {
	if objs.err != nil {
		return objs.err
	}
	app, target := s.rm.Spec.App, s.rm.Spec.Target
	ns := picchuv1alpha1.AppNamespace(app, target)
	want := map[string]bool{}
	for _, sm := range objs.monitors {
		if err := c.Apply(ctx, sm); err != nil {
			return err
		}
		want[sm.Name] = true
	}
	if err := prune(ctx, c, ns, manifests.MonitoringSelector(app, target, ""), serviceMonitorKind, want); err != nil {
		return err
	}
	for _, obj := range []struct {
		want client.Object
		name string
	}{
		{nilIfNil(objs.sloRules), manifests.SLORuleName(app)},
		{nilIfNil(objs.alertRules), manifests.AlertRuleName(app)},
	} {
		if err := applyOrDelete(ctx, c, obj.want, &monitoringv1.PrometheusRule{
			ObjectMeta: metav1.ObjectMeta{Name: obj.name, Namespace: ns, Labels: manifests.MonitoringSelector(app, target, "")},
		}); err != nil {
			return err
		}
	}
	if s.serviceLevels != "" {
		if err := applyServiceLevels(ctx, c, objs.serviceLevels, serviceLevelsOf(app, target, s.serviceLevels)); err != nil {
			return err
		}
	}
	canaries := map[string]bool{}
	for _, rule := range objs.canaries {
		if err := c.Apply(ctx, rule); err != nil {
			return err
		}
		canaries[rule.Name] = true
	}
	return prune(ctx, c, ns, manifests.MonitoringSelector(app, target, manifests.RuleTypeCanary), prometheusRuleKind, canaries)
}

// applyServiceLevels applies psl, creating its namespace first when the
// cluster does not have it, or deletes gone when psl is nil. The namespace
// is shared by every app and carries none of Picchu's labels: it is created
// when missing, and never applied over nor deleted.
func applyServiceLevels(ctx context.Context, c *applier.Cluster, psl *slothv1.PrometheusServiceLevel, gone client.Object) error {
	if psl == nil {
		return c.Delete(ctx, gone)
	}
	err := c.Apply(ctx, psl)
	if !apierrors.IsNotFound(err) {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: psl.Namespace}}); err != nil {
		return fmt.Errorf("creating the service levels namespace: %w", err)
	}
	return c.Apply(ctx, psl)
}

// serviceLevelsOf names the app's Sloth service levels in namespace.
func serviceLevelsOf(app, target, namespace string) *slothv1.PrometheusServiceLevel {
	return &slothv1.PrometheusServiceLevel{ObjectMeta: metav1.ObjectMeta{
		Name: manifests.ServiceLevelName(app, target), Namespace: namespace, Labels: manifests.MonitoringSelector(app, target, ""),
	}}
}

// applyOrDelete applies want, or deletes gone when want is nil.
func applyOrDelete(ctx context.Context, c *applier.Cluster, want, gone client.Object) error {
	if want != nil {
		return c.Apply(ctx, want)
	}
	return c.Delete(ctx, gone)
}

// prune deletes the objects of kind in ns that carry the selector's labels
// and whose names want does not hold. A kind the cluster does not serve has
// nothing to prune.
func prune(ctx context.Context, c *applier.Cluster, ns string, selector map[string]string, kind schema.GroupVersionKind, want map[string]bool) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
	if err := c.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
		if isNoKind(err) {
			return nil
		}
		return fmt.Errorf("listing %s in %s: %w", kind.Kind, ns, err)
	}
	for i := range list.Items {
		if !want[list.Items[i].GetName()] {
			if err := c.Delete(ctx, &list.Items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

package manifests

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/util/validation/field"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// A team's monitoring objects must not reach another team's verdicts. Picchu
// judges a build by alerts and series labelled with the app's namespace on
// its target (AlertLabelNamespace) and a cluster of its fleet (the cluster
// label), and it sets the namespace itself on every rule it writes: the
// legacy alertRules, the SLO recording rules, the canary alerts and the
// Sloth service levels. What a Revision writes may therefore neither set
// those two labels nor record series:
//
//   - alertRules: no recording rule (its series could be counted as
//     another app's SLO totals), no label namespace or cluster label, no
//     label app but the app's own, and no expression that writes namespace
//     or the cluster label (label_replace, label_join, count_values);
//   - serviceMonitors: no honorLabels (a scraped series would keep the
//     namespace and cluster it claims), and no relabeling that writes
//     namespace or the cluster label, or a label named by a capture group;
//   - the labels Picchu puts on alerts and service levels (alertLabels,
//     serviceLevelLabels, alerting labels): no namespace or cluster label,
//     no app but the app's own.
//
// Picchu also appends to every ServiceMonitor endpoint relabelings that set
// namespace to the app's and drop the cluster label from the target, so
// that what a labelmap writes cannot stand either.

// CheckTenancy returns the errors, each naming its field under path, of
// what target t of app writes that could reach another team's verdicts,
// as above. clusterLabel is the operator's cluster label
// (--prometheus-cluster-label). The webhook and the controller both call it.
func CheckTenancy(app, clusterLabel string, t *picchuv1alpha1.RevisionTarget, path *field.Path) field.ErrorList {
	ns := picchuv1alpha1.AppNamespace(app, t.Name)
	guard := labelGuard{app: app, namespace: ns, cluster: clusterLabel}
	var errs field.ErrorList
	for i, r := range t.AlertRules {
		errs = append(errs, guard.alertRule(r, path.Child("alertRules").Index(i))...)
	}
	for i, sm := range t.ServiceMonitors {
		p := path.Child("serviceMonitors").Index(i).Child("spec", "endpoints")
		for j, ep := range sm.Spec.Endpoints {
			errs = append(errs, guard.endpoint(ep, p.Index(j))...)
		}
	}
	errs = append(errs, guard.sloLabels(t.ServiceLevelObjectiveLabels, path.Child("serviceLevelObjectiveLabels"))...)
	for i := range t.ServiceLevelObjectives {
		slo := &t.ServiceLevelObjectives[i]
		p := path.Child("serviceLevelObjectives").Index(i)
		errs = append(errs, guard.sloLabels(slo.ServiceLevelObjectiveLabels, p.Child("serviceLevelObjectiveLabels"))...)
		errs = append(errs, guard.labels(slo.Alerting.Labels, p.Child("alerting", "labels"))...)
		if a := slo.Alerting.PageAlert; a != nil {
			errs = append(errs, guard.labels(a.Labels, p.Child("alerting", "pageAlert", "labels"))...)
		}
		if a := slo.Alerting.TicketAlert; a != nil {
			errs = append(errs, guard.labels(a.Labels, p.Child("alerting", "ticketAlert", "labels"))...)
		}
	}
	return errs
}

// labelGuard checks what one app's target writes.
type labelGuard struct {
	app, namespace, cluster string
}

// reserved says label is one Picchu alone sets: the namespace, or the
// cluster label.
func (g labelGuard) reserved(label string) bool {
	return label == AlertLabelNamespace || label == g.cluster
}

// labels checks a label set that reaches alerts or series.
func (g labelGuard) labels(l map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(l)) {
		switch {
		case g.reserved(k):
			errs = append(errs, field.Forbidden(path.Key(k), fmt.Sprintf(
				"Picchu sets %q itself (the app's namespace %s, or the cluster a series comes from): another value could make the alert another team's", k, g.namespace)))
		case k == AlertLabelApp && l[k] != g.app:
			errs = append(errs, field.Invalid(path.Key(k), l[k], fmt.Sprintf("the label app must be the app's own name, %q: another could make the alert another app's", g.app)))
		}
	}
	return errs
}

func (g labelGuard) sloLabels(l picchuv1alpha1.ServiceLevelObjectiveLabels, path *field.Path) field.ErrorList {
	return append(g.labels(l.AlertLabels, path.Child("alertLabels")), g.labels(l.ServiceLevelLabels, path.Child("serviceLevelLabels"))...)
}

// alertRule checks one of the legacy alertRules.
func (g labelGuard) alertRule(r monitoringv1.Rule, path *field.Path) field.ErrorList {
	if r.Record != "" {
		return field.ErrorList{field.Forbidden(path.Child("record"),
			"recording rules are refused in alertRules: their series could be counted as another app's; record SLIs with serviceLevelObjectives")}
	}
	errs := g.labels(r.Labels, path.Child("labels"))
	expr, err := parser.ParseExpr(r.Expr.String())
	if err != nil {
		return append(errs, field.Invalid(path.Child("expr"), r.Expr.String(), "does not parse as PromQL: "+err.Error()))
	}
	for _, l := range writtenLabels(expr) {
		if g.reserved(l) {
			errs = append(errs, field.Forbidden(path.Child("expr"), fmt.Sprintf("writes the label %q, which Picchu alone sets", l)))
		}
	}
	return errs
}

// endpoint checks a ServiceMonitor endpoint.
func (g labelGuard) endpoint(ep monitoringv1.Endpoint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ep.HonorLabels {
		errs = append(errs, field.Forbidden(path.Child("honorLabels"),
			"a scraped series would keep the namespace and cluster it claims, and could count as another team's"))
	}
	for name, rcs := range map[string][]monitoringv1.RelabelConfig{"relabelings": ep.RelabelConfigs, "metricRelabelings": ep.MetricRelabelConfigs} {
		for k, rc := range rcs {
			switch p := path.Child(name).Index(k).Child("targetLabel"); {
			case g.reserved(rc.TargetLabel):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("Picchu sets %q itself", rc.TargetLabel)))
			case strings.Contains(rc.TargetLabel, "$"):
				errs = append(errs, field.Forbidden(p, "a label named by a capture group could be namespace or the cluster label, which Picchu alone sets"))
			}
		}
	}
	return errs
}

// writtenLabels are the labels expr writes itself: label_replace's and
// label_join's destination, count_values' label.
func writtenLabels(expr parser.Expr) []string {
	var out []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.Call:
			if (n.Func.Name == "label_replace" || n.Func.Name == "label_join") && len(n.Args) > 1 {
				if dst, ok := n.Args[1].(*parser.StringLiteral); ok {
					out = append(out, dst.Val)
				}
			}
		case *parser.AggregateExpr:
			if n.Op == parser.COUNT_VALUES {
				if l, ok := n.Param.(*parser.StringLiteral); ok {
					out = append(out, l.Val)
				}
			}
		}
		return nil
	})
	return out
}

// Check returns CheckTenancy's errors of m for the controller, which
// builds the monitoring objects of a Revision the webhook may not have
// seen, as one error; nil when there are none.
func (m Monitoring) Check() error {
	t := &picchuv1alpha1.RevisionTarget{
		Name: m.Target, AlertRules: m.AlertRules, ServiceMonitors: m.ServiceMonitors,
		ServiceLevelObjectives: m.SLOs, ServiceLevelObjectiveLabels: m.Labels,
	}
	if errs := CheckTenancy(m.App, m.ClusterLabel, t, field.NewPath("spec", "targets").Key(m.Target)); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}

// forcedRelabelings are appended to every endpoint of the app's
// ServiceMonitors: its targets' namespace is the app's, and they carry no
// cluster label (the cluster's Prometheus adds its own), whatever a
// labelmap before them wrote.
func (m Monitoring) forcedRelabelings(ep *monitoringv1.Endpoint) {
	ns := picchuv1alpha1.AppNamespace(m.App, m.Target)
	ep.RelabelConfigs = append(ep.RelabelConfigs, monitoringv1.RelabelConfig{
		Action: "replace", TargetLabel: AlertLabelNamespace, Replacement: &ns,
	})
	if m.ClusterLabel != "" && m.ClusterLabel != AlertLabelNamespace {
		ep.RelabelConfigs = append(ep.RelabelConfigs, monitoringv1.RelabelConfig{Action: "labeldrop", Regex: m.ClusterLabel})
	}
	ep.MetricRelabelConfigs = append(ep.MetricRelabelConfigs, monitoringv1.RelabelConfig{
		Action: "replace", TargetLabel: AlertLabelNamespace, Replacement: &ns,
	})
}

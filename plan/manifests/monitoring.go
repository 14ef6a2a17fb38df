package manifests

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Labels and values that mark Picchu's monitoring objects and alerts.
const (
	// LabelRuleType says what a PrometheusRule Picchu wrote holds: "slo"
	// (recording rules), "canary" (a build's canary alerts) or "alerts" (the
	// legacy alertRules).
	LabelRuleType  = "picchu.medium.engineering/ruleType"
	RuleTypeSLO    = "slo"
	RuleTypeCanary = "canary"
	RuleTypeAlerts = "alerts"

	// AlertLabelApp, AlertLabelTag, AlertLabelSLO and AlertLabelCanary are
	// the alert labels Picchu reads back to judge a build.
	AlertLabelApp    = "app"
	AlertLabelTag    = "tag"
	AlertLabelSLO    = "slo"
	AlertLabelCanary = "canary"
	// AlertLabelNamespace is the app's namespace in its target
	// (<app>-<target>), which Picchu sets last on every rule and series
	// it writes: verdicts select by it (see integrations/scope).
	AlertLabelNamespace = "namespace"

	// CanaryRateWindow is the range over which the canary alerts compare
	// error ratios.
	CanaryRateWindow = "2m"
)

// Monitoring is what an app's monitoring objects in a target are built
// from: the settings of its newest build.
type Monitoring struct {
	App, Target string
	// SLOs are the build's serviceLevelObjectives; only enabled ones count.
	SLOs []picchuv1alpha1.ServiceLevelObjective
	// Labels are the target's serviceLevelObjectiveLabels, shared by every SLO.
	Labels picchuv1alpha1.ServiceLevelObjectiveLabels
	// ServiceMonitors and AlertRules are the build's serviceMonitors and
	// legacy alertRules.
	ServiceMonitors []picchuv1alpha1.ServiceMonitor
	AlertRules      []monitoringv1.Rule
	// ClusterLabel is the label that names the cluster a series comes
	// from (--prometheus-cluster-label), which no monitoring object of the
	// app may write (CheckTenancy).
	ClusterLabel string
}

// namespace is the app's namespace on the target, which every rule Picchu
// writes labels its alerts and series with.
func (m Monitoring) namespace() string { return picchuv1alpha1.AppNamespace(m.App, m.Target) }

// enabledSLOs are the SLOs that get rules, alerts and service levels.
func (m Monitoring) enabledSLOs() []picchuv1alpha1.ServiceLevelObjective {
	var out []picchuv1alpha1.ServiceLevelObjective
	for _, slo := range m.SLOs {
		if slo.Enabled {
			out = append(out, slo)
		}
	}
	return out
}

// SLORuleName, CanaryRuleName and AlertRuleName name an app's PrometheusRules.
func SLORuleName(app string) string         { return app + "-slo" }
func CanaryRuleName(app, tag string) string { return app + "-canary-" + tag }
func AlertRuleName(app string) string       { return app }

// ServiceLevelName names an app's Sloth service levels in a target.
func ServiceLevelName(app, target string) string {
	return picchuv1alpha1.AppNamespace(app, target) + "-servicelevels"
}

// MonitoringSelector selects every monitoring object Picchu wrote for an
// app in a target, of one rule type when ruleType is not empty.
func MonitoringSelector(app, target, ruleType string) map[string]string {
	l := appLabels(app, target)
	if ruleType != "" {
		l[LabelRuleType] = ruleType
	}
	return l
}

// SLOMetric is the name of the series an SLO's recording rule writes:
// "<app>:<slo>:total" or "<app>:<slo>:errors", with characters a metric name
// cannot hold replaced by "_".
func SLOMetric(app, slo, kind string) string {
	return invalidMetricChars.ReplaceAllString(app, "_") + ":" + invalidMetricChars.ReplaceAllString(slo, "_") + ":" + kind
}

var invalidMetricChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// merge returns the union of label maps; later maps win.
func merge(layers ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, l := range layers {
		maps.Copy(out, l)
	}
	return out
}

// ServiceMonitors are the app's ServiceMonitors, one per serviceMonitors
// entry, each selecting services in the app's namespace. With sloRegex, a
// metric relabelling without a regex gets one that matches exactly the
// metrics the SLO queries read. The user's labels are kept; Picchu adds the
// app and target labels it finds its monitors by. The inputs are not
// modified.
func ServiceMonitors(m Monitoring) ([]*monitoringv1.ServiceMonitor, error) {
	if len(m.ServiceMonitors) == 0 {
		return nil, nil
	}
	ns := picchuv1alpha1.AppNamespace(m.App, m.Target)
	var sloRegex string
	out := make([]*monitoringv1.ServiceMonitor, 0, len(m.ServiceMonitors))
	for _, entry := range m.ServiceMonitors {
		sm := &monitoringv1.ServiceMonitor{
			ObjectMeta: metav1.ObjectMeta{
				Name: entry.Name, Namespace: ns,
				Labels:      merge(entry.Labels, appLabels(m.App, m.Target)),
				Annotations: maps.Clone(entry.Annotations),
			},
			Spec: *entry.Spec.DeepCopy(),
		}
		sm.Spec.NamespaceSelector = monitoringv1.NamespaceSelector{MatchNames: []string{ns}}
		if entry.SLORegex {
			if sloRegex == "" {
				names, err := m.sloMetricNames()
				if err != nil {
					return nil, fmt.Errorf("serviceMonitors[%s].sloRegex: %w", entry.Name, err)
				}
				if len(names) == 0 {
					return nil, fmt.Errorf("serviceMonitors[%s].sloRegex: no enabled SLO names a metric", entry.Name)
				}
				sloRegex = strings.Join(names, "|")
			}
			for i := range sm.Spec.Endpoints {
				for j := range sm.Spec.Endpoints[i].MetricRelabelConfigs {
					rc := &sm.Spec.Endpoints[i].MetricRelabelConfigs[j]
					if rc.Regex == "" {
						rc.Regex = sloRegex
					}
				}
			}
		}
		for i := range sm.Spec.Endpoints {
			m.forcedRelabelings(&sm.Spec.Endpoints[i])
		}
		out = append(out, sm)
	}
	return out, nil
}

// sloMetricNames are the sorted names of the metrics the enabled SLOs'
// queries select, parsed with Prometheus' own PromQL parser.
func (m Monitoring) sloMetricNames() ([]string, error) {
	seen := map[string]bool{}
	for _, slo := range m.enabledSLOs() {
		for field, q := range map[string]string{
			"totalQuery": slo.ServiceLevelIndicator.TotalQuery, "errorQuery": slo.ServiceLevelIndicator.ErrorQuery,
		} {
			if q == "" {
				continue
			}
			expr, err := parser.ParseExpr(q)
			if err != nil {
				return nil, fmt.Errorf("serviceLevelObjectives[%s].serviceLevelIndicator.%s: %w", slo.Name, field, err)
			}
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				if vs, ok := node.(*parser.VectorSelector); ok && vs.Name != "" {
					seen[regexp.QuoteMeta(vs.Name)] = true
				}
				return nil
			})
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// tagKey is the label of an SLO's queries that holds the build's tag.
func tagKey(slo picchuv1alpha1.ServiceLevelObjective) string {
	if k := slo.ServiceLevelIndicator.TagKey; k != "" {
		return k
	}
	return AlertLabelTag
}

// recordExpr is the recording rule's expression for one of an SLO's
// queries: the query itself, with the tag copied to the label "tag" when
// the query holds it under another name.
func recordExpr(slo picchuv1alpha1.ServiceLevelObjective, query string) string {
	key := tagKey(slo)
	if key == AlertLabelTag {
		return query
	}
	return fmt.Sprintf(`label_replace(%s, %q, "$1", %q, "(.*)")`, query, AlertLabelTag, key)
}

// SLORules is the app's PrometheusRule "<app>-slo": for each enabled SLO a
// group "<slo>_record" recording its total and error queries as
// "<app>:<slo>:total" and "<app>:<slo>:errors", with the tag in the label
// "tag" and the app's namespace in the label "namespace" (which the
// verdicts select them by). Nil when no SLO is enabled.
func SLORules(m Monitoring) (*monitoringv1.PrometheusRule, error) {
	slos := m.enabledSLOs()
	if len(slos) == 0 {
		return nil, nil
	}
	pr := m.prometheusRule(SLORuleName(m.App), RuleTypeSLO, nil, slos)
	for _, slo := range slos {
		sli := slo.ServiceLevelIndicator
		if sli.TotalQuery == "" || sli.ErrorQuery == "" {
			return nil, fmt.Errorf("serviceLevelObjectives[%s].serviceLevelIndicator: totalQuery and errorQuery are required when the SLO is enabled", slo.Name)
		}
		pr.Spec.Groups = append(pr.Spec.Groups, monitoringv1.RuleGroup{
			Name: slo.Name + "_record",
			Rules: []monitoringv1.Rule{
				{Record: SLOMetric(m.App, slo.Name, "total"), Expr: intOrString(recordExpr(slo, sli.TotalQuery)), Labels: m.namespaceLabel()},
				{Record: SLOMetric(m.App, slo.Name, "errors"), Expr: intOrString(recordExpr(slo, sli.ErrorQuery)), Labels: m.namespaceLabel()},
			},
		})
	}
	return pr, nil
}

// prometheusRule is an empty PrometheusRule of the app with the rule labels
// of the target and the given SLOs; Picchu's own labels, which it finds the
// rule by, come last.
func (m Monitoring) prometheusRule(name, ruleType string, extra map[string]string, slos []picchuv1alpha1.ServiceLevelObjective) *monitoringv1.PrometheusRule {
	layers := []map[string]string{m.Labels.RuleLabels}
	for _, slo := range slos {
		layers = append(layers, slo.ServiceLevelObjectiveLabels.RuleLabels)
	}
	layers = append(layers, MonitoringSelector(m.App, m.Target, ruleType), extra)
	return &monitoringv1.PrometheusRule{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: picchuv1alpha1.AppNamespace(m.App, m.Target), Labels: merge(layers...),
	}}
}

// namespaceLabel is the label set of the app's namespace.
func (m Monitoring) namespaceLabel() map[string]string {
	return map[string]string{AlertLabelNamespace: m.namespace()}
}

// canarySLOs are the enabled SLOs whose canary check is on.
func (m Monitoring) canarySLOs() []picchuv1alpha1.ServiceLevelObjective {
	var out []picchuv1alpha1.ServiceLevelObjective
	for _, slo := range m.enabledSLOs() {
		if slo.ServiceLevelIndicator.Canary.Enabled {
			out = append(out, slo)
		}
	}
	return out
}

// HasCanaryChecks says the build has an SLO whose canary check is on.
func (m Monitoring) HasCanaryChecks() bool { return len(m.canarySLOs()) > 0 }

// allowance is an SLO canary's allowance as a ratio (0.5 percent is 0.005).
func allowance(c picchuv1alpha1.SLICanaryConfig) (float64, error) {
	if c.AllowancePercentString != "" {
		pct, err := strconv.ParseFloat(c.AllowancePercentString, 64)
		if err != nil {
			return 0, fmt.Errorf("allowancePercentString: %w", err)
		}
		return pct / 100, nil
	}
	return c.AllowancePercent / 100, nil
}

// CanaryExpr is the PromQL of an SLO's canary alert for one build: the
// build's error ratio, less the allowance, above the ratio of the whole
// app (every build, ignoring the tag), each of the app's series in its
// namespace ns.
func CanaryExpr(app, ns string, slo picchuv1alpha1.ServiceLevelObjective, tag string) (string, error) {
	allow, err := allowance(slo.ServiceLevelIndicator.Canary)
	if err != nil {
		return "", fmt.Errorf("serviceLevelObjectives[%s].serviceLevelIndicator.canary.%w", slo.Name, err)
	}
	errs, total := SLOMetric(app, slo.Name, "errors"), SLOMetric(app, slo.Name, "total")
	w := CanaryRateWindow
	sel := fmt.Sprintf(`{%s=%q,%s=%q}`, AlertLabelNamespace, ns, AlertLabelTag, tag)
	all := fmt.Sprintf(`{%s=%q}`, AlertLabelNamespace, ns)
	return fmt.Sprintf(
		`(sum by (%[1]s) (rate(%[2]s%[4]s[%[5]s])) / sum by (%[1]s) (rate(%[3]s%[4]s[%[5]s]))) - %[6]s > ignoring(%[1]s) (sum(rate(%[2]s%[7]s[%[5]s])) / sum(rate(%[3]s%[7]s[%[5]s])))`,
		AlertLabelTag, errs, total, sel, w, strconv.FormatFloat(allow, 'f', -1, 64), all,
	), nil
}

// CanaryRules is the PrometheusRule "<app>-canary-<tag>" that watches a
// build while it canaries: one alert "<slo>_canary" per SLO with its canary
// check on, firing once the build's error ratio has exceeded the app's by
// more than the allowance for failAfter. The alerts carry the user's alert
// labels; Picchu sets only the labels it reads them back by (app, tag,
// canary, namespace) and, unless the user sets it, slo="true". Nil when no SLO checks
// canaries.
func CanaryRules(m Monitoring, tag string) (*monitoringv1.PrometheusRule, error) {
	slos := m.canarySLOs()
	if len(slos) == 0 {
		return nil, nil
	}
	pr := m.prometheusRule(CanaryRuleName(m.App, tag), RuleTypeCanary, map[string]string{picchuv1alpha1.LabelTag: tag}, slos)
	group := monitoringv1.RuleGroup{Name: "picchu-canary-" + tag}
	for _, slo := range slos {
		expr, err := CanaryExpr(m.App, m.namespace(), slo, tag)
		if err != nil {
			return nil, err
		}
		rule := monitoringv1.Rule{
			Alert: slo.Name + "_canary",
			Expr:  intOrString(expr),
			Labels: merge(
				map[string]string{AlertLabelSLO: "true"},
				m.Labels.AlertLabels, slo.ServiceLevelObjectiveLabels.AlertLabels,
				map[string]string{AlertLabelApp: m.App, AlertLabelTag: tag, AlertLabelCanary: "true", AlertLabelNamespace: m.namespace()},
			),
			Annotations: map[string]string{
				"summary": fmt.Sprintf("%s %s fails the canary of SLO %s", m.App, tag, slo.Name),
				"message": slo.Description,
			},
		}
		if d := slo.ServiceLevelIndicator.Canary.FailAfter; d != "" {
			pd, err := promDuration(d)
			if err != nil {
				return nil, fmt.Errorf("serviceLevelObjectives[%s].serviceLevelIndicator.canary.failAfter: %w", slo.Name, err)
			}
			dur := monitoringv1.Duration(pd)
			rule.For = &dur
		}
		group.Rules = append(group.Rules, rule)
	}
	pr.Spec.Groups = []monitoringv1.RuleGroup{group}
	return pr, nil
}

// promDuration turns a Go duration such as "1.5m" (what failAfter admits)
// into the form Prometheus reads, such as "1m30s".
func promDuration(d string) (string, error) {
	parsed, err := time.ParseDuration(d)
	if err != nil {
		return "", err
	}
	return model.Duration(parsed).String(), nil
}

func intOrString(s string) intstr.IntOrString { return intstr.FromString(s) }

// AlertRules is the app's PrometheusRule "<app>" holding its legacy
// alertRules in the group "picchu.rules", each alert labelled with the
// app's namespace (which CheckTenancy refuses the rules to set); nil when
// there are none.
func AlertRules(m Monitoring) *monitoringv1.PrometheusRule {
	if len(m.AlertRules) == 0 {
		return nil
	}
	pr := m.prometheusRule(AlertRuleName(m.App), RuleTypeAlerts, nil, nil)
	rules := make([]monitoringv1.Rule, len(m.AlertRules))
	for i := range m.AlertRules {
		rules[i] = *m.AlertRules[i].DeepCopy()
		rules[i].Labels = merge(rules[i].Labels, m.namespaceLabel())
	}
	pr.Spec.Groups = []monitoringv1.RuleGroup{{Name: "picchu.rules", Rules: rules}}
	return pr
}

// ServiceLevels is the app's Sloth PrometheusServiceLevel
// "<app>-<target>-servicelevels" in namespace: one SLO per enabled SLO,
// whose events are the rates of the recording rules summed by tag (and
// grpc_method when the service level labels hold is_grpc), so burn alerts
// keep the tag of the build that burns, of the app's namespace alone; its
// labels and alerting labels carry app and the app's namespace, which the
// verdicts select the burn alerts by. Nil when no SLO is enabled.
func ServiceLevels(m Monitoring, namespace string) (*slothv1.PrometheusServiceLevel, error) {
	slos := m.enabledSLOs()
	if len(slos) == 0 {
		return nil, nil
	}
	psl := &slothv1.PrometheusServiceLevel{
		ObjectMeta: metav1.ObjectMeta{
			Name: ServiceLevelName(m.App, m.Target), Namespace: namespace, Labels: appLabels(m.App, m.Target),
		},
		Spec: slothv1.PrometheusServiceLevelSpec{Service: m.App},
	}
	for _, slo := range slos {
		objective, err := strconv.ParseFloat(slo.ObjectivePercentString, 64)
		if err != nil || objective <= 0 || objective > 100 {
			return nil, fmt.Errorf("serviceLevelObjectives[%s].objectivePercentString: %q is not a percent above 0", slo.Name, slo.ObjectivePercentString)
		}
		labels := merge(m.Labels.ServiceLevelLabels, slo.ServiceLevelObjectiveLabels.ServiceLevelLabels,
			map[string]string{AlertLabelApp: m.App}, m.namespaceLabel())
		by := AlertLabelTag
		if _, ok := labels["is_grpc"]; ok {
			by += ", grpc_method"
		}
		events := func(kind string) string {
			return fmt.Sprintf("sum by (%s) (rate(%s{%s=%q}[{{.window}}]))", by, SLOMetric(m.App, slo.Name, kind), AlertLabelNamespace, m.namespace())
		}
		a := slo.Alerting
		name := a.Name
		if name == "" {
			name = slo.Name
		}
		out := slothv1.SLO{
			Name: slo.Name, Description: slo.Description, Objective: objective, Labels: labels,
			SLI: slothv1.SLI{Events: &slothv1.SLIEvents{ErrorQuery: events("errors"), TotalQuery: events("total")}},
			Alerting: slothv1.Alerting{
				Name: name, Labels: merge(a.Labels, m.namespaceLabel()), Annotations: maps.Clone(a.Annotations),
				PageAlert: slothAlert(a.PageAlert), TicketAlert: slothAlert(a.TicketAlert),
			},
		}
		psl.Spec.SLOs = append(psl.Spec.SLOs, out)
	}
	return psl, nil
}

func slothAlert(a *picchuv1alpha1.Alert) slothv1.Alert {
	if a == nil {
		return slothv1.Alert{}
	}
	return slothv1.Alert{Disable: a.Disable, Labels: maps.Clone(a.Labels), Annotations: maps.Clone(a.Annotations)}
}

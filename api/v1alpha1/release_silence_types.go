package v1alpha1

import (
	"fmt"
	"regexp"
	"strconv"
)

// Labels of Picchu's own SLO and canary alerts (plan/manifests sets
// them; a test there checks they agree). A release silence never silences
// such an alert: admission refuses a matcher that would select one by these
// labels, and every silence Picchu creates excludes them with a negative
// matcher (slo!="true", canary!="true").
const (
	// SilenceAlertNameLabel is the label that holds an alert's name.
	SilenceAlertNameLabel = "alertname"
	// SilenceSLOLabel marks the alerts Picchu judges builds by.
	SilenceSLOLabel = "slo"
	// SilenceCanaryLabel marks the canary alerts Picchu writes.
	SilenceCanaryLabel = "canary"
	// SilenceProtectedValue is the value of those two labels on Picchu's alerts.
	SilenceProtectedValue = "true"
	// CanaryAlertSuffix ends the name of an SLO's canary alert, "<slo>_canary".
	CanaryAlertSuffix = "_canary"
	// SilenceScopeLabel is the label every release silence is scoped by:
	// Picchu adds namespace="<app>-<target>" (AppNamespace) to each silence
	// it creates, so a silence only silences alerts about the app in the
	// target. Prometheus stamps it on every series it scrapes from the
	// app's pods (the ServiceMonitors' targets, kube-state-metrics' series
	// of its objects), and prometheus-operator's enforcedNamespaceLabel on
	// every alert of the app's PrometheusRules, which live in that
	// namespace; no other app's objects live there.
	SilenceScopeLabel = "namespace"
)

// SilenceProtectedLabels are the labels whose value "true" marks an alert no
// release silence may silence.
var SilenceProtectedLabels = []string{SilenceSLOLabel, SilenceCanaryLabel}

// ReleaseSilence is an Alertmanager silence Picchu holds while a build of
// the target is released: from the start of its ramp (state releasing), and
// while it still has traffic as it retires, until its release ends
// (released, failed, rolled back, or the build is gone), when Picchu expires
// it. Picchu needs --alertmanager-address; without it the field is ignored.
//
// One matcher must name the alerts silenced: alertname, isEqual true, and a
// non-empty value; with isRegex, the value must be an alternation of alert
// names such as HighLatency|HighErrorRate. So a silence can never silence
// every alert. Every silence is scoped to the app in the target: Picchu
// adds namespace="<app>-<target>", so only alerts that carry the app's
// namespace are silenced, and a matcher on namespace other than that one
// is refused. Picchu's own SLO and canary alerts are never silenced: a
// matcher on slo or canary that matches "true", or alertname matchers that
// match one of the target's SLO alerts (<slo>_canary, the Sloth alert of an
// SLO, an alertRules alert labelled slo or canary "true"), is refused, and
// Picchu adds slo!="true" and canary!="true" to every silence it creates.
type ReleaseSilence struct {
	// matchers select the alerts silenced, as Alertmanager matchers: an alert
	// is silenced when every matcher matches its labels. One must be an
	// equality matcher on alertname (see ReleaseSilence). Picchu adds
	// namespace="<app>-<target>": a matcher on namespace may only be that
	// one.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.exists(m, m.name == 'alertname' && (!has(m.isEqual) || m.isEqual) && m.value != '' && (!has(m.isRegex) || !m.isRegex || m.value.matches('^[a-zA-Z_:][a-zA-Z0-9_:]*([|][a-zA-Z_:][a-zA-Z0-9_:]*)*$')))",message="one matcher must name the alerts silenced: alertname, isEqual true, a non-empty value and, with isRegex, an alternation of alert names such as HighLatency|HighErrorRate"
	Matchers []SilenceMatcher `json:"matchers"`
	// comment says why the alerts are silenced; Alertmanager shows it with
	// the silence. Picchu adds the app, target and build, and a marker it
	// finds its silences by.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Comment string `json:"comment,omitempty"`
}

// SilenceMatcher is an Alertmanager matcher: a label name and a value or a
// regular expression, equal or not.
//
// +kubebuilder:validation:XValidation:rule="self.name != 'namespace' || ((!has(self.isRegex) || !self.isRegex) && (!has(self.isEqual) || self.isEqual))",message="a matcher on namespace must be namespace=\"<app>-<target>\": Picchu scopes every release silence to the app's namespace in its target"
type SilenceMatcher struct {
	// name of the alert label matched, such as alertname or severity.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][a-zA-Z0-9_]*$`
	Name string `json:"name"`
	// value the label must have or, with isRegex, a regular expression (RE2
	// syntax, anchored at both ends) it must match. An empty value matches
	// alerts without the label.
	// +required
	// +kubebuilder:validation:MaxLength=256
	Value string `json:"value"`
	// isRegex makes value a regular expression.
	// +optional
	IsRegex bool `json:"isRegex,omitempty"`
	// isEqual false negates the matcher: the label must not have the value
	// (or match the expression). True by default.
	// +optional
	// +kubebuilder:default=true
	IsEqual *bool `json:"isEqual,omitempty"`
}

// Equal says whether m matches when the label equals its value (isEqual,
// true when unset), rather than when it does not.
func (m SilenceMatcher) Equal() bool { return m.IsEqual == nil || *m.IsEqual }

// String is m as Alertmanager writes a matcher, such as namespace!~"shop-.*".
func (m SilenceMatcher) String() string {
	op := "="
	switch {
	case m.IsRegex && m.Equal():
		op = "=~"
	case m.IsRegex:
		op = "!~"
	case !m.Equal():
		op = "!="
	}
	return m.Name + op + strconv.Quote(m.Value)
}

// Compile returns the function that says whether a label value matches m,
// as Alertmanager matches it: a regular expression is anchored at both
// ends, and isEqual false negates. It fails when value is not a regular
// expression.
func (m SilenceMatcher) Compile() (func(string) bool, error) {
	equal := m.Equal()
	if !m.IsRegex {
		return func(v string) bool { return (v == m.Value) == equal }, nil
	}
	re, err := regexp.Compile("^(?:" + m.Value + ")$")
	if err != nil {
		return nil, fmt.Errorf("not a regular expression: %w", err)
	}
	return func(v string) bool { return re.MatchString(v) == equal }, nil
}

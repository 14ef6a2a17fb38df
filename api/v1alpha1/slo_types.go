package v1alpha1

// ServiceLevelObjective is an SLO of the app: an objective over the ratio of
// errors to all events, both given as PromQL.
type ServiceLevelObjective struct {
	// name of the SLO; it names the recording rules and alerts.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_][a-zA-Z0-9_]*$`
	Name string `json:"name,omitempty"`
	// description of the SLO, used in alert messages.
	// +optional
	Description string `json:"description,omitempty"`
	// enabled turns the SLO's rules and alerts on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// objectivePercentString is the objective in percent, such as "99.9".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+([.][0-9]+)?$') && double(self) <= 100.0",message="must be a percent from 0 to 100 such as 99.9"
	ObjectivePercentString string `json:"objectivePercentString,omitempty"`
	// serviceLevelIndicator gives the SLI queries and the canary check.
	// +optional
	ServiceLevelIndicator ServiceLevelIndicator `json:"serviceLevelIndicator,omitempty"`
	// serviceLevelObjectiveLabels are added to this SLO's rules, alerts and service level.
	// +optional
	ServiceLevelObjectiveLabels ServiceLevelObjectiveLabels `json:"serviceLevelObjectiveLabels,omitempty"`
	// alerting configures the Sloth page and ticket alerts of this SLO.
	// +optional
	Alerting Alerting `json:"alerting,omitempty"`
}

// ServiceLevelIndicator gives the queries of an SLO and its canary check.
type ServiceLevelIndicator struct {
	// canary compares a canary's error ratio with the fleet's while it canaries.
	// +optional
	Canary SLICanaryConfig `json:"canary,omitempty"`
	// tagKey is the label of the queries that holds the build's tag ("tag" when unset).
	// +optional
	TagKey string `json:"tagKey,omitempty"`
	// alertAfter is kept for compatibility; it is ignored.
	// +optional
	AlertAfter string `json:"alertAfter,omitempty"`
	// totalQuery is PromQL counting all events (for example requests): a
	// counter, or a sum of counters, by the tag's label. For a baseline
	// comparison, write it from sums (by, without), label_replace,
	// label_join, +, - and or of counter selectors: the comparison counts
	// the increase of each raw series it selects, so that pods that
	// restart or go count what they served; of any other shape (a rate, a
	// max, an offset) it counts the recorded series, and admission warns.
	// +optional
	TotalQuery string `json:"totalQuery,omitempty"`
	// errorQuery is PromQL counting failed events, of the same shape as
	// totalQuery.
	// +optional
	ErrorQuery string `json:"errorQuery,omitempty"`
}

// SLICanaryConfig fails a canary whose error ratio exceeds the fleet's by more
// than an allowance for a while.
type SLICanaryConfig struct {
	// enabled turns the canary alert of this SLO on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// allowancePercent is how many percentage points the canary's error ratio
	// may exceed the fleet's. allowancePercentString takes precedence. From
	// 100 up (accepted with a warning) the canary alert cannot fire.
	// +optional
	// +kubebuilder:validation:Minimum=0
	AllowancePercent float64 `json:"allowancePercent,omitempty"`
	// allowancePercentString is allowancePercent as a string, such as "0.5".
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+([.][0-9]+)?$')",message="must be a non-negative percent such as 0.5"
	AllowancePercentString string `json:"allowancePercentString,omitempty"`
	// failAfter is how long the canary alert must hold before it fires, as a
	// duration such as 1m (a Prometheus "for").
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && duration(self) >= duration('0s')",message="must be a non-negative duration such as 30s or 2m, no longer than 2562047h47m16.854775807s"
	FailAfter string `json:"failAfter,omitempty"`
	// baseline, when set, also judges the canary against its baseline, the
	// build it replaces, from this SLO's total and error queries counted
	// over the same window in the same clusters: when the canary has run
	// its time (and, with release waves, when a build has taken its first
	// step in a wave), a one-sided test of its error ratio against the
	// baseline's, pooled over the wave's clusters and per cluster, fails a
	// canary significantly worse than its baseline or than the other
	// clusters (an outlier), and holds one that has served too few
	// requests to tell (unless the target's canary.allowNoTraffic lets it
	// pass). The counts are the increase of each raw series of the total
	// and error queries, read from the operator's
	// --prometheus-query-address. It does not need enabled. See
	// docs/slos.md.
	// +optional
	Baseline *SLIBaseline `json:"baseline,omitempty"`
}

// SLIBaseline tunes the comparison of a canary with its baseline.
type SLIBaseline struct {
	// confidencePercent of the one-sided test: a canary that errs no more
	// than its baseline fails at most 100 − confidencePercent percent of
	// the time. 99 by default.
	// +optional
	// +kubebuilder:validation:Minimum=50
	// +kubebuilder:validation:Maximum=99.9999
	ConfidencePercent float64 `json:"confidencePercent,omitempty"`
	// minRequests are the requests the canary and the baseline each need,
	// pooled over the clusters compared, before a verdict: below, the
	// canary holds. By default the number that catches a canary erring
	// twice as often as a baseline at 1 % errors 80 % of the time at the
	// confidence (3 236 at 99 %).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinRequests int64 `json:"minRequests,omitempty"`
}

// ServiceLevelObjectiveLabels are labels added to an SLO's objects.
type ServiceLevelObjectiveLabels struct {
	// alertLabels are added to the alerts.
	// +optional
	AlertLabels map[string]string `json:"alertLabels,omitempty"`
	// ruleLabels are added to the PrometheusRules.
	// +optional
	RuleLabels map[string]string `json:"ruleLabels,omitempty"`
	// serviceLevelLabels are added to the Sloth service level objectives.
	// +optional
	ServiceLevelLabels map[string]string `json:"serviceLevelLabels,omitempty"`
}

// Alerting configures an SLO's Sloth alerts.
type Alerting struct {
	// name of the alert.
	// +optional
	Name string `json:"name,omitempty"`
	// labels added to both alerts.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations added to both alerts.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// pageAlert configures the fast-burn (page) alert.
	// +optional
	PageAlert *Alert `json:"pageAlert,omitempty"`
	// ticketAlert configures the slow-burn (ticket) alert.
	// +optional
	TicketAlert *Alert `json:"ticketAlert,omitempty"`
}

// Alert configures one Sloth alert.
type Alert struct {
	// disable turns the alert off.
	// +optional
	Disable bool `json:"disable,omitempty"`
	// labels added to the alert.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations added to the alert.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

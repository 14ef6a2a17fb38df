package v1alpha1

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks what the CRD schema cannot express. It expects routing
// defaults to be filled (DefaultRouting) and returns an Invalid error naming
// every bad field, plus warnings for settings that are allowed but likely
// wrong.
func (r *Revision) Validate() (warnings []string, err error) {
	if len(r.undecoded.problems) > 0 {
		// Only a schema that lets a value through that the Go types cannot
		// hold gets here (see DecodeError).
		return nil, apierrors.NewInvalid(GroupVersion.WithKind("Revision").GroupKind(), r.Name, r.undecoded.problems)
	}
	var errs field.ErrorList
	targets := field.NewPath("spec", "targets")
	for i := range r.Spec.Targets {
		w, e := r.Spec.Targets[i].validate(r.Spec.App.Name, targets.Index(i))
		warnings = append(warnings, w...)
		errs = append(errs, e...)
	}
	if len(errs) == 0 {
		return warnings, nil
	}
	return warnings, apierrors.NewInvalid(GroupVersion.WithKind("Revision").GroupKind(), r.Name, errs)
}

func (t *RevisionTarget) validate(app string, path *field.Path) (warnings []string, errs field.ErrorList) {
	w, e := t.validateIngressPorts(path)
	warnings, errs = append(warnings, w...), append(errs, e...)
	errs = append(errs, t.validateSLONames(path.Child("serviceLevelObjectives"))...)
	errs = append(errs, t.validateReleaseSilences(AppNamespace(app, t.Name), path.Child("releaseSilences"))...)
	errs = append(errs, t.validatePod(path)...)
	if t.ConfigSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(t.ConfigSelector); err != nil {
			errs = append(errs, field.Invalid(path.Child("configSelector"), t.ConfigSelector, err.Error()))
		}
	}
	errs = append(errs, t.Release.validateWaves(path.Child("release", "waves"))...)
	if t.Scale.Min != nil && *t.Scale.Min > t.Scale.Max {
		warnings = append(warnings, fmt.Sprintf("%s: min (%d) is above max (%d); the autoscaler will run max replicas",
			path.Child("scale"), *t.Scale.Min, t.Scale.Max))
	}
	if maxPercent := percentCap(t.Release.Max); t.Canary.Percent > maxPercent {
		warnings = append(warnings, fmt.Sprintf("%s: canary percent (%d) is above release max (%d); the canary is capped at max",
			path.Child("canary", "percent"), t.Canary.Percent, maxPercent))
	}
	warnings = append(warnings, t.compatWarnings(path)...)
	return warnings, errs
}

// SLIQueryWarnings are the warnings about the totalQuery and errorQuery of
// every enabled SLO with canary.baseline that check refuses: queries the
// baseline comparison cannot count per raw series (check says why), so it
// counts the SLO's recorded series instead, whose increase counts the
// other pods' whole history again each time a pod's series leaves the sum.
// Each names its field. None when check is nil. The webhook gets check
// from WebhookOptions.SLIQueryCheck: this package does not parse PromQL.
func (r *Revision) SLIQueryWarnings(check func(query string) error) []string {
	if check == nil {
		return nil
	}
	var warnings []string
	for i, t := range r.Spec.Targets {
		for j, slo := range t.ServiceLevelObjectives {
			sli := slo.ServiceLevelIndicator
			if !slo.Enabled || sli.Canary.Baseline == nil {
				continue
			}
			path := field.NewPath("spec", "targets").Index(i).Child("serviceLevelObjectives").Index(j).Child("serviceLevelIndicator")
			for _, q := range []struct{ field, query string }{{"totalQuery", sli.TotalQuery}, {"errorQuery", sli.ErrorQuery}} {
				if q.query == "" {
					continue
				}
				if err := check(q.query); err != nil {
					warnings = append(warnings, fmt.Sprintf("%s: the baseline comparison cannot count it per raw series (%v), so it counts the SLO's recorded series instead, "+
						"whose increase counts the other pods' history again each time a pod restarts or goes: write it as sums, label_replace and label_join of counters (docs/slos.md)",
						path.Child(q.field), err))
				}
			}
		}
	}
	return warnings
}

// percentCap is the most traffic a build whose release.max is m takes: 0
// and anything above 100 mean 100.
func percentCap(m int32) int32 {
	if m <= 0 || m > 100 {
		return 100
	}
	return m
}

// compatWarnings are the warnings about values the original accepted and
// so does Picchu, where it reads them as the original did, but they are
// likely mistakes: docs/api.md lists them ("Where Picchu's admission
// differs from the original's").
func (t *RevisionTarget) compatWarnings(path *field.Path) []string {
	var warnings []string
	warn := func(p *field.Path, format string, args ...any) {
		warnings = append(warnings, p.String()+": "+fmt.Sprintf(format, args...))
	}
	release := path.Child("release")
	switch s := t.Release.Schedule; s {
	case "", ScheduleAlways, ScheduleInhumane, ScheduleHumane:
	default:
		warn(release.Child("schedule"), "unknown schedule %q behaves as %q, as in the original (known: %s, %s, %s); with --humane-releases-enabled=false only %q itself releases",
			s, ScheduleAlways, ScheduleHumane, ScheduleInhumane, ScheduleAlways, ScheduleAlways)
	}
	if m := t.Release.Max; m > 100 {
		warn(release.Child("max"), "%d is above 100: the build takes at most 100 percent", m)
	}
	if s := t.Release.GeometricScaling.Start; s > 100 {
		warn(release.Child("geometricScaling", "start"), "%d is above 100: the first step goes to release.max", s)
	}
	if i := t.Release.LinearScaling.Increment; i > 100 {
		warn(release.Child("linearScaling", "increment"), "%d is above 100: the first step goes to release.max", i)
	}
	canary := path.Child("canary")
	if p := t.Canary.Percent; p < 0 {
		warn(canary.Child("percent"), "%d is negative: no canary runs, as with 0", p)
	}
	if ttl := t.Canary.TTL; ttl < 0 {
		warn(canary.Child("ttl"), "%d is negative: no canary runs, as with 0", ttl)
	}
	for i, slo := range t.ServiceLevelObjectives {
		c := slo.ServiceLevelIndicator.Canary
		p := path.Child("serviceLevelObjectives").Index(i).Child("serviceLevelIndicator", "canary")
		if c.AllowancePercentString != "" {
			if pct, err := strconv.ParseFloat(c.AllowancePercentString, 64); err == nil && pct >= 100 {
				warn(p.Child("allowancePercentString"), "%s is 100 or more: this SLO's canary alert cannot fire (an error ratio is at most 100%%)", c.AllowancePercentString)
			}
		} else if c.AllowancePercent >= 100 {
			warn(p.Child("allowancePercent"), "%g is 100 or more: this SLO's canary alert cannot fire (an error ratio is at most 100%%)", c.AllowancePercent)
		}
	}
	warnings = append(warnings, t.portWarnings(path.Child("ports"))...)
	return warnings
}

// portWarnings are the warnings about ports that share a port number
// (the schema rejects a shared containerPort), and about ingresses that
// are not public or private or are listed twice.
func (t *RevisionTarget) portWarnings(path *field.Path) []string {
	var warnings []string
	type number struct {
		port     int32
		protocol string
	}
	ports := map[number]int{}
	for i := range t.Ports {
		p := &t.Ports[i]
		protocol := string(p.Protocol)
		if protocol == "" {
			protocol = "TCP"
		}
		// 0 is unset (the schema defaults it): nothing to compare.
		if j, ok := ports[number{p.Port, protocol}]; ok && p.Port != 0 {
			warnings = append(warnings, fmt.Sprintf("%s: %d/%s is also the port of ports[%d] (%s), as the original allowed: the app's Service has it once, named %s, and the routes of both send to it",
				path.Index(i).Child("port"), p.Port, protocol, j, t.Ports[j].Name, t.Ports[j].Name))
		} else {
			ports[number{p.Port, protocol}] = i
		}
		seen := map[Ingress]bool{}
		for k, ingress := range p.Ingresses {
			switch {
			case seen[ingress]:
				warnings = append(warnings, fmt.Sprintf("%s: %q is listed twice", path.Index(i).Child("ingresses").Index(k), ingress))
			case ingress != IngressPublic && ingress != IngressPrivate:
				warnings = append(warnings, fmt.Sprintf("%s: %q is not an ingress (%s or %s): ignored, as in the original",
					path.Index(i).Child("ingresses").Index(k), ingress, IngressPublic, IngressPrivate))
			}
			seen[ingress] = true
		}
	}
	return warnings
}

// validateIngressPorts checks that every ingress that has ports has one
// default port. Several ports of an ingress flagged default are an error
// unless defaultIngressPorts names the ingress's port or one is named
// "http", which makes the flags moot (a warning), as in the original.
func (t *RevisionTarget) validateIngressPorts(path *field.Path) (warnings []string, errs field.ErrorList) {
	for _, ingress := range Ingresses() {
		var exposed, flagged []string
		for i := range t.Ports {
			if t.Ports[i].ExposedOn(ingress) {
				exposed = append(exposed, t.Ports[i].Name)
				if t.Ports[i].Default {
					flagged = append(flagged, t.Ports[i].Name)
				}
			}
		}
		if len(flagged) > 1 {
			if name := t.DefaultIngressPort(ingress); name != "" {
				warnings = append(warnings, fmt.Sprintf("%s: ports %s exposed on the %s ingress are all flagged default: the flags are ignored, %s is its default port",
					path.Child("ports"), strings.Join(flagged, ", "), ingress, name))
				continue
			}
			errs = append(errs, field.Invalid(path.Child("ports"), strings.Join(flagged, ", "),
				fmt.Sprintf("only one port exposed on the %s ingress may be flagged default, unless defaultIngressPorts names its default port or one is named %q", ingress, DefaultPortName)))
			continue
		}
		if len(exposed) > 0 && t.DefaultIngressPort(ingress) == "" {
			errs = append(errs, field.Required(path.Child("defaultIngressPorts").Key(string(ingress)),
				fmt.Sprintf("the %s ingress has ports %s: name its default port here, flag one port default, or name one %q",
					ingress, strings.Join(exposed, ", "), DefaultPortName)))
		}
	}
	return warnings, errs
}

// validateSLONames checks that enabled SLOs have unique, non-empty names:
// the names become recording-rule and alert names.
func (t *RevisionTarget) validateSLONames(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, slo := range t.ServiceLevelObjectives {
		if !slo.Enabled {
			continue
		}
		switch {
		case slo.Name == "":
			errs = append(errs, field.Required(path.Index(i).Child("name"), "an enabled SLO needs a name"))
		case seen[slo.Name]:
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), slo.Name))
		}
		seen[slo.Name] = true
	}
	return errs
}

// validateWaves checks that each wave's selector parses and that no two
// waves share a name.
func (r *ReleaseInfo) validateWaves(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range r.Waves {
		w := &r.Waves[i]
		if _, err := metav1.LabelSelectorAsSelector(&w.Selector); err != nil {
			errs = append(errs, field.Invalid(path.Index(i).Child("selector"), w.Selector, err.Error()))
		}
		if w.Name != "" && names[w.Name] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), w.Name))
		}
		names[w.Name] = true
		if w.Bake != nil && w.Bake.Duration < 0 {
			errs = append(errs, field.Invalid(path.Index(i).Child("bake"), w.Bake.Duration.String(), "must not be negative"))
		}
	}
	return errs
}

// validateReleaseSilences checks what the schema cannot of each release
// silence: its regular expressions compile, it stays within the app's
// namespace in the target (namespace, SilenceScopeLabel: a matcher on it
// may only be namespace="<namespace>", which Picchu adds anyway; the
// schema says so too), and it would not silence Picchu's own SLO and
// canary alerts. A matcher on slo or canary must not match "true", and
// the alertname matchers must not all match the name of one of the
// target's SLO alerts (ProtectedAlertNames). Picchu also adds
// slo!="true" and canary!="true" to every silence it creates.
func (t *RevisionTarget) validateReleaseSilences(namespace string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	protected := t.ProtectedAlertNames()
	for i, s := range t.ReleaseSilences {
		matchers := path.Index(i).Child("matchers")
		var names []func(string) bool
		compiled := true
		for j, m := range s.Matchers {
			matches, err := m.Compile()
			if err != nil {
				errs = append(errs, field.Invalid(matchers.Index(j).Child("value"), m.Value, err.Error()))
				compiled = false
				continue
			}
			if m.Name == SilenceScopeLabel && (m.Value != namespace || m.IsRegex || !m.Equal()) {
				errs = append(errs, field.Forbidden(matchers.Index(j), fmt.Sprintf(
					"matches %s: only %s=%q, the app's namespace in this target, may be matched: Picchu scopes every release silence to it",
					m, SilenceScopeLabel, namespace)))
			}
			if slices.Contains(SilenceProtectedLabels, m.Name) && matches(SilenceProtectedValue) {
				errs = append(errs, field.Forbidden(matchers.Index(j),
					fmt.Sprintf("matches %s=%q: Picchu's SLO and canary alerts are never silenced", m.Name, SilenceProtectedValue)))
			}
			if m.Name == SilenceAlertNameLabel {
				names = append(names, matches)
			}
		}
		if !compiled || len(names) == 0 {
			continue // the schema requires an alertname matcher
		}
		for _, alert := range protected {
			if !slices.ContainsFunc(names, func(matches func(string) bool) bool { return !matches(alert) }) {
				errs = append(errs, field.Forbidden(matchers,
					fmt.Sprintf("the alertname matchers match %q, an SLO or canary alert of this target: Picchu's SLO and canary alerts are never silenced", alert)))
				break
			}
		}
	}
	return errs
}

// ProtectedAlertNames are the names of the target's SLO and canary alerts,
// sorted: "<slo>_canary" and the Sloth alert (alerting.name, else the SLO's
// name) of every named SLO, enabled or not, and each alertRules alert
// labelled slo or canary "true". No release silence may match them.
func (t *RevisionTarget) ProtectedAlertNames() []string {
	var names []string
	for _, slo := range t.ServiceLevelObjectives {
		if slo.Name == "" {
			continue
		}
		names = append(names, slo.Name+CanaryAlertSuffix)
		if slo.Alerting.Name != "" {
			names = append(names, slo.Alerting.Name)
		} else {
			names = append(names, slo.Name)
		}
	}
	for _, rule := range t.AlertRules {
		if rule.Alert == "" {
			continue
		}
		for _, label := range SilenceProtectedLabels {
			if rule.Labels[label] == SilenceProtectedValue {
				names = append(names, rule.Alert)
				break
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

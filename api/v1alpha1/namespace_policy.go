package v1alpha1

import (
	"fmt"
	"regexp"
	"strings"
)

// AppNamespacePolicy says, by delivery namespace, which namespaces its
// apps may be deployed in on the target clusters (--app-namespace-policy):
// "team-a's apps live in team-a-*". A delivery namespace with no entry of
// its own takes the entries of "*"; with neither, any namespace that is not
// protected. Each pattern is a namespace name or a prefix ending in "*",
// and "{namespace}" in it stands for the delivery namespace.
// +kubebuilder:object:generate=false
type AppNamespacePolicy map[string][]string

// policyEntry is one DELIVERY=PATTERN of --app-namespace-policy.
var policyEntry = regexp.MustCompile(`^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)=([a-z0-9{}][-a-z0-9{}]*\*?)$`)

// ParseAppNamespacePolicy reads --app-namespace-policy: comma-separated
// DELIVERY=PATTERN entries, DELIVERY a namespace of the delivery cluster or
// "*", PATTERN a namespace or a prefix ending in "*", where "{namespace}"
// is the delivery namespace; a DELIVERY may have several.
func ParseAppNamespacePolicy(flag string) (AppNamespacePolicy, error) {
	out := AppNamespacePolicy{}
	for entry := range strings.SplitSeq(flag, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		m := policyEntry.FindStringSubmatch(entry)
		if m == nil || strings.Count(m[3], "{")+strings.Count(m[3], "}") != 2*strings.Count(m[3], "{namespace}") {
			return nil, fmt.Errorf("%q is not DELIVERY=PATTERN (a delivery namespace or *, then a namespace or a prefix ending in *, where {namespace} is the delivery namespace)", entry)
		}
		out[m[1]] = append(out[m[1]], m[3])
	}
	return out, nil
}

// Patterns are the patterns the apps of delivery namespace delivery must
// match, with "{namespace}" replaced; none when the policy leaves it free.
func (p AppNamespacePolicy) Patterns(delivery string) []string {
	patterns, ok := p[delivery]
	if !ok {
		patterns = p["*"]
	}
	out := make([]string, 0, len(patterns))
	for _, pattern := range patterns {
		out = append(out, strings.ReplaceAll(pattern, "{namespace}", delivery))
	}
	return out
}

// NamespaceNotAllowedError is an app of a delivery namespace whose namespace
// in a target is outside what the policy allows that delivery namespace.
// +kubebuilder:object:generate=false
type NamespaceNotAllowedError struct {
	Delivery, App, Target, Namespace string
	Allowed                          []string
}

func (e *NamespaceNotAllowedError) Error() string {
	return fmt.Sprintf("app %q in target %q would be deployed in namespace %q, which the apps of delivery namespace %q may not use "+
		"(--app-namespace-policy allows %s): rename the app or the target", e.App, e.Target, e.Namespace, e.Delivery, strings.Join(e.Allowed, ", "))
}

// Check returns a *NamespaceNotAllowedError when the namespace of app in
// target is not one the apps of delivery may use.
func (p AppNamespacePolicy) Check(delivery, app, target string) error {
	allowed := p.Patterns(delivery)
	if len(allowed) == 0 {
		return nil
	}
	ns := AppNamespace(app, target)
	if _, ok := ProtectedNamespace(ns, allowed); ok {
		return nil
	}
	return &NamespaceNotAllowedError{Delivery: delivery, App: app, Target: target, Namespace: ns, Allowed: allowed}
}

// NamespaceRefused says why the app of delivery namespace delivery may not
// be deployed in target, with the reason of the hold or Stalled condition
// that says so: its namespace there is protected (ReasonProtectedNamespace)
// or outside the policy (ReasonNamespaceNotAllowed); "" and nil when it may.
func NamespaceRefused(delivery, app, target string, protected []string, policy AppNamespacePolicy) (reason string, err error) {
	if err := CheckProtected(app, target, protected); err != nil {
		return ReasonProtectedNamespace, err
	}
	if err := policy.Check(delivery, app, target); err != nil {
		return ReasonNamespaceNotAllowed, err
	}
	return "", nil
}

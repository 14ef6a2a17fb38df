package v1alpha1

import (
	"fmt"
	"strings"
)

// DefaultProtectedNamespaces are the namespaces of a target cluster that no
// app is ever deployed in, whatever --protected-namespaces adds: those of
// Kubernetes itself (kube-system, kube-public, kube-node-lease and any
// other kube-*, a prefix Kubernetes reserves), default, and Istio's.
var DefaultProtectedNamespaces = []string{"kube-*", "default", "istio-system"}

// ProtectedNamespace returns the pattern of protected that names the
// namespace ns, and whether one does: a name, or a prefix ending in "*".
func ProtectedNamespace(ns string, protected []string) (string, bool) {
	for _, p := range protected {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(ns, prefix) || p == ns {
			return p, true
		}
	}
	return "", false
}

// ProtectedNamespaceError is an app whose namespace in a target is
// protected: admission refuses it, and the controllers deploy nothing there.
type ProtectedNamespaceError struct {
	// App and Target name the app and the target; Namespace is theirs.
	App, Target, Namespace string
	// Pattern is the protected namespace, or prefix, that names it.
	Pattern string
}

func (e *ProtectedNamespaceError) Error() string {
	return fmt.Sprintf("app %q in target %q would be deployed in namespace %q, which is protected (%q): Picchu never deploys to, adopts or deletes it; rename the app or the target",
		e.App, e.Target, e.Namespace, e.Pattern)
}

// CheckProtected returns a *ProtectedNamespaceError when the namespace of
// app in target is one of protected.
func CheckProtected(app, target string, protected []string) error {
	ns := AppNamespace(app, target)
	if p, ok := ProtectedNamespace(ns, protected); ok {
		return &ProtectedNamespaceError{App: app, Target: target, Namespace: ns, Pattern: p}
	}
	return nil
}

// AddOnNamespaces are the namespaces add-ons install into on a target
// cluster, often after it joined a fleet: an app Picchu deployed first in
// one of them would own it, and its deletion would take the add-on with
// it on every cluster. They are protected for apps by default;
// --protected-namespaces removes one with a leading "-" ("-monitoring").
var AddOnNamespaces = []string{
	"istio-ingress", "istio-egress", "istio-gateways", "cert-manager", "flux-system", "argocd", "argo-rollouts",
	"ingress-nginx", "gatekeeper-system", "kyverno", "external-dns", "external-secrets", "keda", "monitoring",
	"prometheus", "grafana", "linkerd", "calico-system", "tigera-operator", "velero", "local-path-storage",
	"openshift-*", "gke-*", "amazon-*",
}

// AppProtectedNamespaces are the namespaces no app is deployed in: the
// defaults, the add-ons' but those flag removes ("-name"), the names and
// prefixes flag adds, and the delivery namespaces (the operator's own, and
// those it reads Revisions from), where the delivery cluster is also a
// target.
func AppProtectedNamespaces(flag, delivery []string) []string {
	removed := map[string]bool{}
	var added []string
	for _, p := range flag {
		if name, ok := strings.CutPrefix(p, "-"); ok {
			removed[name] = true
		} else {
			added = append(added, p)
		}
	}
	out := append([]string(nil), DefaultProtectedNamespaces...)
	for _, p := range AddOnNamespaces {
		if !removed[p] {
			out = append(out, p)
		}
	}
	out = append(out, added...)
	for _, ns := range delivery {
		if ns != "" && ns != "*" {
			out = append(out, ns)
		}
	}
	return out
}

// SecretProtectedNamespaces are the namespaces of a target cluster no
// ClusterSecrets writes into: the defaults and the names and prefixes flag
// adds. The add-ons' are not among them: a platform team copies their
// Secrets there (a DNS solver's key into cert-manager), and Picchu owns no
// such namespace.
func SecretProtectedNamespaces(flag []string) []string {
	out := append([]string(nil), DefaultProtectedNamespaces...)
	for _, p := range flag {
		if !strings.HasPrefix(p, "-") {
			out = append(out, p)
		}
	}
	return out
}

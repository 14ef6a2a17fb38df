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

// ProtectedNamespaces is the defaults and extra, the namespaces
// --protected-namespaces adds.
func ProtectedNamespaces(extra []string) []string {
	return append(append([]string(nil), DefaultProtectedNamespaces...), extra...)
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

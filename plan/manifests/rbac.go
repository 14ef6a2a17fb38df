package manifests

import (
	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// externalMetricsName names the Role and RoleBinding that let the app read external metrics.
func externalMetricsName(app string) string { return app + "-external-metrics" }

// ExternalMetricsRole lets the app's service account read external metrics,
// as autoscalers of event-driven apps need.
func ExternalMetricsRole(app, target string) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: externalMetricsName(app), Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: appLabels(app, target)},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"external.metrics.k8s.io"},
			Resources: []string{"*"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}
}

// ExternalMetricsRoleBinding binds ExternalMetricsRole to the app's service account.
func ExternalMetricsRoleBinding(app, target string) *rbacv1.RoleBinding {
	ns := picchuv1alpha1.AppNamespace(app, target)
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: externalMetricsName(app), Namespace: ns, Labels: appLabels(app, target)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: externalMetricsName(app)},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: app, Namespace: ns}},
	}
}

package manifests

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// ConfigMapCopy is a build's copy of a ConfigMap its configSelector selects
// on the delivery cluster: same name and data, in the app's namespace, with
// the build's labels instead of the source's, so it goes with the build.
func ConfigMapCopy(app, target, tag string, src *corev1.ConfigMap) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: TagSelector(app, target, tag)},
		Data:       maps.Clone(src.Data),
		BinaryData: maps.Clone(src.BinaryData),
	}
}

// SecretCopy is a build's copy of a Secret its configSelector selects, as ConfigMapCopy.
func SecretCopy(app, target, tag string, src *corev1.Secret) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: TagSelector(app, target, tag)},
		Type:       src.Type,
		Data:       maps.Clone(src.Data),
	}
}

// TagSelector are the labels every object of one build carries: deleting
// by them removes the build from a cluster.
func TagSelector(app, target, tag string) map[string]string {
	l := appLabels(app, target)
	l[picchuv1alpha1.LabelTag] = tag
	return l
}

// AppSelector are the labels every object of an app in a target carries.
func AppSelector(app, target string) map[string]string { return appLabels(app, target) }

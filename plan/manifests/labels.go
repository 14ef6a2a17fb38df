package manifests

import picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"

// Labels Kubernetes and Istio read on an app's objects.
const (
	labelK8sName    = "app.kubernetes.io/name"
	labelK8sVersion = "app.kubernetes.io/version"
	labelIstioApp   = "app"
	labelIstioVer   = "version"
	labelIstioInj   = "istio-injection"
)

// appLabels mark every object Picchu writes for an app in a target.
func appLabels(app, target string) map[string]string {
	return map[string]string{
		picchuv1alpha1.LabelApp:    app,
		picchuv1alpha1.LabelTarget: target,
	}
}

// tagLabels mark the objects of one build; they select its pods.
func tagLabels(app, target, tag string) map[string]string {
	l := appLabels(app, target)
	l[picchuv1alpha1.LabelTag] = tag
	l[labelK8sName] = app
	l[labelK8sVersion] = tag
	return l
}

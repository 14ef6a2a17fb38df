package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// TestReleaseManager_MonitoringFollowsTheNewestBuild releases a build with
// an SLO and two ServiceMonitors, then one with a single monitor and no SLO:
// on every cluster the monitors, the SLO recording rules and the Sloth
// service levels follow the newest build, and what it no longer asks for is
// deleted (the original left ServiceMonitors behind).
func TestReleaseManager_MonitoringFollowsTheNewestBuild(t *testing.T) {
	ctx := context.Background()
	const app = "watched"
	ns := app + "-production"
	config(t, app, "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision(app, "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	buildState(t, 20*time.Second, app, "v1", "released")
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, target.Name+": v1's monitoring", func() error {
			for _, check := range []error{
				exists(app, target.Client, &monitoringv1.ServiceMonitor{}, app+"-status", ns),
				exists(app, target.Client, &monitoringv1.ServiceMonitor{}, app+"-http", ns),
				exists(app, target.Client, &monitoringv1.PrometheusRule{}, app+"-slo", ns),
				exists(app, target.Client, &slothv1.PrometheusServiceLevel{}, app+"-production-servicelevels", serviceLevelsNamespace),
			} {
				if check != nil {
					return check
				}
			}
			return nil
		})
	}

	v2 := appRevision(app, "v2", env.Fleet)
	v2.Spec.Targets[0].ServiceLevelObjectives = nil
	v2.Spec.Targets[0].ServiceMonitors = v2.Spec.Targets[0].ServiceMonitors[:1]
	config(t, app, "v2")
	if err := env.Delivery.Client.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v2")
	}
	for _, target := range env.Targets {
		kit.Eventually(t, 20*time.Second, target.Name+": v2's monitoring", func() error {
			for _, check := range []error{
				exists(app, target.Client, &monitoringv1.ServiceMonitor{}, app+"-status", ns),
				gone(target.Client, &monitoringv1.ServiceMonitor{}, app+"-http", ns),
				gone(target.Client, &monitoringv1.PrometheusRule{}, app+"-slo", ns),
				gone(target.Client, &slothv1.PrometheusServiceLevel{}, app+"-production-servicelevels", serviceLevelsNamespace),
			} {
				if check != nil {
					return check
				}
			}
			return nil
		})
	}
	// The release settles before the next test counts writes.
	buildState(t, 20*time.Second, app, "v2", "released")
	buildState(t, 20*time.Second, app, "v1", "retired")
}

// exists says whether obj, of app, is on a cluster as name in namespace.
func exists(app string, c client.Client, obj client.Object, name, namespace string) error {
	err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if err != nil {
		return fmt.Errorf("%T %s/%s: %w", obj, namespace, name, err)
	}
	if obj.GetLabels()[picchuv1alpha1.LabelApp] != app {
		return fmt.Errorf("%T %s/%s without the app label: %v", obj, namespace, name, obj.GetLabels())
	}
	return nil
}

// gone says whether the object name in namespace is gone from a cluster.
func gone(c client.Client, obj client.Object, name, namespace string) error {
	err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("%T %s/%s still there (%v)", obj, namespace, name, err)
}

package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// ReportUndecodable records on obj, whose stored values did not all decode
// (cause, from its DecodeError), that Picchu leaves it alone until they are
// fixed: Ready False and Stalled True naming the value, and a warning event
// when that is news. kind names obj; conditions are its status conditions.
func ReportUndecodable(ctx context.Context, c client.Client, recorder events.EventRecorder,
	kind string, obj client.Object, conditions *[]metav1.Condition, cause error) error {
	msg := fmt.Sprintf("%v; Picchu leaves this %s alone until the value is fixed", cause, kind)
	ctrl.LoggerFrom(ctx).Info("not acting on an object the Go types cannot hold", "problem", cause.Error())
	return ReportStalled(ctx, c, recorder, obj, conditions, picchuv1alpha1.ReasonUndecodable, msg)
}

// ReportStalled records on obj that it holds until a person acts: Ready
// False and Stalled True with reason and msg, written with a status patch,
// and a warning event, only when that is news. conditions are obj's status
// conditions.
func ReportStalled(ctx context.Context, c client.Client, recorder events.EventRecorder,
	obj client.Object, conditions *[]metav1.Condition, reason, msg string) error {
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %s/%s: %T is not a client.Object", obj.GetNamespace(), obj.GetName(), obj)
	}
	gen := obj.GetGeneration()
	changed := meta.SetStatusCondition(conditions, metav1.Condition{
		Type: picchuv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
	changed = meta.SetStatusCondition(conditions, metav1.Condition{
		Type: picchuv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: gen,
	}) || changed
	if !changed {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("reporting %s of %s/%s: %w", reason, obj.GetNamespace(), obj.GetName(), err)
	}
	if recorder != nil {
		recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Hold", "%s", msg)
	}
	return nil
}

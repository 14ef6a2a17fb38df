package releasemanager

import (
	"slices"
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/plan/manifests"
)

// eventDrivenFleet is a worker build v1 of three live clusters, "quiet"
// disabling event-driven builds and running none of it, the others two
// available pods each.
func eventDrivenFleet(eventDriven bool) (*snapshot, *incarnation) {
	min := int32(4)
	rev := &picchuv1alpha1.Revision{Spec: picchuv1alpha1.RevisionSpec{EventDriven: eventDriven}}
	inc := &incarnation{tag: "v1", revision: rev, target: &picchuv1alpha1.RevisionTarget{Scale: picchuv1alpha1.ScaleInfo{Min: &min, Max: 4}}}
	s := &snapshot{incarnations: []*incarnation{inc}}
	for _, name := range []string{"east", "quiet", "west"} {
		cl := &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		cl.Spec.DisableEventDriven = name == "quiet"
		replicas := release.Replicas{Desired: 2, Available: 2}
		if name == "quiet" {
			replicas = release.Replicas{}
		}
		s.fleet = append(s.fleet, &fleetCluster{obj: cl, live: true, factor: 1})
		s.observation = append(s.observation, release.ClusterObservation{
			Name: name, Live: true, Observed: true, Tags: map[string]release.Replicas{"v1": replicas},
		})
	}
	return s, inc
}

// TestEventDriven_AClusterThatRunsNoneIsNotCounted: an event-driven build
// is divided over, deployed on and gated by the clusters that run it; any
// other build counts every live cluster.
func TestEventDriven_AClusterThatRunsNoneIsNotCounted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		eventDriven bool
		live        int
		deployed    release.Deployment
		canRamp     bool
		runsOnQuiet bool
	}{
		{name: "event-driven", eventDriven: true, live: 2, deployed: release.IsDeployed, canRamp: true},
		{name: "not event-driven", live: 3, deployed: release.NotDeployed, canRamp: false, runsOnQuiet: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, inc := eventDrivenFleet(tc.eventDriven)
			obs := s.observationOf(inc)
			if obs.LiveClusters() != tc.live || len(s.liveFactorsOf(inc)) != tc.live || len(s.liveObservedOf(inc)) != tc.live {
				t.Errorf("live clusters %d, factors %v, observed %v; want %d", obs.LiveClusters(), s.liveFactorsOf(inc), s.liveObservedOf(inc), tc.live)
			}
			if got := obs.Deployment("v1"); got != tc.deployed {
				t.Errorf("deployment %v, want %v", got, tc.deployed)
			}
			// 4 pods at 100 % over the clusters that run it: 4 available
			// are enough when quiet does not count (2 + 2 of 2 × 2), not
			// when it does (3 × 2 needed at 90 %: 6).
			if got := release.CanRampTo(s.capacity(inc), 100); got != tc.canRamp {
				t.Errorf("capacity gate %t, want %t (input %+v)", got, tc.canRamp, s.capacity(inc))
			}
			if got := runsOn(inc, s.fleet[1]); got != tc.runsOnQuiet {
				t.Errorf("runs on quiet %t, want %t", got, tc.runsOnQuiet)
			}
			if !runsOn(inc, s.fleet[0]) {
				t.Error("does not run on east")
			}
		})
	}
	s, inc := eventDrivenFleet(false)
	s.fleet[0].factor = 0
	if runsOn(inc, s.fleet[0]) {
		t.Error("runs on a cluster whose scaling factor is 0")
	}
}

// TestEventDriven_EveryClusterDisablingItNeverDeploys: a build no live
// cluster runs is never seen deployed (it times out deploying).
func TestEventDriven_EveryClusterDisablingItNeverDeploys(t *testing.T) {
	s, inc := eventDrivenFleet(true)
	for _, fc := range s.fleet {
		fc.obj.Spec.DisableEventDriven = true
	}
	if got := s.observationOf(inc).Deployment("v1"); got != release.Unknown {
		t.Errorf("deployment %v, want unknown", got)
	}
}

func kinds(want map[schema.GroupVersionKind]client.Object) []string {
	var out []string
	for k := range want {
		out = append(out, k.Kind)
	}
	slices.Sort(out)
	return out
}

func TestAutoscalerObjects_ByCaseAndPlan(t *testing.T) {
	rate := "10"
	dd := kedav1alpha1.ScaleTriggers{Type: "datadog", Metadata: map[string]string{}}
	sqs := kedav1alpha1.ScaleTriggers{Type: "aws-sqs-queue", Metadata: map[string]string{"queueURL": "q"}}
	for _, tc := range []struct {
		name  string
		plan  release.ScalePlan
		sc    manifests.Scaler
		want  []string
		annot string
	}{
		{name: "idle", plan: release.Idle(), sc: manifests.Scaler{Scale: picchuv1alpha1.ScaleInfo{TargetCPUUtilizationPercentage: ptr.To(int32(50))}}},
		{name: "ramping hpa", plan: release.ScalePlan{Kind: "hpa", Ramping: true},
			sc: manifests.Scaler{Scale: picchuv1alpha1.ScaleInfo{TargetCPUUtilizationPercentage: ptr.To(int32(50))}}, annot: "hpa"},
		{name: "hpa", plan: release.ScalePlan{Kind: "hpa", Autoscaler: true},
			sc:   manifests.Scaler{Scale: picchuv1alpha1.ScaleInfo{TargetCPUUtilizationPercentage: ptr.To(int32(50))}},
			want: []string{"HorizontalPodAutoscaler"}, annot: "hpa"},
		{name: "hpa without a target", plan: release.ScalePlan{Kind: "hpa", Autoscaler: true}, annot: "hpa"},
		{name: "ambient with Prometheus", plan: release.ScalePlan{Kind: "hpa", Autoscaler: true},
			sc: manifests.Scaler{Ambient: true, ClusterPrometheus: "http://prom", Scale: picchuv1alpha1.ScaleInfo{
				TargetRequestsRate: &rate, RequestsRateMetric: "istio_requests_rate"}},
			want: []string{"ScaledObject"}, annot: "keda"},
		{name: "ambient without Prometheus", plan: release.ScalePlan{Kind: "hpa", Autoscaler: true},
			sc: manifests.Scaler{Ambient: true, Scale: picchuv1alpha1.ScaleInfo{
				TargetRequestsRate: &rate, RequestsRateMetric: "istio_requests_rate"}},
			want: []string{"HorizontalPodAutoscaler"}, annot: "hpa"},
		{name: "keda", plan: release.ScalePlan{Kind: "keda", Autoscaler: true},
			sc:   manifests.Scaler{Scale: picchuv1alpha1.ScaleInfo{KedaWorker: &picchuv1alpha1.KedaScaleInfo{Triggers: []kedav1alpha1.ScaleTriggers{sqs}}}},
			want: []string{"ScaledObject", "TriggerAuthentication"}, annot: "keda"},
		// The service-account-token Secret it reads is the app's, in every
		// plan (testdata/plans), not a build's.
		{name: "keda with datadog and a rate", plan: release.ScalePlan{Kind: "keda", Autoscaler: true},
			sc: manifests.Scaler{Scale: picchuv1alpha1.ScaleInfo{TargetRequestsRate: &rate,
				KedaWorker: &picchuv1alpha1.KedaScaleInfo{Triggers: []kedav1alpha1.ScaleTriggers{sqs, dd}}}},
			want: []string{"ConfigMap", "DatadogMetric", "ScaledObject", "TriggerAuthentication"}, annot: "keda"},
		{name: "keda ramping", plan: release.ScalePlan{Kind: "keda", Ramping: true},
			sc: manifests.Scaler{Scale: picchuv1alpha1.ScaleInfo{TargetRequestsRate: &rate,
				KedaWorker: &picchuv1alpha1.KedaScaleInfo{Triggers: []kedav1alpha1.ScaleTriggers{dd}}}}, annot: "keda"},
		{name: "wpa", plan: release.ScalePlan{Kind: "wpa", Autoscaler: true},
			sc:   manifests.Scaler{Scale: picchuv1alpha1.ScaleInfo{Worker: &picchuv1alpha1.WorkerScaleInfo{QueueURI: "q"}}},
			want: []string{"WorkerPodAutoScaler"}, annot: "wpa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sc.App, tc.sc.Target, tc.sc.Tag, tc.sc.Max = "jobs", "production", "v1", 3
			objs, err := autoscalerObjects(tc.plan, tc.sc)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(kinds(objs), tc.want) {
				t.Errorf("objects %v, want %v", kinds(objs), tc.want)
			}
			if a := autoscalerAnnotation(tc.plan.Kind, tc.sc); a != tc.annot {
				t.Errorf("annotation %q, want %q", a, tc.annot)
			}
		})
	}
}

func TestExternalSecretsCondition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		copies  bool
		missing []string
		status  metav1.ConditionStatus
		message string
	}{
		{name: "no ExternalSecrets"},
		{name: "served", copies: true, status: metav1.ConditionTrue},
		{name: "missing", copies: true, missing: []string{"east", "west"}, status: metav1.ConditionFalse, message: "east, west do not serve external-secrets.io/v1 ExternalSecret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rm := &picchuv1alpha1.ReleaseManager{}
			setExternalSecretsCondition(rm, true, []string{"gone"})
			setExternalSecretsCondition(rm, tc.copies, tc.missing)
			c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionExternalSecretsServed)
			switch {
			case tc.status == "" && c != nil:
				t.Errorf("condition %+v, want none", c)
			case tc.status == "":
			case c == nil || c.Status != tc.status || !strings.Contains(c.Message, tc.message):
				t.Errorf("condition %+v, want %s with %q", c, tc.status, tc.message)
			}
		})
	}
	var cs clusterSet
	for _, name := range []string{"b", "a", "b"} {
		cs.add(name)
	}
	if got := cs.sorted(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("cluster set %v", got)
	}
}

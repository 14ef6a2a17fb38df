package release_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/integrations/datadog"
	"github.com/medium/picchu/test/kit"
)

const (
	datadogAPIKey = "e2e-api-key"
	datadogAppKey = "e2e-app-key"
)

// datadogSecret is the Secret the operator reads the Datadog keys from, at
// every query, as with --datadog-secret.
func datadogSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "datadog-keys", Namespace: env.Namespace},
		Data:       map[string][]byte{datadog.SecretAPIKey: []byte(datadogAPIKey), datadog.SecretAppKey: []byte(datadogAppKey)},
	}
}

// fakeDatadog is Datadog's monitor API as far as Picchu reads it. It
// rejects (and remembers) every request that is not the monitor listing
// Picchu must send, with both keys; it answers each app's SLO monitor with
// the status a test sets per tag, or with an error status for the app.
type fakeDatadog struct {
	*httptest.Server
	mu       sync.Mutex
	groups   map[string]map[string]string // app → tag → "OK", "Alert", "No Data"
	failWith map[string]int               // app → HTTP status
	invalid  []string
}

func startFakeDatadog() *fakeDatadog {
	f := &fakeDatadog{groups: map[string]map[string]string{}, failWith: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// set gives app's monitor the status of tag's group.
func (f *fakeDatadog) set(app, tag, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.groups[app] == nil {
		f.groups[app] = map[string]string{}
	}
	f.groups[app][tag] = status
}

// fail makes the listing of app's monitors answer status (0: answer again).
func (f *fakeDatadog) fail(app string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWith[app] = status
}

func (f *fakeDatadog) problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.invalid)
}

func (f *fakeDatadog) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tags := q.Get("monitor_tags")
	app, rest, _ := strings.Cut(strings.TrimPrefix(tags, "app:"), ",")
	var problem string
	switch {
	case r.Method != http.MethodGet || r.URL.Path != "/api/v1/monitor":
		problem = "not GET /api/v1/monitor"
	case r.Header.Get("DD-API-KEY") != datadogAPIKey || r.Header.Get("DD-APPLICATION-KEY") != datadogAppKey:
		problem = "wrong or missing keys"
	case !strings.HasPrefix(tags, "app:") || (rest != "slo:true" && rest != "canary:true"):
		problem = fmt.Sprintf("monitor_tags %q", tags)
	case q.Get("group_states") != "all" || q.Get("page_size") == "" || q.Get("page") == "":
		problem = fmt.Sprintf("query %q", r.URL.RawQuery)
	}
	f.mu.Lock()
	if problem != "" {
		f.invalid = append(f.invalid, r.URL.String()+": "+problem)
	}
	status, groups := f.failWith[app], f.groups[app]
	var page []map[string]any
	if q.Get("page") == "0" && len(groups) > 0 {
		states := map[string]any{}
		for tag, s := range groups {
			name := "tag:" + tag + ",env:production"
			states[name] = map[string]any{"name": name, "status": s, "last_triggered_ts": 1763700000}
		}
		page = append(page, map[string]any{
			"id": 4242, "name": app + " error rate", "type": "query alert", "overall_state": "OK",
			"query": "sum(last_5m):sum:trace.http.request.errors{service:" + app + "} by {tag}.as_count() > 10",
			"tags":  []string{"app:" + app, "slo:true"}, "state": map[string]any{"groups": states},
		})
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case problem != "":
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"errors": []string{problem}})
	case status != 0:
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"errors": []string{http.StatusText(status)}})
	default:
		if page == nil {
			page = []map[string]any{}
		}
		_ = json.NewEncoder(w).Encode(page)
	}
}

// datadogBuild is a build judged by Datadog monitors only.
func datadogBuild(b build) build {
	b.datadog = true
	return b
}

// TestSLO_DatadogMonitorsJudgeTheCanary releases builds of an app whose
// target enables datadogMonitoring, against a fake Datadog API that checks
// every request: a monitor group with No Data, or an API error, holds the
// canary (AlertsObserved=False) without failing it, and so does a missing
// Secret of the keys; OK lets it pass, and
// Alert fails the next build and rolls it back in both clusters.
func TestSLO_DatadogMonitorsJudgeTheCanary(t *testing.T) {
	ctx := context.Background()
	const app = "payments"
	const canary = 2 * time.Second
	create(t, datadogBuild(build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond}))
	state(t, 30*time.Second, app, "v1", "released")

	dd.set(app, "v2", "No Data")
	create(t, datadogBuild(build{app: app, tag: "v2", commit: 2, delay: 300 * time.Millisecond, canary: canary}))
	state(t, 30*time.Second, app, "v2", "canarying")
	if c := alertsCondition(t, app, metav1.ConditionFalse); !strings.Contains(c.Message, "Datadog") {
		t.Errorf("condition message %q does not name Datadog", c.Message)
	}
	dd.set(app, "v2", "OK")
	dd.fail(app, http.StatusServiceUnavailable)
	kit.Eventually(t, 30*time.Second, "the condition names the API error", func() error {
		c := alertsCondition(t, app, metav1.ConditionFalse)
		if !strings.Contains(c.Message, "503") {
			return fmt.Errorf("message %q", c.Message)
		}
		return nil
	})
	// Once the canary has run its time and the operator has read the
	// monitors several times since, an unheld canary would have passed.
	kit.Eventually(t, 30*time.Second, "v2's canary time is over", func() error {
		st := state(t, time.Second, app, "v2", "canarying")
		if st.CanaryStartTimestamp == nil {
			return fmt.Errorf("no canary start recorded")
		}
		if time.Since(st.CanaryStartTimestamp.Time) < canary+4*alertCheckInterval {
			return fmt.Errorf("still running")
		}
		return nil
	})
	if st := state(t, time.Second, app, "v2", "canarying"); len(st.TriggeredAlerts) != 0 {
		t.Errorf("missing data recorded alerts %v", st.TriggeredAlerts)
	}
	routes(t, app, map[string]int32{"v1": 90, "v2": 10})

	// The Secret of the keys goes: a condition, not a failed build or a
	// stopped operator; it comes back, and the release goes on.
	if err := env.Delivery.Client.Delete(ctx, datadogSecret()); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 30*time.Second, "the condition names the missing Secret", func() error {
		c := alertsCondition(t, app, metav1.ConditionFalse)
		if !strings.Contains(c.Message, "datadog-keys") || !strings.Contains(c.Message, "not found") {
			return fmt.Errorf("message %q", c.Message)
		}
		return nil
	})
	// The canary's time is long over: only the missing keys hold it now.
	dd.fail(app, 0)
	state(t, time.Second, app, "v2", "canarying")
	if err := env.Delivery.Client.Create(ctx, datadogSecret()); err != nil {
		t.Fatal(err)
	}
	state(t, 60*time.Second, app, "v2", "released")
	routes(t, app, map[string]int32{"v2": 100})

	dd.set(app, "v3", "Alert")
	v3 := create(t, datadogBuild(build{app: app, tag: "v3", commit: 3, delay: 300 * time.Millisecond, canary: time.Minute}))
	st := state(t, 60*time.Second, app, "v3", "failed")
	if !slices.Equal(st.TriggeredAlerts, []string{app + " error rate"}) {
		t.Errorf("recorded alerts %v, want the monitor's name", st.TriggeredAlerts)
	}
	routes(t, app, map[string]int32{"v2": 100})
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v3), v3); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v3.Annotations[picchuv1alpha1.AnnotationFailedReason], app+" error rate") {
		t.Errorf("failed-reason %q", v3.Annotations[picchuv1alpha1.AnnotationFailedReason])
	}
}

// TestSLO_DatadogCanaryWithoutAGroupHolds: v2 canaries while the app's
// Datadog monitor has a group for v1 only (it counted nothing of v2): past
// its canary time it still canaries and CanaryEvidence=False names the
// monitor; once the monitor has a group for v2, the canary passes.
func TestSLO_DatadogCanaryWithoutAGroupHolds(t *testing.T) {
	const app = "ledger"
	const canary = 2 * time.Second
	dd.set(app, "v1", "OK")
	create(t, datadogBuild(build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond}))
	state(t, 30*time.Second, app, "v1", "released")

	create(t, datadogBuild(build{app: app, tag: "v2", commit: 2, delay: 300 * time.Millisecond, canary: canary}))
	state(t, 30*time.Second, app, "v2", "canarying")
	kit.Eventually(t, 30*time.Second, "v2's canary held for want of a group", func() error {
		rm, err := releaseManager(context.Background(), app)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionCanaryEvidence)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, app+" error rate (Datadog)") {
			return fmt.Errorf("CanaryEvidence %+v", c)
		}
		return nil
	})
	state(t, time.Second, app, "v2", "canarying")
	routes(t, app, map[string]int32{"v1": 90, "v2": 10})

	dd.set(app, "v2", "OK")
	state(t, 60*time.Second, app, "v2", "released")
	if problems := dd.problems(); len(problems) > 0 {
		t.Errorf("invalid requests to Datadog: %v", problems)
	}
}

// TestRetry_AFalsePositiveIsReleasedAfterARetry: v2's monitor alerts, so
// its canary fails it; the alert was a false positive (the monitor is OK
// again). A retry (spec.failed back to false, as kubectl picchu retry
// does) clears the alert it was failed on, keeping it in its retries, and
// v2 canaries again and is released, not failed again on the old record.
func TestRetry_AFalsePositiveIsReleasedAfterARetry(t *testing.T) {
	ctx := context.Background()
	const app = "retried"
	create(t, datadogBuild(build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond}))
	state(t, 30*time.Second, app, "v1", "released")

	dd.set(app, "v2", "Alert")
	v2 := create(t, datadogBuild(build{app: app, tag: "v2", commit: 2, delay: 300 * time.Millisecond, canary: 2 * time.Second}))
	state(t, 60*time.Second, app, "v2", "failed")
	dd.set(app, "v2", "OK")

	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v2), v2); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(v2.DeepCopy())
	v2.Spec.Failed = false
	delete(v2.Annotations, picchuv1alpha1.AnnotationFailedReason)
	delete(v2.Annotations, picchuv1alpha1.AnnotationFailedAt)
	if err := env.Delivery.Client.Patch(ctx, v2, patch); err != nil {
		t.Fatal(err)
	}
	st := state(t, 60*time.Second, app, "v2", "released")
	routes(t, app, map[string]int32{"v2": 100})
	if len(st.TriggeredAlerts) != 0 || len(st.Retries) != 1 || !slices.Equal(st.Retries[0].TriggeredAlerts, []string{app + " error rate"}) {
		t.Errorf("after the retry: alerts %v, retries %+v; want none, and one retry keeping the alert", st.TriggeredAlerts, st.Retries)
	}
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v2), v2); err != nil {
		t.Fatal(err)
	}
	if v2.Spec.Failed {
		t.Errorf("v2 failed again: %s", v2.Annotations[picchuv1alpha1.AnnotationFailedReason])
	}
}

package mesh_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	istioapi "istio.io/api/networking/v1alpha3"
	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/integration/harness"
)

// env has two target clusters with Istio's and prometheus-operator's CRDs.
var env *harness.Env

// testTimeout bounds each wait of a test.
const testTimeout = 15 * time.Second

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 2}, func(s *harness.Suite) error {
		env = s.Env
		return nil
	})
}

// clusters returns the targets' clients by name, each wrapped by wrap when set.
func clusters(wrap func(client.Client) client.Client) map[string]client.Client {
	out := map[string]client.Client{}
	for _, t := range env.Targets {
		c := t.Client
		if wrap != nil {
			c = wrap(c)
		}
		out[t.Name] = c
	}
	return out
}

// logLines collects what a Mesh logs, and passes it on to the test's log.
type logLines struct {
	t     testing.TB
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	l.t.Log(line)
}

// count returns how many lines logged contain s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// newMesh creates a Mesh logging to the test and serves its Handler; it does
// not run it.
func newMesh(t *testing.T, opts mesh.Options) (*mesh.Mesh, *httptest.Server, *logLines) {
	t.Helper()
	logs := &logLines{t: t}
	if opts.Log == nil {
		opts.Log = logs.logf
	}
	m, err := mesh.New(opts)
	if err != nil {
		t.Fatalf("creating the mesh: %v", err)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return m, srv, logs
}

// runMesh runs m until the test ends, and then checks that Run returned nil.
func runMesh(t *testing.T, m *mesh.Mesh) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("running the mesh: %v", err)
			}
		case <-time.After(testTimeout):
			t.Errorf("the mesh still runs %s after its context was canceled", testTimeout)
		}
	})
}

// destination is a subset of a route and its weight.
type destination struct {
	tag    string
	weight int32
}

// virtualService is app's VirtualService in the shape Picchu writes: a
// route to a tagged release matched on a header, then the release routes
// of the http port (weights http) and of the grpc port (weights grpc).
func virtualService(app string, http, grpc []destination) *istionetworking.VirtualService {
	namespace := app + "-production"
	host := app + "." + namespace + ".svc.cluster.local"
	dests := func(ds []destination, port uint32) []*istioapi.HTTPRouteDestination {
		var out []*istioapi.HTTPRouteDestination
		for _, d := range ds {
			out = append(out, &istioapi.HTTPRouteDestination{
				Destination: &istioapi.Destination{Host: host, Subset: d.tag, Port: &istioapi.PortSelector{Number: port}},
				Weight:      d.weight,
			})
		}
		return out
	}
	match := func(port uint32) []*istioapi.HTTPMatchRequest {
		return []*istioapi.HTTPMatchRequest{{Gateways: []string{"mesh"}, Port: port}}
	}
	tagged := match(80)
	tagged[0].Headers = map[string]*istioapi.StringMatch{
		"x-medium-tag": {MatchType: &istioapi.StringMatch_Exact{Exact: "v1"}},
	}
	return &istionetworking.VirtualService{
		ObjectMeta: metav1.ObjectMeta{
			Name: app, Namespace: namespace, Labels: map[string]string{picchuv1alpha1.LabelApp: app},
		},
		Spec: istioapi.VirtualService{
			Hosts:    []string{host},
			Gateways: []string{"mesh"},
			Http: []*istioapi.HTTPRoute{
				{Name: "00_tagged-v1-http", Match: tagged, Route: dests([]destination{{"v1", 100}}, 80)},
				{Name: "01_release-http", Match: match(80), Route: dests(http, 80)},
				{Name: "01_release-grpc", Match: match(4242), Route: dests(grpc, 4242)},
			},
		},
	}
}

// createVirtualService creates vs, and its namespace if need be, on c, and
// deletes it when the test ends.
func createVirtualService(t *testing.T, c client.Client, vs *istionetworking.VirtualService) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vs.Namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", vs.Namespace, err)
	}
	if err := c.Create(ctx, vs); err != nil {
		t.Fatalf("creating VirtualService %s/%s: %v", vs.Namespace, vs.Name, err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), vs); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting VirtualService %s/%s: %v", vs.Namespace, vs.Name, err)
		}
	})
}

// weights returns what GET /weights answers.
func weights(baseURL string) (map[string]map[string]map[string]int32, error) {
	var w map[string]map[string]map[string]int32
	body, err := get(baseURL + "/weights")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		return nil, fmt.Errorf("decoding /weights %q: %w", body, err)
	}
	return w, nil
}

// get returns the body of a GET answered 200.
func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("GET %s: reading the body: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// do sends a request without a body and returns the status code and body.
func do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return resp.StatusCode, string(body)
}

// samples are the metrics GET /metrics answered.
type samples map[string]*dto.MetricFamily

func scrape(baseURL string) (samples, error) {
	body, err := get(baseURL + "/metrics")
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	return families, nil
}

// sum adds up the values of the series of metric whose labels include match.
func (s samples) sum(metric string, match map[string]string) (total float64, series int) {
	family := s[metric]
	if family == nil {
		return 0, 0
	}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		matched := true
		for k, v := range match {
			if labels[k] != v {
				matched = false
			}
		}
		if !matched {
			continue
		}
		series++
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		}
	}
	return total, series
}

// requests sums istio_requests_total over the series matching labels.
func (s samples) requests(labels ...string) float64 {
	match := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		match[labels[i]] = labels[i+1]
	}
	total, _ := s.sum("istio_requests_total", match)
	return total
}

// flakyClient is a cluster's client whose lists fail while fail is set, as
// those of a cluster that is down, and its lists of pods while failPods is;
// it counts the lists of PrometheusRules.
type flakyClient struct {
	client.Client
	fail      atomic.Bool
	failPods  atomic.Bool
	ruleLists atomic.Int64
}

var errDown = errors.New("connection refused (the test took the cluster down)")

func (c *flakyClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, pods := list.(*corev1.PodList); c.fail.Load() || (pods && c.failPods.Load()) {
		return errDown
	}
	err := c.Client.List(ctx, list, opts...)
	if _, ok := list.(*monitoringv1.PrometheusRuleList); ok && err == nil {
		c.ruleLists.Add(1)
	}
	return err
}

package mesh_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/kit"
)

// TestMesh_Traffic checks that each cluster's requests follow the weights of
// its release route, and that only a tag given an error ratio fails.
func TestMesh_Traffic(t *testing.T) {
	for _, target := range env.Targets {
		createVirtualService(t, target.Client, virtualService("shop",
			[]destination{{"v1", 90}, {"v2", 10}}, []destination{{"v1", 30}, {"v2", 70}}))
	}
	m, srv, _ := newMesh(t, mesh.Options{Clusters: clusters(nil), RequestsPerSecond: 2000, Interval: 20 * time.Millisecond})
	if code, body := do(t, http.MethodPut, srv.URL+"/error-ratio?app=shop&tag=v2&ratio=0.5"); code != http.StatusOK {
		t.Fatalf("PUT /error-ratio: %d %s", code, body)
	}
	runMesh(t, m)

	want := map[string]int32{"v1": 90, "v2": 10}
	kit.Eventually(t, testTimeout, "/weights shows each cluster's release route", func() error {
		w, err := weights(srv.URL)
		if err != nil {
			return err
		}
		for _, target := range env.Targets {
			if got := w[target.Name]["shop"]; !reflect.DeepEqual(got, want) {
				return fmt.Errorf("%s: shop's weights are %v, want %v (all: %v)", target.Name, got, want, w)
			}
		}
		return nil
	})

	var s samples
	kit.Eventually(t, testTimeout, "v1 receives 3000 requests", func() error {
		var err error
		if s, err = scrape(srv.URL); err != nil {
			return err
		}
		if n := s.requests("destination_app", "shop", "destination_version", "v1"); n < 3000 {
			return fmt.Errorf("v1 received %.0f requests", n)
		}
		return nil
	})
	v1 := s.requests("destination_app", "shop", "destination_version", "v1")
	v2 := s.requests("destination_app", "shop", "destination_version", "v2")
	if ratio := v2 / v1; math.Abs(ratio-1.0/9) > 0.01 {
		t.Errorf("v2 received %.1f requests and v1 %.1f: ratio %.4f, want about 1/9", v2, v1, ratio)
	}
	for _, target := range env.Targets {
		if n := s.requests("destination_app", "shop", "destination_cluster", target.Name); n == 0 {
			t.Errorf("%s served no requests", target.Name)
		}
	}
	if n := s.requests("destination_app", "shop", "destination_version", "v1", "response_code", "500"); n != 0 {
		t.Errorf("v1, with no error ratio, failed %.1f requests", n)
	}
	v2Failed := s.requests("destination_app", "shop", "destination_version", "v2", "response_code", "500")
	if math.Abs(v2Failed/v2-0.5) > 0.001 {
		t.Errorf("v2, with error ratio 0.5, failed %.1f of %.1f requests", v2Failed, v2)
	}
	if n := s.requests("reporter", "destination", "destination_app", "shop"); math.Abs(n-(v1+v2)) > 1e-6*n {
		t.Errorf("requests reported by the destination are %.1f, want all %.1f", n, v1+v2)
	}
}

// TestMesh_Quiet: a quiet tag receives no request whatever its weight, and
// its share again once it is not quiet.
func TestMesh_Quiet(t *testing.T) {
	for _, target := range env.Targets {
		createVirtualService(t, target.Client, virtualService("hush",
			[]destination{{"v1", 50}, {"v2", 50}}, []destination{{"v1", 50}, {"v2", 50}}))
	}
	m, srv, _ := newMesh(t, mesh.Options{Clusters: clusters(nil), RequestsPerSecond: 2000, Interval: 20 * time.Millisecond})
	if err := mesh.SetQuiet(context.Background(), srv.URL, "hush", "v2", true); err != nil {
		t.Fatal(err)
	}
	runMesh(t, m)
	var s samples
	kit.Eventually(t, testTimeout, "v1 receives 1000 requests", func() error {
		var err error
		if s, err = scrape(srv.URL); err != nil {
			return err
		}
		if n := s.requests("destination_app", "hush", "destination_version", "v1"); n < 1000 {
			return fmt.Errorf("v1 received %.0f requests", n)
		}
		return nil
	})
	if n := s.requests("destination_app", "hush", "destination_version", "v2"); n != 0 {
		t.Errorf("quiet v2 received %.0f requests", n)
	}
	if err := mesh.SetQuiet(context.Background(), srv.URL, "hush", "v2", false); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, testTimeout, "v2 receives requests again", func() error {
		s, err := scrape(srv.URL)
		if err != nil {
			return err
		}
		if n := s.requests("destination_app", "hush", "destination_version", "v2"); n < 100 {
			return fmt.Errorf("v2 received %.0f requests", n)
		}
		return nil
	})
}

// TestMesh_ErrorRatioInOneCluster: an error ratio set for one cluster
// fails that share of the tag's requests there, whatever the ratio set for
// every cluster, which the other clusters keep; a cluster the mesh does not
// serve is refused.
func TestMesh_ErrorRatioInOneCluster(t *testing.T) {
	ctx := context.Background()
	for _, target := range env.Targets {
		createVirtualService(t, target.Client, virtualService("split",
			[]destination{{"v1", 50}, {"v2", 50}}, []destination{{"v1", 50}, {"v2", 50}}))
	}
	first, second := env.Targets[0].Name, env.Targets[1].Name
	m, srv, _ := newMesh(t, mesh.Options{Clusters: clusters(nil), RequestsPerSecond: 2000, Interval: 20 * time.Millisecond})
	if err := m.SetErrorRatio("split", "v2", 0.1); err != nil {
		t.Fatal(err)
	}
	if err := mesh.SetErrorRatioIn(ctx, srv.URL, second, "split", "v2", 0.5); err != nil {
		t.Fatal(err)
	}
	err := mesh.SetErrorRatioIn(ctx, srv.URL, "nowhere", "split", "v2", 0.5)
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request") || !strings.Contains(err.Error(), `cluster "nowhere" is not one of the mesh's`) {
		t.Errorf("SetErrorRatioIn on a cluster the mesh does not serve: %v, want 400 and the reason", err)
	}
	runMesh(t, m)

	var s samples
	kit.Eventually(t, testTimeout, "v2 receives 1000 requests in each cluster", func() error {
		var err error
		if s, err = scrape(srv.URL); err != nil {
			return err
		}
		for _, c := range []string{first, second} {
			if n := s.requests("destination_app", "split", "destination_version", "v2", "destination_cluster", c); n < 1000 {
				return fmt.Errorf("v2 received %.0f requests in %s", n, c)
			}
		}
		return nil
	})
	for c, want := range map[string]float64{first: 0.1, second: 0.5} {
		all := s.requests("destination_app", "split", "destination_version", "v2", "destination_cluster", c)
		failed := s.requests("destination_app", "split", "destination_version", "v2", "destination_cluster", c, "response_code", "500")
		if math.Abs(failed/all-want) > 0.001 {
			t.Errorf("%s: v2 failed %.1f of %.1f requests, want a ratio of %v", c, failed, all, want)
		}
		if n := s.requests("destination_app", "split", "destination_version", "v1", "destination_cluster", c, "response_code", "500"); n != 0 {
			t.Errorf("%s: v1, with no error ratio, failed %.1f requests", c, n)
		}
	}

	for _, tc := range []struct{ query, want string }{
		{"", `{"split":{"v2":0.1}}`},
		{"?cluster=" + second, `{"split":{"v2":0.5}}`},
		{"?cluster=" + first, `{"split":{"v2":0.1}}`},
	} {
		body, err := get(srv.URL + "/error-ratio" + tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(body) != tc.want {
			t.Errorf("GET /error-ratio%s = %s, want %s", tc.query, body, tc.want)
		}
	}
}

// TestMesh_WeightChange checks that a weight changed on one cluster is read
// and exported, that a lone destination without weight takes all traffic,
// and that the weights of a tag gone are no longer exported.
func TestMesh_WeightChange(t *testing.T) {
	for _, target := range env.Targets {
		createVirtualService(t, target.Client, virtualService("cart",
			[]destination{{"v1", 90}, {"v2", 10}}, []destination{{"v1", 90}, {"v2", 10}}))
	}
	m, srv, logs := newMesh(t, mesh.Options{Clusters: clusters(nil), Interval: 20 * time.Millisecond})
	runMesh(t, m)
	first, second := env.Targets[0], env.Targets[1]
	waitWeights(t, srv.URL, "cart", map[string]map[string]int32{
		first.Name: {"v1": 90, "v2": 10}, second.Name: {"v1": 90, "v2": 10},
	})

	setRelease(t, second.Client, "cart", []destination{{"v1", 50}, {"v2", 50}})
	waitWeights(t, srv.URL, "cart", map[string]map[string]int32{
		first.Name: {"v1": 90, "v2": 10}, second.Name: {"v1": 50, "v2": 50},
	})
	if got := m.Weights()[second.Name]["cart"]; !reflect.DeepEqual(got, map[string]int32{"v1": 50, "v2": 50}) {
		t.Errorf("Weights() of cart on %s = %v, want v1 50, v2 50", second.Name, got)
	}
	if n := logs.count("app cart: weights v1 50%, v2 50%"); n != 1 {
		t.Errorf("the new weights were logged %d times, want once", n)
	}

	setRelease(t, second.Client, "cart", []destination{{"v2", 0}})
	waitWeights(t, srv.URL, "cart", map[string]map[string]int32{
		first.Name: {"v1": 90, "v2": 10}, second.Name: {"v2": 100},
	})
	kit.Eventually(t, testTimeout, "mesh_route_weight follows", func() error {
		s, err := scrape(srv.URL)
		if err != nil {
			return err
		}
		if w, n := s.sum("mesh_route_weight", map[string]string{
			"destination_cluster": second.Name, "destination_app": "cart", "destination_version": "v2",
		}); n != 1 || w != 100 {
			return fmt.Errorf("%s's v2 weight: %d series summing to %v, want 100", second.Name, n, w)
		}
		if _, n := s.sum("mesh_route_weight", map[string]string{
			"destination_cluster": second.Name, "destination_app": "cart", "destination_version": "v1",
		}); n != 0 {
			return fmt.Errorf("%s's v1 weight is still exported", second.Name)
		}
		return nil
	})
}

// TestMesh_ClusterDown checks that a cluster that fails to answer serves no
// traffic, is logged once, and serves again when it answers.
func TestMesh_ClusterDown(t *testing.T) {
	for _, target := range env.Targets {
		createVirtualService(t, target.Client, virtualService("pay",
			[]destination{{"v1", 100}}, []destination{{"v1", 100}}))
	}
	flaky := map[string]*flakyClient{}
	m, srv, logs := newMesh(t, mesh.Options{
		Clusters: clusters(func(c client.Client) client.Client {
			f := &flakyClient{Client: c}
			for _, target := range env.Targets {
				if target.Client == c {
					flaky[target.Name] = f
				}
			}
			return f
		}),
		RequestsPerSecond: 1000, Interval: 20 * time.Millisecond,
	})
	runMesh(t, m)
	up, down := env.Targets[0].Name, env.Targets[1].Name
	waitWeights(t, srv.URL, "pay", map[string]map[string]int32{up: {"v1": 100}, down: {"v1": 100}})

	flaky[down].fail.Store(true)
	kit.Eventually(t, testTimeout, down+" left out of /weights", func() error {
		w, err := weights(srv.URL)
		if err != nil {
			return err
		}
		if _, ok := w[down]; ok {
			return fmt.Errorf("/weights still has %s: %v", down, w)
		}
		if _, ok := w[up]; !ok {
			return fmt.Errorf("/weights lost %s too: %v", up, w)
		}
		return nil
	})
	s, err := scrape(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	downBefore := s.requests("destination_app", "pay", "destination_cluster", down)
	upBefore := s.requests("destination_app", "pay", "destination_cluster", up)
	kit.Eventually(t, testTimeout, up+" serves 500 more requests", func() error {
		if s, err = scrape(srv.URL); err != nil {
			return err
		}
		if n := s.requests("destination_app", "pay", "destination_cluster", up); n < upBefore+500 {
			return fmt.Errorf("%s served %.0f requests, %.0f before", up, n, upBefore)
		}
		return nil
	})
	if n := s.requests("destination_app", "pay", "destination_cluster", down); n != downBefore {
		t.Errorf("%s, down, served %.1f requests, up from %.1f", down, n, downBefore)
	}
	if n := logs.count("cluster " + down + ": listing VirtualServices: " + errDown.Error()); n != 1 {
		t.Errorf("the failure of %s was logged %d times, want once", down, n)
	}

	flaky[down].fail.Store(false)
	waitWeights(t, srv.URL, "pay", map[string]map[string]int32{up: {"v1": 100}, down: {"v1": 100}})
	kit.Eventually(t, testTimeout, down+" serves again", func() error {
		s, err := scrape(srv.URL)
		if err != nil {
			return err
		}
		if n := s.requests("destination_app", "pay", "destination_cluster", down); n <= downBefore {
			return fmt.Errorf("%s served %.1f requests, as when down", down, n)
		}
		return nil
	})
	if n := logs.count("cluster " + down + ": listing VirtualServices: answering again"); n != 1 {
		t.Errorf("the return of %s was logged %d times, want once", down, n)
	}
}

// TestMesh_HTTP checks the answers of the HTTP API to good and bad requests.
func TestMesh_HTTP(t *testing.T) {
	_, srv, _ := newMesh(t, mesh.Options{Clusters: clusters(nil)})
	for _, tc := range []struct {
		name, method, path string
		code               int
		body               string // a part of the body
	}{
		{"set", http.MethodPut, "/error-ratio?app=shop&tag=v2&ratio=0.25", http.StatusOK, "shop/v2: error ratio 0.25"},
		{"set in a cluster", http.MethodPut, "/error-ratio?app=shop&tag=v2&ratio=0.5&cluster=" + env.Targets[1].Name, http.StatusOK,
			"shop/v2: error ratio 0.5 on cluster " + env.Targets[1].Name},
		{"set in no such cluster", http.MethodPut, "/error-ratio?app=shop&tag=v2&ratio=0.5&cluster=nowhere", http.StatusBadRequest,
			`cluster "nowhere" is not one of the mesh's`},
		{"no ratio", http.MethodPut, "/error-ratio?app=shop&tag=v2", http.StatusBadRequest, "missing query parameter(s): ratio"},
		{"no app nor tag", http.MethodPut, "/error-ratio?ratio=0.5", http.StatusBadRequest, "missing query parameter(s): app, tag"},
		{"not a number", http.MethodPut, "/error-ratio?app=shop&tag=v2&ratio=abc", http.StatusBadRequest, `ratio "abc" is not a number`},
		{"above 1", http.MethodPut, "/error-ratio?app=shop&tag=v2&ratio=1.5", http.StatusBadRequest, "ratio 1.5 is not between 0 and 1"},
		{"negative", http.MethodPut, "/error-ratio?app=shop&tag=v2&ratio=-0.1", http.StatusBadRequest, "ratio -0.1 is not between 0 and 1"},
		{"NaN", http.MethodPut, "/error-ratio?app=shop&tag=v2&ratio=NaN", http.StatusBadRequest, "ratio NaN is not between 0 and 1"},
		{"wrong method", http.MethodPost, "/error-ratio?app=shop&tag=v2&ratio=0.5", http.StatusMethodNotAllowed, ""},
		{"ratios", http.MethodGet, "/error-ratio", http.StatusOK, `{"shop":{"v2":0.25}}`},
		{"weights before running", http.MethodGet, "/weights", http.StatusOK, "{}"},
		{"unready before running", http.MethodGet, "/unready", http.StatusOK, "{}"},
		{"unready by PUT", http.MethodPut, "/unready", http.StatusMethodNotAllowed, ""},
		{"metrics by PUT", http.MethodPut, "/metrics", http.StatusMethodNotAllowed, ""},
		{"health", http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{"quiet", http.MethodPut, "/quiet?app=shop&tag=v2&quiet=true", http.StatusOK, "shop/v2: quiet true"},
		{"quiet, not a boolean", http.MethodPut, "/quiet?app=shop&tag=v2&quiet=maybe", http.StatusBadRequest, `quiet "maybe" is not a boolean`},
		{"quiet, no tag", http.MethodPut, "/quiet?app=shop&quiet=true", http.StatusBadRequest, "must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, tc.method, srv.URL+tc.path)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, code, body, tc.code, tc.body)
			}
		})
	}

	t.Run("client", func(t *testing.T) {
		ctx := context.Background()
		if err := mesh.SetErrorRatio(ctx, srv.URL, "shop", "v3", 0.75); err != nil {
			t.Fatalf("SetErrorRatio: %v", err)
		}
		body, err := get(srv.URL + "/error-ratio")
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"shop":{"v2":0.25,"v3":0.75}}`; strings.TrimSpace(body) != want {
			t.Errorf("GET /error-ratio = %s, want %s", body, want)
		}
		err = mesh.SetErrorRatio(ctx, srv.URL+"/", "shop", "v3", 2)
		if err == nil || !strings.Contains(err.Error(), "400 Bad Request") || !strings.Contains(err.Error(), "ratio 2 is not between 0 and 1") {
			t.Errorf("SetErrorRatio with ratio 2: %v, want 400 and the reason", err)
		}
		if got, err := mesh.UnreadyRequests(ctx, srv.URL+"/", "shop"); err != nil || len(got) != 0 {
			t.Errorf("UnreadyRequests before running: %v, %v; want none", got, err)
		}
		_, err = mesh.UnreadyRequests(ctx, srv.URL+"/nowhere", "shop")
		if err == nil || !strings.Contains(err.Error(), "requests to builds without ready pods") || !strings.Contains(err.Error(), "404 Not Found") {
			t.Errorf("UnreadyRequests of a path the mesh does not serve: %v, want 404 and what was asked", err)
		}
	})
}

// TestNew checks that New rejects bad options.
func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts mesh.Options
		want string
	}{
		{"no clusters", mesh.Options{}, "no clusters"},
		{"nil client", mesh.Options{Clusters: map[string]client.Client{"a": nil}}, "cluster a has no client"},
		{"negative rate", mesh.Options{Clusters: clusters(nil), RequestsPerSecond: -1}, "requests per second -1"},
		{"negative interval", mesh.Options{Clusters: clusters(nil), Interval: -time.Second}, "interval -1s"},
		{"negative lag", mesh.Options{Clusters: clusters(nil), Lag: ptr.To(-time.Millisecond)}, "lag -1ms is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := mesh.New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// waitWeights waits until /weights shows, for app, the weights want has
// for each cluster.
func waitWeights(t *testing.T, baseURL, app string, want map[string]map[string]int32) {
	t.Helper()
	kit.Eventually(t, testTimeout, fmt.Sprintf("/weights of %s: %v", app, want), func() error {
		w, err := weights(baseURL)
		if err != nil {
			return err
		}
		for cluster, tags := range want {
			if got := w[cluster][app]; !reflect.DeepEqual(got, tags) {
				return fmt.Errorf("%s: %v, want %v", cluster, got, tags)
			}
		}
		return nil
	})
}

// setRelease sets the destinations of app's http release route on c.
func setRelease(t *testing.T, c client.Client, app string, dests []destination) {
	t.Helper()
	ctx := context.Background()
	vs := &istionetworking.VirtualService{}
	key := client.ObjectKey{Namespace: app + "-production", Name: app}
	if err := c.Get(ctx, key, vs); err != nil {
		t.Fatalf("reading VirtualService %s: %v", key, err)
	}
	vs.Spec.Http[1].Route = virtualService(app, dests, nil).Spec.Http[1].Route
	if err := c.Update(ctx, vs); err != nil {
		t.Fatalf("updating VirtualService %s: %v", key, err)
	}
}

package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the mesh's HTTP API:
//
//	GET /metrics       the metrics, in Prometheus' text format
//	PUT /error-ratio   ?app=A&tag=T&ratio=R sets the error ratio of A's tag T on
//	                   every cluster; with &cluster=C, on cluster C alone (it wins there)
//	GET /error-ratio   the error ratios set for every cluster, as JSON {"<app>": {"<tag>": ratio}};
//	                   with ?cluster=C, those in effect on cluster C
//	PUT /quiet         ?app=A&tag=T&quiet=true|false: A's tag T receives no request, or its share again
//	GET /weights       the weights in effect (read at least the lag before), as JSON
//	                   {"<cluster>": {"<app>": {"<tag>": weight}}}
//	GET /unrouted      the requests that found no route, as JSON {"<cluster>": {"<app>": requests}}
//	GET /unready       the requests sent to a build with no ready pod, as JSON
//	                   {"<cluster>": {"<app>": {"<tag>": requests}}}
//	GET /healthz       200 "ok"
//
// A bad request gets 400 and says what is wrong; another method, 405.
func (m *Mesh) Handler() http.Handler {
	return m.handler
}

func (m *Mesh) newHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.metrics.registry, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("PUT /error-ratio", m.putErrorRatio)
	mux.HandleFunc("PUT /quiet", m.putQuiet)
	mux.HandleFunc("GET /error-ratio", func(w http.ResponseWriter, r *http.Request) {
		if cluster := r.URL.Query().Get("cluster"); cluster != "" {
			writeJSON(w, m.ErrorRatiosIn(cluster))
			return
		}
		writeJSON(w, m.ErrorRatios())
	})
	mux.HandleFunc("GET /unrouted", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, m.Unrouted())
	})
	mux.HandleFunc("GET /unready", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, m.UnreadyRequests())
	})
	mux.HandleFunc("GET /weights", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, m.Weights())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

// putErrorRatio sets the error ratio of the query's app and tag, on the
// query's cluster if it names one, else on every cluster.
func (m *Mesh) putErrorRatio(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	app, tag, raw, cluster := q.Get("app"), q.Get("tag"), q.Get("ratio"), q.Get("cluster")
	var missing []string
	for _, p := range []struct{ name, value string }{{"app", app}, {"tag", tag}, {"ratio", raw}} {
		if p.value == "" {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		http.Error(w, "missing query parameter(s): "+strings.Join(missing, ", "), http.StatusBadRequest)
		return
	}
	ratio, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		http.Error(w, fmt.Sprintf("ratio %q is not a number", raw), http.StatusBadRequest)
		return
	}
	set, where := m.SetErrorRatio, ""
	if cluster != "" {
		set = func(app, tag string, ratio float64) error { return m.SetErrorRatioIn(cluster, app, tag, ratio) }
		where = " on cluster " + cluster
	}
	if err := set(app, tag, ratio); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.logf("app %s: tag %s: error ratio %v%s", app, tag, ratio, where)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintf(w, "%s/%s: error ratio %v%s\n", app, tag, ratio, where)
}

// putQuiet quiets, or lets through again, the query's app and tag.
func (m *Mesh) putQuiet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	quiet, err := strconv.ParseBool(q.Get("quiet"))
	if err != nil {
		http.Error(w, fmt.Sprintf("quiet %q is not a boolean", q.Get("quiet")), http.StatusBadRequest)
		return
	}
	if err := m.SetQuiet(q.Get("app"), q.Get("tag"), quiet); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.logf("app %s: tag %s: quiet %t", q.Get("app"), q.Get("tag"), quiet)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintf(w, "%s/%s: quiet %t\n", q.Get("app"), q.Get("tag"), quiet)
}

// SetQuiet asks the mesh at baseURL to send app's tag no request (quiet),
// or its share again.
func SetQuiet(ctx context.Context, baseURL, app, tag string, quiet bool) error {
	q := url.Values{}
	q.Set("app", app)
	q.Set("tag", tag)
	q.Set("quiet", strconv.FormatBool(quiet))
	return put(ctx, strings.TrimSuffix(baseURL, "/")+"/quiet?"+q.Encode(), fmt.Sprintf("quieting %s/%s at %s", app, tag, baseURL))
}

// put sends PUT target and fails, saying what, unless it answers 200.
func put(ctx context.Context, target, what string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: PUT: %s: %s", what, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(data, '\n'))
}

// SetErrorRatio asks the mesh serving at baseURL (say
// http://127.0.0.1:9901) to fail ratio (between 0 and 1) of the requests to
// app's tag, with PUT /error-ratio.
func SetErrorRatio(ctx context.Context, baseURL, app, tag string, ratio float64) error {
	q := url.Values{}
	q.Set("app", app)
	q.Set("tag", tag)
	q.Set("ratio", strconv.FormatFloat(ratio, 'g', -1, 64))
	return put(ctx, strings.TrimSuffix(baseURL, "/")+"/error-ratio?"+q.Encode(),
		fmt.Sprintf("setting the error ratio of %s/%s at %s", app, tag, baseURL))
}

// SetErrorRatioIn asks the mesh serving at baseURL to fail ratio (between
// 0 and 1) of the requests to app's tag on cluster alone (one of the
// mesh's, by the name its --kubeconfig gave it), whatever the ratio set
// for every cluster, with PUT /error-ratio.
func SetErrorRatioIn(ctx context.Context, baseURL, cluster, app, tag string, ratio float64) error {
	q := url.Values{}
	q.Set("cluster", cluster)
	q.Set("app", app)
	q.Set("tag", tag)
	q.Set("ratio", strconv.FormatFloat(ratio, 'g', -1, 64))
	return put(ctx, strings.TrimSuffix(baseURL, "/")+"/error-ratio?"+q.Encode(),
		fmt.Sprintf("setting the error ratio of %s/%s on cluster %s at %s", app, tag, cluster, baseURL))
}

// Unrouted asks the mesh serving at baseURL how many requests to app found
// no route, on every cluster together (GET /unrouted).
func Unrouted(ctx context.Context, baseURL, app string) (float64, error) {
	var byCluster map[string]map[string]float64
	if err := getJSON(ctx, baseURL, "/unrouted", "unrouted requests", &byCluster); err != nil {
		return 0, err
	}
	var n float64
	for _, apps := range byCluster {
		n += apps[app]
	}
	return n, nil
}

// Weights asks the mesh serving at baseURL for the weights in effect, in
// percent, by cluster, app and tag (GET /weights): those its traffic
// follows, read from the clusters at least its lag before.
func Weights(ctx context.Context, baseURL string) (map[string]map[string]map[string]int32, error) {
	var w map[string]map[string]map[string]int32
	if err := getJSON(ctx, baseURL, "/weights", "the weights in effect", &w); err != nil {
		return nil, err
	}
	return w, nil
}

// UnreadyRequests asks the mesh serving at baseURL how many requests it
// sent to a build of app that had no ready pod on its cluster, by cluster
// and tag (GET /unready). A cluster and tag that never had any are left
// out: none for the whole app is an empty map.
func UnreadyRequests(ctx context.Context, baseURL, app string) (map[string]map[string]float64, error) {
	var all map[string]map[string]map[string]float64
	if err := getJSON(ctx, baseURL, "/unready", "requests to builds without ready pods", &all); err != nil {
		return nil, err
	}
	out := map[string]map[string]float64{}
	for cluster, apps := range all {
		if len(apps[app]) > 0 {
			out[cluster] = apps[app]
		}
	}
	return out, nil
}

// getJSON decodes into v what GET path answers at the mesh serving at
// baseURL, and fails, saying what was asked for, unless it answers 200.
func getJSON(ctx context.Context, baseURL, path, what string, v any) error {
	target := strings.TrimSuffix(baseURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("asking %s for %s: %w", baseURL, what, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("asking %s for %s: %w", baseURL, what, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("asking %s for %s: GET %s: %s: %s", baseURL, what, path, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("asking %s for %s: decoding GET %s: %w", baseURL, what, path, err)
	}
	return nil
}

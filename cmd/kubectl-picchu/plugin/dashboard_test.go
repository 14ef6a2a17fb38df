package plugin_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/cmd/kubectl-picchu/plugin"
	"github.com/medium/picchu/test/kit"
)

func genericStreams(out, errOut io.Writer) genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
}

// restClient reaches the API server's own paths (/metrics).
func restClient(t *testing.T) rest.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(apiConfig)
	if err != nil {
		t.Fatal(err)
	}
	return cs.Discovery().RESTClient()
}

// lineWriter hands the first line written to it to a channel.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	first chan string
	sent  bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if line, _, ok := strings.Cut(w.buf.String(), "\n"); ok && !w.sent {
		w.sent = true
		w.first <- line
	}
	return len(p), nil
}

// startDashboard runs `kubectl picchu dashboard --port 0` in-process until
// the test ends, as the API server's administrator, and returns the URL it
// serves at, as it printed it.
func startDashboard(t *testing.T) string {
	t.Helper()
	return startDashboardAs(t, kubeconfig)
}

// browser is the dashboards' owner's browser: it keeps their cookies, so
// once it opened the URL a dashboard printed, the dashboard answers it.
var browser = func() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		panic(err)
	}
	return &http.Client{Jar: jar}
}()

// printedURL is the URL a dashboard prints: its address and secret.
var printedURL = regexp.MustCompile(`(http://127\.0\.0\.1:\d+/)\?token=[0-9a-f]{64}\b`)

// startDashboardAs runs the dashboard with the kubeconfig config and args,
// opens the URL it printed with browser, and returns its address.
func startDashboardAs(t *testing.T, config string, args ...string) string {
	t.Helper()
	base, printed := serveDashboard(t, config, args...)
	if resp, body := fetch(t, printed); resp.StatusCode != http.StatusOK || resp.Request.URL.String() != base {
		t.Fatalf("opening %s: %s at %s\n%s", printed, resp.Status, resp.Request.URL, body)
	}
	return base
}

// serveDashboard runs the dashboard with the kubeconfig config and args
// until the test ends, and returns its address and the URL it printed.
func serveDashboard(t *testing.T, config string, args ...string) (base, printed string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWriter{first: make(chan string, 1)}
	done := make(chan result, 1)
	go func() {
		var errOut strings.Builder
		cmd := plugin.NewRootCommandWithOptions(plugin.Options{
			IOStreams: genericStreams(out, &errOut),
			Now:       func() time.Time { return now },
		})
		cmd.SetArgs(append([]string{"--kubeconfig", config, "dashboard", "--port", "0"}, args...))
		err := cmd.ExecuteContext(ctx)
		done <- result{errOut: errOut.String(), err: err}
	}()
	t.Cleanup(func() {
		cancel()
		if r := <-done; r.err != nil {
			t.Errorf("kubectl picchu dashboard: %v\n%s", r.err, r.errOut)
		}
	})
	select {
	case line := <-out.first:
		m := printedURL.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("the dashboard printed %q, with no URL and secret", line)
		}
		return m[1], m[0]
	case r := <-done:
		t.Fatalf("kubectl picchu dashboard ended before serving: %v\n%s", r.err, r.errOut)
	case <-time.After(time.Minute):
		t.Fatal("kubectl picchu dashboard printed no URL within a minute")
	}
	return "", ""
}

// fetch GETs url with header (name, value pairs) and returns its status
// and body.
func fetch(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, req, header...)
}

// send sends req with header (name, value pairs) from browser and returns
// the status and body of the answer.
func send(t *testing.T, req *http.Request, header ...string) (*http.Response, string) {
	t.Helper()
	return sendFrom(t, browser, req, header...)
}

// sendFrom sends req with header from the client c.
func sendFrom(t *testing.T, c *http.Client, req *http.Request, header ...string) (*http.Response, string) {
	t.Helper()
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", req.URL, err)
	}
	return resp, string(body)
}

// follow opens the dashboard's event stream, as a page's script does, and
// returns a channel of its event names.
func follow(t *testing.T, url string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatalf("opening the event stream: %v", err)
	}
	if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Fatalf("the event stream is %q", got)
	}
	events := make(chan string, 16)
	go func() {
		defer resp.Body.Close()
		defer close(events)
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			if name, ok := strings.CutPrefix(lines.Text(), "event: "); ok {
				events <- name
			}
		}
	}()
	return events
}

// TestDashboard_ShowsEveryReleaseAndFollowsIt: the fleet page lists each
// app and target with the build releasing, its percent and its health, and
// filters and searches them; the app page shows each build's weight in each
// cluster; when a ReleaseManager's status changes, every open page is told
// at once, and the page it asks for again shows the change.
func TestDashboard_ShowsEveryReleaseAndFollowsIt(t *testing.T) {
	ns := newNamespace(t)
	createDemo(t, ns)
	url := startDashboard(t)

	resp, body := fetch(t, url)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %s\n%s", resp.Status, body)
	}
	if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") || strings.Contains(got, "unsafe") {
		t.Errorf("Content-Security-Policy %q", got)
	}
	for _, want := range []string{
		`<a href="/apps/` + ns + `/demo">demo</a>`,
		`<a href="/apps/` + ns + `/other">other</a>`,
		`<td>v2</td>`, `40%`, `90%`, "in 4m",
		`<script src="/static/dashboard.js" defer></script>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the fleet page does not show %q:\n%s", want, body)
		}
	}
	_, body = fetch(t, url+"?ns="+ns+"&q=oth")
	if !strings.Contains(body, "/apps/"+ns+"/other") || strings.Contains(body, "/apps/"+ns+"/demo") {
		t.Errorf("searching %q shows:\n%s", "oth", body)
	}

	_, body = fetch(t, url+"apps/"+ns+"/demo")
	for _, want := range []string{"Target production", "Target staging", "<th scope=\"col\">west</th>", "v2 at 40%",
		// Where v3 failed: the alert and the outlier verdict in west's column.
		"availability_canary (cluster west)", "firing: availability_canary",
		"outlier: 6.1 % errors (110 of 1800) against 0.9 % in the other clusters",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the app page does not show %q:\n%s", want, body)
		}
	}

	pages := []<-chan string{follow(t, url), follow(t, url)}
	rm := &picchuv1alpha1.ReleaseManager{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo-production"}, rm); err != nil {
		t.Fatal(err)
	}
	rm.Status.Releasing.Percent = 80
	if err := k8s.Status().Update(context.Background(), rm); err != nil {
		t.Fatal(err)
	}
	for i, events := range pages {
		select {
		case name := <-events:
			if name != "changed" {
				t.Errorf("page %d was sent %q", i, name)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("page %d was not told of the change within 30 s", i)
		}
	}
	kit.Eventually(t, 10*time.Second, "the fleet page shows demo at 80 %", func() error {
		if _, main := fetch(t, url, "X-Picchu-Fragment", "main"); !strings.Contains(main, "80%") || strings.Contains(main, "<html") {
			return fmt.Errorf("the page's main section:\n%s", main)
		}
		return nil
	})
}

// TestDashboard_ShowsWhatUsersWroteAsText: a failed reason that is HTML
// shows as text on both pages, never as markup.
func TestDashboard_ShowsWhatUsersWroteAsText(t *testing.T) {
	ns := newNamespace(t)
	const attack = `<img src=x onerror=alert(1)>`
	rev := revision(ns, "xss", "v1")
	rev.Spec.Failed = true
	rev.Annotations = map[string]string{picchuv1alpha1.AnnotationFailedReason: attack}
	create(t, rev)
	rm := manager(ns, "xss", "production")
	rm.Status.Revisions = []picchuv1alpha1.ReleaseManagerRevisionStatus{{Tag: "v1", State: state("failed", time.Minute)}}
	createWithStatus(t, rm)
	url := startDashboard(t)

	for _, path := range []string{"", "apps/" + ns + "/xss"} {
		_, body := fetch(t, url+path)
		if strings.Contains(body, "<img") || strings.Contains(body, "onerror=alert(1)>") {
			t.Errorf("/%s renders the reason as markup:\n%s", path, body)
		}
		if !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
			t.Errorf("/%s does not show the reason as text:\n%s", path, body)
		}
	}
}

// TestDashboard_AnswersOnlyForItself: a request for another host (a name
// rebound to 127.0.0.1) is refused, as are methods other than GET.
func TestDashboard_AnswersOnlyForItself(t *testing.T) {
	url := startDashboard(t)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "attacker.example:80"
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a request for host %s: %s, want 421", req.Host, resp.Status)
	}
	resp, err = browser.Post(url, "application/x-www-form-urlencoded", strings.NewReader("x=1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %s, want 405", resp.Status)
	}
	if resp, _ := fetch(t, url+"static/app.html"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /static/app.html: %s, want 404", resp.Status)
	}
}

// apiRequests reads the API server's own counts: requests by verb for
// Revisions and ReleaseManagers (apiserver_request_total), and the watches
// of each open now (apiserver_longrunning_requests).
func apiRequests(t *testing.T) map[string]float64 {
	t.Helper()
	raw, err := restClient(t).Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("parsing the API server's metrics: %v", err)
	}
	out := map[string]float64{}
	for _, name := range []string{"apiserver_request_total", "apiserver_longrunning_requests"} {
		f, ok := families[name]
		if !ok {
			t.Fatalf("the API server has no metric %s", name)
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["group"] != picchuv1alpha1.GroupVersion.Group || (labels["resource"] != "revisions" && labels["resource"] != "releasemanagers") {
				continue
			}
			value := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out[name+" "+labels["resource"]+" "+labels["verb"]] += value
		}
	}
	return out
}

// TestDashboard_TenPagesWatchOnce: ten open pages, each following the
// changes and asking for its page again, add no request for Revisions or
// ReleaseManagers to the API server: the dashboard's one watch of each
// serves them all.
func TestDashboard_TenPagesWatchOnce(t *testing.T) {
	ns := newNamespace(t)
	createDemo(t, ns)
	url := startDashboard(t)
	rm := &picchuv1alpha1.ReleaseManager{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo-production"}, rm); err != nil {
		t.Fatal(err)
	}
	// Its informers have listed and watch: every request from here on
	// would be the pages'.
	_, _ = fetch(t, url)
	before := apiRequests(t)
	watches := before["apiserver_longrunning_requests releasemanagers WATCH"]
	if watches < 1 {
		t.Fatalf("no watch of ReleaseManagers is open: %v", before)
	}

	var pages []<-chan string
	for range 10 {
		pages = append(pages, follow(t, url))
	}
	rm.Status.Releasing.Percent = 80
	if err := k8s.Status().Update(context.Background(), rm); err != nil {
		t.Fatal(err)
	}
	for i, events := range pages {
		select {
		case <-events:
		case <-time.After(30 * time.Second):
			t.Fatalf("page %d was not told of the change within 30 s", i)
		}
		for _, path := range []string{"", "apps/" + ns + "/demo"} {
			if resp, body := fetch(t, url+path, "X-Picchu-Fragment", "main"); resp.StatusCode != http.StatusOK {
				t.Fatalf("page %d: GET /%s: %s\n%s", i, path, resp.Status, body)
			}
		}
	}

	after := apiRequests(t)
	for key, n := range after {
		if strings.HasPrefix(key, "apiserver_request_total") && strings.HasSuffix(key, " PUT") {
			continue // the test's own status update
		}
		if n != before[key] {
			t.Errorf("%s: %s before ten pages, %s after", key, strconv.FormatFloat(before[key], 'f', -1, 64), strconv.FormatFloat(n, 'f', -1, 64))
		}
	}
}

// post sends form to url, with header (name, value pairs), and returns the
// status and body of the answer.
func post(t *testing.T, to string, form url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, to, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return send(t, req, header...)
}

// csrfOf is the token of the form on a page.
func csrfOf(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", body)
	}
	return m[1]
}

// pausedAt is the pause annotation of Revision name of ns, "" when none.
func pausedAt(t *testing.T, ns, name string) string {
	t.Helper()
	rev := &picchuv1alpha1.Revision{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rev); err != nil {
		t.Fatal(err)
	}
	return rev.Annotations[picchuv1alpha1.AnnotationPause]
}

// TestDashboard_PausesAfterItsConfirmation: a build's Pause leads to a
// confirmation naming the build and what happens; its form pauses the
// build with the plugin's own code (the pause annotation, who did it), and
// the page says what changed. A post without the page's token, or from
// another site, is refused and changes nothing.
func TestDashboard_PausesAfterItsConfirmation(t *testing.T) {
	ns := newNamespace(t)
	createDemo(t, ns)
	base := startDashboard(t)
	confirm := "/apps/" + ns + "/demo/pause?tag=v2"
	if _, body := fetch(t, base+"apps/"+ns+"/demo"); !strings.Contains(body, `href="`+strings.ReplaceAll(confirm, "&", "&amp;")+`"`) {
		t.Fatalf("the app page has no Pause for v2:\n%s", body)
	}
	_, body := fetch(t, base+strings.TrimPrefix(confirm, "/"))
	if !strings.Contains(body, "Build v2 keeps the traffic it has in every target") {
		t.Errorf("the confirmation does not say what happens:\n%s", body)
	}
	token := csrfOf(t, body)
	action := base + "apps/" + ns + "/demo/pause"

	for _, tc := range []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"no token", url.Values{"tag": {"v2"}}, nil},
		{"another token", url.Values{"tag": {"v2"}, "csrf": {strings.Repeat("0", 64)}}, nil},
		{"another site", url.Values{"tag": {"v2"}, "csrf": {token}}, []string{"Sec-Fetch-Site", "cross-site"}},
		{"another origin", url.Values{"tag": {"v2"}, "csrf": {token}}, []string{"Origin", "http://attacker.example"}},
	} {
		if resp, body := post(t, action, tc.form, tc.header...); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %s, want 403\n%s", tc.name, resp.Status, body)
		}
	}
	if at := pausedAt(t, ns, "demo-v2"); at != "" {
		t.Fatalf("a refused post paused v2 at %s", at)
	}

	resp, body := post(t, action, url.Values{"tag": {"v2"}, "csrf": {token}}, "Origin", strings.TrimSuffix(base, "/"), "Sec-Fetch-Site", "same-origin")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "revision.picchu.medium.engineering/demo-v2 paused") {
		t.Fatalf("pausing v2: %s\n%s", resp.Status, body)
	}
	if pausedAt(t, ns, "demo-v2") == "" {
		t.Error("v2 has no pause annotation")
	}
	rev := &picchuv1alpha1.Revision{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo-v2"}, rev); err != nil {
		t.Fatal(err)
	}
	if by := rev.Annotations[picchuv1alpha1.AnnotationControlBy]; by == "" || by == "unknown" {
		t.Errorf("the pause is recorded as made by %q", by)
	}
	// A second pause is refused by the plugin's own rule, and shown.
	if resp, body := post(t, action, url.Values{"tag": {"v2"}, "csrf": {token}}); resp.StatusCode != http.StatusConflict || !strings.Contains(body, "is already paused") {
		t.Errorf("pausing v2 again: %s\n%s", resp.Status, body)
	}
}

// TestDashboard_AViewerSeesActionsDisabledAndIsRefused: a user who may
// read the app's Revisions and ReleaseManagers in its namespace, and not
// patch them, sees that namespace only, every action disabled with the
// reason, and a post refused by the API server, shown.
func TestDashboard_AViewerSeesActionsDisabledAndIsRefused(t *testing.T) {
	ns := newNamespace(t)
	createDemo(t, ns)
	path := userKubeconfig(t, "viewer-"+ns)
	create(t, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{picchuv1alpha1.GroupVersion.Group},
			Resources: []string{"revisions", "releasemanagers"}, Verbs: []string{"get", "list", "watch"}}},
	})
	create(t, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "viewer-" + ns}},
	})
	base := startDashboardAs(t, path, "--namespace", ns)

	if _, body := fetch(t, base); !strings.Contains(body, "Namespace "+ns+" only") || !strings.Contains(body, "/apps/"+ns+"/demo") {
		t.Errorf("the viewer's fleet page:\n%s", body)
	}
	_, body := fetch(t, base+"apps/"+ns+"/demo")
	if !strings.Contains(body, "Actions are disabled: you may not patch revisions in namespace "+ns) ||
		!strings.Contains(body, `aria-disabled="true"`) || strings.Contains(body, "/demo/pause?") {
		t.Errorf("the viewer's app page does not disable the actions:\n%s", body)
	}
	_, body = fetch(t, base+"apps/"+ns+"/demo/pause?tag=v2")
	if !strings.Contains(body, "You may not do this: you may not patch revisions") || !strings.Contains(body, `<button type="submit" disabled`) {
		t.Errorf("the viewer's confirmation does not disable the action:\n%s", body)
	}
	// A page drawn before the user's rights were taken away still posts:
	// the API server refuses, and the dashboard shows its refusal.
	resp, body := post(t, base+"apps/"+ns+"/demo/pause", url.Values{"tag": {"v2"}, "csrf": {csrfOf(t, body)}})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "forbidden") {
		t.Errorf("the viewer's pause: %s\n%s", resp.Status, body)
	}
	if at := pausedAt(t, ns, "demo-v2"); at != "" {
		t.Errorf("the viewer paused v2 at %s", at)
	}
}

// userKubeconfig is the path of a kubeconfig of a new user, name, who has
// no rights but the ones the test grants.
func userKubeconfig(t *testing.T, name string) string {
	t.Helper()
	user, err := testEnv.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	config, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, config, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDashboard_AnswersItsOwnerAlone: another user of the machine, who can
// reach the port but never saw the printed URL, reads no page, no stream,
// no file, and cannot post an action even with a form's token; a wrong
// token is refused; the printed URL sets an HttpOnly, SameSite=Strict
// cookie of the dashboard's port and sends the browser on without its
// token.
func TestDashboard_AnswersItsOwnerAlone(t *testing.T) {
	ns := newNamespace(t)
	createDemo(t, ns)
	base, printed := serveDashboard(t, kubeconfig)
	stranger := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"", "events", "static/dashboard.js", "apps/" + ns + "/demo", "apps/" + ns + "/demo/pause?tag=v2",
		"?token=" + strings.Repeat("0", 64)} {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, body := sendFrom(t, stranger, req)
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "csrf") || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("a stranger's GET /%s: %s, cookie %q\n%s", path, resp.Status, resp.Header.Get("Set-Cookie"), body)
		}
	}

	// The owner's browser opens the printed URL, then a confirmation.
	_, port, _ := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(base, "/"), "http://"), ":")
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, printed, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := sendFrom(t, stranger, req)
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || len(cookies) != 1 {
		t.Fatalf("GET %s: %s to %q, cookies %v; want 303 to / with one cookie", printed, resp.Status, resp.Header.Get("Location"), cookies)
	}
	if c := cookies[0]; c.Name != "picchu-dashboard-"+port || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Errorf("the dashboard's cookie: %s", c)
	}
	if resp, body := fetch(t, printed); resp.StatusCode != http.StatusOK || resp.Request.URL.String() != base {
		t.Fatalf("the owner's browser at %s: %s at %s\n%s", printed, resp.Status, resp.Request.URL, body)
	}
	_, body := fetch(t, base+"apps/"+ns+"/demo/pause?tag=v2")
	form := url.Values{"tag": {"v2"}, "csrf": {csrfOf(t, body)}}

	// Even with the form's token, the stranger's post is refused.
	req, err = http.NewRequestWithContext(context.Background(), http.MethodPost, base+"apps/"+ns+"/demo/pause", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := sendFrom(t, stranger, req, "Content-Type", "application/x-www-form-urlencoded"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the stranger's pause: %s\n%s", resp.Status, body)
	}
	if at := pausedAt(t, ns, "demo-v2"); at != "" {
		t.Errorf("the stranger paused v2 at %s", at)
	}
}

// TestDashboard_RefusesPathsThatAreNotNames: a namespace or app in the
// path that is not a Kubernetes name, as "%2F.." makes one, is refused,
// so no confirmation links or posts to another namespace than it shows.
func TestDashboard_RefusesPathsThatAreNotNames(t *testing.T) {
	ns := newNamespace(t)
	createDemo(t, ns)
	base := startDashboard(t)
	for _, path := range []string{
		"apps/" + ns + "%2F..%2Fkube-system/demo/pause?tag=v2",
		"apps/" + ns + "/demo%2F..%2Fother/abort?tag=v2",
		"apps/..%2F" + ns + "/demo",
		"apps/" + ns + "/Demo/forecast",
	} {
		resp, body := fetch(t, base+path)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "is not a Kubernetes name") || strings.Contains(body, "csrf") {
			t.Errorf("GET /%s: %s\n%s", path, resp.Status, body)
		}
	}
	resp, body := post(t, base+"apps/"+ns+"%2F..%2Fother/demo/pause", url.Values{"tag": {"v2"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a post to another namespace's path: %s\n%s", resp.Status, body)
	}
}

// TestDashboard_SaysWhenTheUserMayReadNothing: a user who may list and
// watch Revisions and ReleaseManagers in no namespace gets an error that
// says so at once, not a dashboard that waits for lists the API server
// refuses.
func TestDashboard_SaysWhenTheUserMayReadNothing(t *testing.T) {
	ns := newNamespace(t)
	path := userKubeconfig(t, "nobody-"+ns)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut strings.Builder
	cmd := plugin.NewRootCommandWithOptions(plugin.Options{IOStreams: genericStreams(&out, &errOut)})
	cmd.SetArgs([]string{"--kubeconfig", path, "dashboard", "--port", "0", "--namespace", ns})
	err := cmd.ExecuteContext(ctx)
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "you may not list and watch revisions and releasemanagers in every namespace, nor in namespace \""+ns+"\"") {
		t.Errorf("the dashboard of a user who may read nothing: %v (context: %v)\n%s", err, ctx.Err(), out.String())
	}
	if strings.Contains(out.String(), "Serving") {
		t.Errorf("it served: %s", out.String())
	}
}

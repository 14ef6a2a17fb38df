package plugin

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// dashboardFiles are the dashboard's templates, style sheet and scripts,
// built into the binary: nothing is fetched from elsewhere at run time.
//
//go:embed dashboard
var dashboardFiles embed.FS

var dashboardTemplates = template.Must(template.ParseFS(dashboardFiles, "dashboard/*.html"))

// dashboardPolicy is the Content-Security-Policy of every answer: the
// dashboard's own script and style sheet, nothing inline, nothing from
// elsewhere, no frame around it.
const dashboardPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// eventSpacing is the least time between two messages to a page: a burst
// of changes (a fleet's step) is one refresh.
const eventSpacing = 250 * time.Millisecond

func (r *runner) newDashboardCommand() *cobra.Command {
	var address string
	var port int
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a web view of every release, with your own rights",
		Long: `Serve a web view of every release on this machine's loopback address.

The dashboard reads the delivery cluster with your kubeconfig, so Kubernetes
RBAC decides what you see: every namespace when you may list and watch
Revisions and ReleaseManagers in all of them, the kubeconfig's namespace
(or --namespace) otherwise. It watches each kind once, whatever the number
of pages open, and each page follows the changes as they arrive (server-sent
events). It answers only on a loopback address, and only to requests for
that address that carry its secret: the URL it prints holds it once, and
the browser that opens that URL keeps it in a cookie. Another user of the
machine, or a page of another site, cannot read the dashboard or act with
your rights.`,
		Example: `  # Serve the dashboard on http://127.0.0.1:3100/
  kubectl picchu dashboard

  # On another port
  kubectl picchu dashboard --port 8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ip := net.ParseIP(address)
			if ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("--address must be a loopback address (the dashboard has no login of its own), not %q", address)
			}
			if port < 0 || port > 65535 {
				return fmt.Errorf("--port must be between 0 and 65535, not %d", port)
			}
			return r.serveDashboard(cmd.Context(), net.JoinHostPort(address, strconv.Itoa(port)))
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "the loopback address to serve on")
	cmd.Flags().IntVar(&port, "port", 3100, "the port to serve on (0 picks a free one)")
	return cmd
}

// quietInformers gives controller-runtime's logger, which the dashboard's
// informers log through, a sink that prints errors only, once a process.
var quietInformers sync.Once

// serveDashboard serves the dashboard at addr until ctx ends.
func (r *runner) serveDashboard(ctx context.Context, addr string) error {
	quietInformers.Do(func() {
		ctrllog.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, "dashboard:", prefix, args) }, funcr.Options{Verbosity: 0}))
	})
	s, err := r.connect()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(s.config)
	if err != nil {
		return fmt.Errorf("building a client for %s: %w", s.config.Host, err)
	}
	namespace, err := readableNamespaces(ctx, cs, s.namespace)
	if err != nil {
		return err
	}
	st, err := newStore(ctx, s, cs, namespace, r.Now)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("serving the dashboard: %w", err)
	}
	d, err := newDashboard(st, r, s, cs, ln.Addr().String())
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + "/?token=" + d.secret
	fmt.Fprintf(r.Out, "Serving the dashboard at %s (interrupt to stop; the URL holds its secret: share it with no one)\n", url)
	if r.Serving != nil {
		r.Serving(url)
	}
	srv := &http.Server{
		Handler:           d.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the dashboard at %s: %w", url, err)
	}
	return nil
}

// dashboard answers the pages.
type dashboard struct {
	store *store
	now   func() time.Time
	// origin is the host:port the dashboard answers for; hosts are the
	// Host headers it answers: origin, and localhost at its port.
	origin string
	hosts  map[string]bool
	// secret is what every request must carry, in the cookie named
	// cookie (or, once, in the printed URL's token).
	secret, cookie string
	// csrf is the token of every form.
	csrf string
	// runner and session do the actions, with the user's kubeconfig.
	runner  *runner
	session *session
	rights  *rights
	// streams holds a place for each open event stream, at most
	// maxStreams; writeTimeout is how long a stream's write may wait for
	// a page that does not read.
	streams      chan struct{}
	writeTimeout time.Duration
}

// maxStreams is how many event streams (pages following the cluster) the
// dashboard keeps open at once: a person has a few tabs, not hundreds.
const maxStreams = 32

// streamWriteTimeout is how long a write to an event stream may take, and
// streamKeepalive how often a quiet stream is written to, so that a page
// that stopped reading lets its place go within a minute.
const (
	streamWriteTimeout = 10 * time.Second
	streamKeepalive    = 30 * time.Second
)

// newDashboard is the dashboard of st at origin, with a new secret and
// form token.
func newDashboard(st *store, r *runner, s *session, cs kubernetes.Interface, origin string) (*dashboard, error) {
	secret, err := newSecret("secret")
	if err != nil {
		return nil, err
	}
	csrf, err := newSecret("form token")
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(origin)
	return &dashboard{store: st, now: r.Now, origin: origin, hosts: hostsOf(origin), secret: secret,
		// Browsers keep cookies by host, not port: each dashboard has its own.
		cookie: "picchu-dashboard-" + port, csrf: csrf, runner: r, session: s,
		rights:  &rights{cs: cs, now: r.Now, answers: map[string]rightsAnswer{}},
		streams: make(chan struct{}, maxStreams), writeTimeout: streamWriteTimeout}, nil
}

// hostsOf are the Host headers a dashboard at origin answers.
func hostsOf(origin string) map[string]bool {
	_, port, _ := net.SplitHostPort(origin)
	return map[string]bool{origin: true, "localhost:" + port: true}
}

func (d *dashboard) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.fleet)
	mux.HandleFunc("GET /apps/{namespace}/{app}", d.app)
	mux.HandleFunc("GET /apps/{namespace}/{app}/forecast", d.forecast)
	mux.HandleFunc("GET /apps/{namespace}/{app}/{action}", d.confirm)
	mux.HandleFunc("POST /apps/{namespace}/{app}/{action}", d.act)
	mux.HandleFunc("GET /events", d.events)
	mux.HandleFunc("GET /static/{file}", d.static)
	return d.guard(mux)
}

// guard answers only requests addressed to the dashboard's own host and
// port, so that a page of another site that a name resolves to 127.0.0.1
// (DNS rebinding) cannot read it, and sets the security headers.
func (d *dashboard) guard(next http.Handler) http.Handler {
	// Every page is HTML, never cached; static files set their own type.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", dashboardPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: with no-referrer, a browser posts
		// the forms with Origin: null, which the CSRF check refuses.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		if !d.hosts[r.Host] {
			http.Error(w, fmt.Sprintf("this dashboard answers only at http://%s/, not for host %q", d.origin, r.Host), http.StatusMisdirectedRequest)
			return
		}
		if d.signedIn(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// signedIn says whether r carries the dashboard's secret in its cookie. A
// GET with the secret as its token (the printed URL) is answered with the
// cookie and sent on to the same address without the token, so the secret
// stays out of the browser's history and of Referer headers; anything else
// is answered 401, and signedIn is false.
func (d *dashboard) signedIn(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if r.Method == http.MethodGet && q.Has("token") {
		if !secretsEqual(q.Get("token"), d.secret) {
			http.Error(w, "this token is not the dashboard's: open the URL `kubectl picchu dashboard` printed", http.StatusUnauthorized)
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: d.cookie, Value: d.secret, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		to := *r.URL
		to.RawQuery = q.Encode()
		http.Redirect(w, r, to.RequestURI(), http.StatusSeeOther)
		return false
	}
	if c, err := r.Cookie(d.cookie); err == nil && secretsEqual(c.Value, d.secret) {
		return true
	}
	http.Error(w, "this dashboard answers only to the browser that opened the URL `kubectl picchu dashboard` printed", http.StatusUnauthorized)
	return false
}

// secretsEqual compares a secret in constant time.
func secretsEqual(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// names are the namespace and app a request's path names, checked as
// Kubernetes names: a segment such as "a%2F..%2Fb" would otherwise make a
// page link or post to another namespace. It answers 400 itself when ok
// is false.
func names(w http.ResponseWriter, r *http.Request) (namespace, app string, ok bool) {
	namespace, app = r.PathValue("namespace"), r.PathValue("app")
	for _, seg := range []struct{ what, value string }{{"namespace", namespace}, {"app", app}} {
		if errs := validation.IsDNS1123Label(seg.value); len(errs) > 0 {
			http.Error(w, fmt.Sprintf("the path's %s %q is not a Kubernetes name: %s", seg.what, seg.value, strings.Join(errs, "; ")), http.StatusBadRequest)
			return "", "", false
		}
	}
	return namespace, app, true
}

// page is what the layout renders.
type page struct {
	Title, Page string
	// Follow says the page follows the cluster's changes.
	Follow bool
	Data   any
}

func (d *dashboard) fleet(w http.ResponseWriter, r *http.Request) {
	revs, rms, err := d.store.snapshot(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	q := r.URL.Query()
	v := newFleetView(d.store, revs, rms, fleetQuery{namespace: q.Get("ns"), search: q.Get("q"), sort: q.Get("sort")}, d.now())
	d.render(w, r, http.StatusOK, page{Title: "Releases", Page: "fleet", Follow: true, Data: v})
}

// appOf reads the app the request's path names from the store; it answers
// the request itself (500 or 404) when it returns nil.
func (d *dashboard) appOf(w http.ResponseWriter, r *http.Request) (namespace string, a *app) {
	namespace, name, ok := names(w, r)
	if !ok {
		return "", nil
	}
	revs, rms, err := d.store.snapshot(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return "", nil
	}
	if a = gather(namespace, name, revs, rms); a == nil {
		http.Error(w, fmt.Sprintf("app %q has no Revision and no ReleaseManager in namespace %q that you may read", name, namespace), http.StatusNotFound)
	}
	return namespace, a
}

func (d *dashboard) app(w http.ResponseWriter, r *http.Request) {
	namespace, a := d.appOf(w, r)
	if a == nil {
		return
	}
	name := a.name
	events, err := d.store.eventsOf(r.Context(), namespace, a, maxEvents)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	src := appSources{clusterHistory: d.store.clusterHistory, events: events, noEvents: d.store.noEvents}
	d.render(w, r, http.StatusOK, page{Title: name, Page: "app", Follow: true,
		Data: newAppView(namespace, a, src, d.now(), d.rights.forbidden(r.Context(), namespace))})
}

// forecastView is the forecast page: what `kubectl picchu plan APP`
// prints for the app's newest build.
type forecastView struct {
	Namespace, App, Tag string
	// Plan is the forecast as the plugin prints it; Failed says why there
	// is none.
	Plan, Failed string
}

// forecast forecasts the app's newest build, as `kubectl picchu plan`
// does: from the dashboard's cache for the app, and the namespace's
// Clusters read from the API server when the page is asked for. The page
// does not follow the cluster: it is a forecast from now.
func (d *dashboard) forecast(w http.ResponseWriter, r *http.Request) {
	namespace, a := d.appOf(w, r)
	if a == nil {
		return
	}
	name := a.name
	if len(a.revisions) == 0 {
		http.Error(w, fmt.Sprintf("app %q has no Revision in namespace %q that you may read", name, namespace), http.StatusNotFound)
		return
	}
	rev := &a.revisions[len(a.revisions)-1]
	v := forecastView{Namespace: namespace, App: name, Tag: rev.Spec.App.Tag}
	s := *d.session
	s.namespace = namespace
	status := http.StatusOK
	var plan bytes.Buffer
	forecasts, err := s.forecast(r.Context(), d.runner, a, rev)
	if err == nil {
		err = writeForecasts(&plan, forecasts, "text")
	}
	if err != nil {
		v.Failed, status = err.Error(), http.StatusInternalServerError
	}
	v.Plan = plan.String()
	d.render(w, r, status, page{Title: name + " forecast", Page: "forecast", Data: v})
}

// render writes p with status, or only its main section when the page's script asks
// for it (X-Picchu-Fragment: main).
func (d *dashboard) render(w http.ResponseWriter, r *http.Request, status int, p page) {
	var buf bytes.Buffer
	var err error
	if r.Header.Get("X-Picchu-Fragment") == "main" {
		err = dashboardTemplates.ExecuteTemplate(&buf, p.Page, p.Data)
	} else {
		err = dashboardTemplates.ExecuteTemplate(&buf, "page", p)
	}
	if err != nil {
		http.Error(w, "rendering "+p.Page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// events sends the page a "changed" event whenever the store changes, at
// most one every eventSpacing, until the page goes, and a comment when
// nothing changed for streamKeepalive. At most maxStreams are open; a write
// that waits writeTimeout on a page that does not read ends the stream.
func (d *dashboard) events(w http.ResponseWriter, r *http.Request) {
	select {
	case d.streams <- struct{}{}:
		defer func() { <-d.streams }()
	default:
		http.Error(w, fmt.Sprintf("%d pages follow the dashboard already: close some", maxStreams), http.StatusServiceUnavailable)
		return
	}
	changes, unsubscribe := d.store.hub.subscribe()
	defer unsubscribe()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	rc := http.NewResponseController(w)
	send := func(msg string) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(d.writeTimeout)); err != nil {
			return false
		}
		if _, err := fmt.Fprint(w, msg); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 2000\n\n") {
		return
	}
	ctx := r.Context()
	keepalive := time.NewTicker(streamKeepalive)
	defer keepalive.Stop()
	for {
		msg := "event: changed\ndata: {}\n\n"
		select {
		case <-ctx.Done():
			return
		case <-changes:
		case <-keepalive.C:
			msg = ": still here\n\n"
		}
		if !send(msg) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(eventSpacing):
		}
	}
}

// staticFiles are the files /static/ serves, by name: the style sheet, the
// page's script and the library it uses (vendored by
// hack/vendor-dashboard.sh), with their types.
var staticFiles = map[string]struct{ path, kind string }{
	"dashboard.css":    {"dashboard/dashboard.css", "text/css; charset=utf-8"},
	"dashboard.js":     {"dashboard/dashboard.js", "text/javascript; charset=utf-8"},
	"idiomorph.min.js": {"dashboard/vendor/idiomorph.min.js", "text/javascript; charset=utf-8"},
}

// static serves the style sheet and the scripts.
func (d *dashboard) static(w http.ResponseWriter, r *http.Request) {
	f, ok := staticFiles[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	data, err := dashboardFiles.ReadFile(f.path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", f.kind)
	_, _ = w.Write(data)
}

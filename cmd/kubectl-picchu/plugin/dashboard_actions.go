package plugin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// dashboardAction is an action of the dashboard, done by the plugin's own
// code (control.go) with the user's own rights.
type dashboardAction struct {
	Title string
	// explains says what the action does to build tag.
	explains func(tag string) string
	// on says whether the action applies to a build in that state.
	on func(b build) bool
	do func(ctx context.Context, r *runner, s *session, a *app, tag, reason string) error
}

var dashboardActions = map[string]dashboardAction{
	"pause": {
		Title: "Pause",
		explains: func(tag string) string {
			return "Build " + tag + " keeps the traffic it has in every target: no step up is taken until it is resumed."
		},
		on: func(b build) bool { return live(b) && !b.paused() },
		do: func(ctx context.Context, r *runner, s *session, a *app, tag, _ string) error {
			return r.pause(ctx, s, a, tag)
		},
	},
	"resume": {
		Title:    "Resume",
		explains: func(tag string) string { return "The release of build " + tag + " goes on where it stopped." },
		on:       func(b build) bool { return b.paused() && !finished(b.state()) },
		do: func(ctx context.Context, r *runner, s *session, a *app, tag, _ string) error {
			return r.resume(ctx, s, a, tag)
		},
	},
	"promote": {
		Title: "Promote",
		explains: func(tag string) string {
			return "Build " + tag + " takes its next step now, without waiting out its delay."
		},
		on: live,
		do: func(ctx context.Context, r *runner, s *session, a *app, tag, _ string) error {
			return r.promote(ctx, s, a, tag, false)
		},
	},
	"promote-full": {
		Title:    "Promote fully",
		explains: func(tag string) string { return "Build " + tag + " ramps straight to its release.max now." },
		on:       live,
		do: func(ctx context.Context, r *runner, s *session, a *app, tag, _ string) error {
			return r.promote(ctx, s, a, tag, true)
		},
	},
	"abort": {
		Title: "Abort",
		explains: func(tag string) string {
			return "Build " + tag + " is failed: its traffic goes back to the previous release in every target, and it retires."
		},
		on: live,
		do: func(ctx context.Context, r *runner, s *session, a *app, tag, reason string) error {
			return r.abort(ctx, s, a, tag, reason)
		},
	},
	"retry": {
		Title: "Retry",
		explains: func(tag string) string {
			return "The failure of build " + tag + " is cleared: it is deployed, canaried and released again."
		},
		on: func(b build) bool { return b.revision != nil && b.revision.Spec.Failed },
		do: func(ctx context.Context, r *runner, s *session, a *app, tag, _ string) error {
			return r.retry(ctx, s, a, tag)
		},
	},
	"rollback": {
		Title: "Roll back to",
		explains: func(tag string) string {
			return "Build " + tag + " is released again at once in every target, and every build of the app created after it retires."
		},
		on: func(b build) bool { return b.revision != nil && !b.revision.Spec.Failed && b.state() != "" },
		do: func(ctx context.Context, r *runner, s *session, a *app, tag, _ string) error {
			return r.rollback(ctx, s, a, tag)
		},
	},
}

// actionOrder is the order of a build's actions on the app page.
var actionOrder = []string{"pause", "resume", "promote", "promote-full", "abort", "retry", "rollback"}

// live says b is a build that is not failed and not done with.
func live(b build) bool {
	return b.revision != nil && !b.revision.Spec.Failed && !finished(b.state())
}

// actionLink is an action of a build on the app page.
type actionLink struct {
	// Name is the action's name in its URL: pause, abort, ...
	Name, Title, Href string
	Allowed           bool
	// Why is why it is disabled.
	Why string
}

// actionsOf are the actions that apply to b; disabled, saying why, when
// the user may not patch Revisions.
func actionsOf(namespace, appName string, b build, forbidden string) []actionLink {
	var out []actionLink
	for _, name := range actionOrder {
		act := dashboardActions[name]
		if !act.on(b) {
			continue
		}
		href := "/apps/" + url.PathEscape(namespace) + "/" + url.PathEscape(appName) + "/" + name + "?tag=" + url.QueryEscape(b.tag)
		out = append(out, actionLink{Name: name, Title: act.Title, Href: href, Allowed: forbidden == "", Why: forbidden})
	}
	return out
}

// actionView is the confirmation of an action, or its outcome.
type actionView struct {
	Namespace, App, Action, Title, Tag, Explains, CSRF string
	// Done is what the action changed; Refused why the API server or the
	// plugin refused it; Forbidden why the user may not do it.
	Done, Refused, Forbidden string
}

// rights remembers, per namespace and for a minute, whether the user may
// patch Revisions there (a SelfSubjectAccessReview), so that pages do not
// ask the API server each time they are drawn.
type rights struct {
	cs  kubernetes.Interface
	now func() time.Time
	mu  sync.Mutex
	// answers are "" (allowed) or why not, by namespace.
	answers map[string]rightsAnswer
}

type rightsAnswer struct {
	why string
	at  time.Time
}

// rightsTTL is how long an answer of the API server is kept, and
// maxRightsAnswers how many are kept at most.
const (
	rightsTTL        = time.Minute
	maxRightsAnswers = 256
)

// forbidden is "" when the user may patch Revisions in namespace, or why not.
func (r *rights) forbidden(ctx context.Context, namespace string) string {
	r.mu.Lock()
	answer, ok := r.answers[namespace]
	r.mu.Unlock()
	if ok && r.now().Sub(answer.at) < rightsTTL {
		return answer.why
	}
	review, err := r.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Group: picchuv1alpha1.GroupVersion.Group, Resource: "revisions", Verb: "patch",
		}},
	}, metav1.CreateOptions{})
	why := ""
	switch {
	case err != nil:
		// Not kept: asked again at the next page.
		return fmt.Sprintf("the API server did not say whether you may patch revisions in %s: %v", namespace, err)
	case !review.Status.Allowed:
		why = "you may not patch revisions in namespace " + namespace
		if review.Status.Reason != "" {
			why += ": " + review.Status.Reason
		}
	}
	r.keep(namespace, rightsAnswer{why: why, at: r.now()})
	return why
}

// keep keeps answer for namespace, dropping the answers that expired and,
// past maxRightsAnswers, the oldest.
func (r *rights) keep(namespace string, answer rightsAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[namespace] = answer
	if len(r.answers) <= maxRightsAnswers {
		return
	}
	now := r.now()
	for ns, a := range r.answers {
		if now.Sub(a.at) >= rightsTTL {
			delete(r.answers, ns)
		}
	}
	for len(r.answers) > maxRightsAnswers {
		oldest := ""
		for ns, a := range r.answers {
			if oldest == "" || a.at.Before(r.answers[oldest].at) {
				oldest = ns
			}
		}
		delete(r.answers, oldest)
	}
}

// newSecret is 32 random bytes in hex: the dashboard's secret, and the
// token every form of the dashboard carries (a page of another origin
// cannot read it, so it cannot post an action).
func newSecret(what string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making the dashboard's %s: %w", what, err)
	}
	return hex.EncodeToString(b), nil
}

// confirm shows what an action will do, with the form that does it.
func (d *dashboard) confirm(w http.ResponseWriter, r *http.Request) {
	v, act, ok := d.actionView(w, r)
	if !ok {
		return
	}
	v.Tag = r.URL.Query().Get("tag")
	v.Explains = act.explains(v.Tag)
	v.Forbidden = d.rights.forbidden(r.Context(), v.Namespace)
	d.render(w, r, http.StatusOK, page{Title: v.Title, Page: "action", Data: v})
}

// act does an action the confirmation posted, with the plugin's code and
// the user's rights, and shows what it changed or why it was refused.
func (d *dashboard) act(w http.ResponseWriter, r *http.Request) {
	v, act, ok := d.actionView(w, r)
	if !ok {
		return
	}
	if why := d.crossSite(r); why != "" {
		http.Error(w, "refused: "+why, http.StatusForbidden)
		return
	}
	v.Tag = r.PostFormValue("tag")
	out := &bytes.Buffer{}
	runner := *d.runner
	runner.Out, runner.ErrOut = out, out
	s := *d.session
	s.namespace = v.Namespace
	status := http.StatusOK
	a, err := s.loadApp(r.Context(), v.App)
	if err == nil {
		err = act.do(r.Context(), &runner, &s, a, v.Tag, r.PostFormValue("reason"))
	}
	if err != nil {
		v.Refused = err.Error()
		status = http.StatusConflict
		switch {
		case apierrors.IsForbidden(err):
			status = http.StatusForbidden
		case apierrors.IsNotFound(err):
			status = http.StatusNotFound
		}
	} else {
		v.Done = strings.TrimSpace(out.String())
	}
	d.render(w, r, status, page{Title: v.Title, Page: "action", Data: v})
}

// actionView reads the action, namespace and app of a request; it answers
// 404 itself for an action it does not know.
func (d *dashboard) actionView(w http.ResponseWriter, r *http.Request) (actionView, dashboardAction, bool) {
	name := r.PathValue("action")
	act, ok := dashboardActions[name]
	if !ok {
		http.Error(w, fmt.Sprintf("no action %q", name), http.StatusNotFound)
		return actionView{}, act, false
	}
	namespace, app, ok := names(w, r)
	if !ok {
		return actionView{}, act, false
	}
	return actionView{Namespace: namespace, App: app, Action: name, Title: act.Title, CSRF: d.csrf}, act, true
}

// crossOrigin refuses a browser's posts from another origin.
var crossOrigin = http.NewCrossOriginProtection()

// crossSite is why a posted action may have come from another site, or "".
func (d *dashboard) crossSite(r *http.Request) string {
	// The standard library's check: Sec-Fetch-Site, or else Origin
	// against Host (which guard has checked is the dashboard's own).
	if err := crossOrigin.Check(r); err != nil {
		return "the request came from another site: " + err.Error()
	}
	if err := r.ParseForm(); err != nil {
		return "unreadable form: " + err.Error()
	}
	if !secretsEqual(r.PostFormValue("csrf"), d.csrf) {
		return "the form's token is not this dashboard's: open the action from the dashboard's page"
	}
	return ""
}

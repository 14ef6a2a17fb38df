package dashboard_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// release applies build tag of app, ramping 10, 20, 40, 80, 100 % every
// delay, and returns it.
func release(t *testing.T, app, tag string, commit int, delay time.Duration) *picchuv1alpha1.Revision {
	t.Helper()
	rev := env.Apps().Revision(app, tag, kit.Commit(commit), kit.Geometric(10, 2, delay))
	if err := env.Delivery.Client.Create(context.Background(), rev); err != nil {
		t.Fatalf("creating %s: %v", rev.Name, err)
	}
	return rev
}

// appLink is the selector of the link to app's page.
func appLink(app string) chromedp.CSS {
	return chromedp.CSS(fmt.Sprintf(`a[href="/apps/%s/%s"]`, env.Namespace, app))
}

// target is the selector of the production target's section of the app page.
const target = chromedp.CSS(`section[aria-labelledby="target-production"]`)

// routes are the weights of app's builds (by subset) that each target's
// VirtualService routes, by target.
func routes(ctx context.Context, app string) (map[string]map[string]int32, error) {
	out := map[string]map[string]int32{}
	for _, tg := range env.Targets {
		vs := &istionetworking.VirtualService{}
		if err := tg.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: app}, vs); err != nil {
			return nil, fmt.Errorf("reading %s's VirtualService on %s: %w", app, tg.Name, err)
		}
		weights := map[string]int32{}
		for _, route := range vs.Spec.Http {
			if route.Name != "01_release-http" {
				continue
			}
			for _, d := range route.Route {
				weights[d.Destination.Subset] = d.Weight
			}
		}
		out[tg.Name] = weights
	}
	return out, nil
}

// buildOf is app's build tag as its ReleaseManager records it.
func buildOf(ctx context.Context, app, tag string) (picchuv1alpha1.ReleaseManagerRevisionStatus, error) {
	rm, err := env.Apps().ReleaseManager(ctx, app)
	if err != nil {
		return picchuv1alpha1.ReleaseManagerRevisionStatus{}, err
	}
	st, ok := kit.BuildStatus(rm, tag)
	if !ok {
		return st, fmt.Errorf("%s not recorded", tag)
	}
	return st, nil
}

// holds checks, every 250 ms for d, that check passes.
func holds(t *testing.T, d time.Duration, what string, check func() error) {
	t.Helper()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// TestBrowser_FollowsAReleaseAndPausesIt: the fleet page shows the app;
// its page, open while v2 ramps, shows v2's weight change in each cluster
// with no reload; Pause, clicked and confirmed, pauses v2: the page says
// so, and the weights hold on both clusters for three of its steps.
func TestBrowser_FollowsAReleaseAndPausesIt(t *testing.T) {
	t.Parallel()
	const app = "followed"
	const delay = 5 * time.Second
	release(t, app, "v1", 1, time.Second)
	env.Apps().WaitState(t, time.Minute, app, "v1", "released")
	base, printed := startDashboard(t, adminConfig)
	b := newBrowser(t)
	b.open(base, printed)

	b.do("opening the fleet page", chromedp.Navigate(base), chromedp.WaitVisible(appLink(app)))
	if text := b.text(); !strings.Contains(text, app) || !strings.Contains(text, "v1") {
		t.Errorf("the fleet page does not show %s's v1:\n%s", app, text)
	}
	b.screenshot("fleet")

	b.do("opening the app page", chromedp.Click(appLink(app)), chromedp.WaitVisible(target))
	if _, err := eval[bool](b, `window.picchuNotReloaded = true`); err != nil {
		t.Fatal(err)
	}
	release(t, app, "v2", 2, delay)
	// A keyboard user moves to v2's Pause as soon as the page shows it; the
	// focus, on that very node, must survive the live refreshes below.
	until(b, time.Minute, "focusing v2's Pause", `(() => {
		const a = document.querySelector('tr[data-build="v2"] a.action[href*="/pause?"]');
		if (!a) return false;
		a.focus();
		a.picchuFocused = true; // a property of the node, not an attribute the refresh would remove
		return document.activeElement === a;
	})()`, func(focused bool) error {
		if !focused {
			return fmt.Errorf("no Pause for v2 on the page yet")
		}
		return nil
	})
	seen := map[string]map[string]bool{}
	until(b, 2*time.Minute, "v2's weight changing in each cluster", cells("production", "v2"), func(m map[string]string) error {
		for cluster, p := range m {
			if p != "-" && p != "" {
				if seen[cluster] == nil {
					seen[cluster] = map[string]bool{}
				}
				seen[cluster][p] = true
			}
		}
		for _, tg := range env.Targets {
			if len(seen[tg.Name]) < 2 {
				return fmt.Errorf("the page showed these weights of v2: %v", seen)
			}
		}
		return nil
	})
	if kept, err := eval[bool](b, `window.picchuNotReloaded === true`); err != nil || !kept {
		t.Errorf("the app page was reloaded to show the new weights (%v)", err)
	}
	b.screenshot("app")
	focus, err := eval[string](b, `(() => {
		const a = document.activeElement;
		return a && a.picchuFocused === true ? a.closest("tr").dataset.build + " " + a.textContent : String(a && a.outerHTML);
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	if focus != "v2 Pause" {
		t.Fatalf("the keyboard's focus did not stay on v2's Pause while the page followed the release; it is on %s", focus)
	}

	b.do("asking to pause v2, from the keyboard", chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`form button[type="submit"]`)))
	if text := b.text(); !strings.Contains(text, "v2") {
		t.Errorf("the confirmation does not name v2:\n%s", text)
	}
	b.screenshot("confirm")
	b.do("confirming the pause", chromedp.Click(chromedp.CSS(`form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS(`p.done`)))
	if text := b.text(); !strings.Contains(text, "paused") {
		t.Errorf("the outcome does not say v2 is paused:\n%s", text)
	}

	ctx := context.Background()
	var paused picchuv1alpha1.ReleaseManagerRevisionStatus
	kit.Eventually(t, 30*time.Second, "v2 paused", func() error {
		var err error
		if paused, err = buildOf(ctx, app, "v2"); err != nil {
			return err
		}
		if paused.Paused == nil {
			return fmt.Errorf("not paused, at %d%%", paused.CurrentPercent)
		}
		return nil
	})
	if paused.CurrentPercent == 100 {
		t.Fatalf("v2 was released before it was paused: make the steps longer")
	}
	held, err := routes(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	b.do("going back to the app page", chromedp.Click(appLink(app)), chromedp.WaitVisible(target))
	until(b, 30*time.Second, "the page says v2 is paused", `document.querySelector('tr[data-build="v2"] td.state').textContent`,
		func(s string) error {
			if !strings.Contains(s, "(paused)") {
				return fmt.Errorf("v2's state: %q", s)
			}
			return nil
		})
	b.screenshot("paused")
	holds(t, 3*delay, "v2's weights hold while it is paused", func() error {
		st, err := buildOf(ctx, app, "v2")
		if err != nil {
			return err
		}
		if st.CurrentPercent != paused.CurrentPercent {
			return fmt.Errorf("v2 went from %d%% to %d%% while paused", paused.CurrentPercent, st.CurrentPercent)
		}
		now, err := routes(ctx, app)
		if err != nil {
			return err
		}
		for _, tg := range env.Targets {
			if !maps.Equal(now[tg.Name], held[tg.Name]) {
				return fmt.Errorf("%s routes %v, and routed %v when v2 was paused", tg.Name, now[tg.Name], held[tg.Name])
			}
		}
		return nil
	})
	for _, tg := range env.Targets {
		if held[tg.Name]["v2"] == 0 || held[tg.Name]["v2"] == 100 {
			t.Errorf("%s routed %v when v2 was paused: not mid-ramp", tg.Name, held[tg.Name])
		}
	}

	// The forecast, as kubectl picchu plan prints it: every cluster's steps.
	b.do("opening the forecast", chromedp.Click(chromedp.CSS(`a[href$="/forecast"]`)), chromedp.WaitVisible(chromedp.CSS(`pre.plan`)))
	plan, err := eval[string](b, `document.querySelector("pre.plan").textContent`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append([]string{"v2", "paused"}, env.Targets[0].Name, env.Targets[1].Name) {
		if !strings.Contains(plan, want) {
			t.Errorf("the forecast does not mention %q:\n%s", want, plan)
		}
	}
	b.screenshot("forecast")
	b.noDialogs()
}

// TestBrowser_AViewerSeesActionsDisabled: a user who may read Revisions
// and ReleaseManagers in the namespace, and not patch them, sees every
// action disabled, with the reason, and a confirmation whose button is
// disabled.
func TestBrowser_AViewerSeesActionsDisabled(t *testing.T) {
	t.Parallel()
	const app = "viewed"
	release(t, app, "v1", 1, time.Second)
	env.Apps().WaitState(t, time.Minute, app, "v1", "released")
	viewer, err := kubeconfigOf(t.TempDir(), envtest.User{Name: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, obj := range []client.Object{
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "viewer"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{picchuv1alpha1.GroupVersion.Group},
				Resources: []string{"revisions", "releasemanagers"}, Verbs: []string{"get", "list", "watch"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "viewer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "viewer"}},
		},
	} {
		if err := env.Delivery.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	base, printed := startDashboard(t, viewer, "--namespace", env.Namespace)
	b := newBrowser(t)
	b.open(base, printed)
	b.do("opening the app page", chromedp.Navigate(base+"apps/"+env.Namespace+"/"+app), chromedp.WaitVisible(target))
	why := "you may not patch revisions in namespace " + env.Namespace
	if text := b.text(); !strings.Contains(text, "Actions are disabled: "+why) {
		t.Errorf("the page does not say why the actions are disabled:\n%s", text)
	}
	type actions struct {
		Links    int      `json:"links"`
		Disabled []string `json:"disabled"`
	}
	got, err := eval[actions](b, `({links: document.querySelectorAll("a.action").length,
		disabled: Array.from(document.querySelectorAll('.action.disabled[aria-disabled="true"]')).map(e => e.textContent + ": " + e.title)})`)
	if err != nil {
		t.Fatal(err)
	}
	if got.Links != 0 || len(got.Disabled) == 0 || slices.ContainsFunc(got.Disabled, func(s string) bool { return !strings.Contains(s, why) }) {
		t.Errorf("the viewer's actions: %d links, disabled %q", got.Links, got.Disabled)
	}
	b.screenshot("viewer")

	b.do("opening a confirmation", chromedp.Navigate(base+"apps/"+env.Namespace+"/"+app+"/rollback?tag=v1"),
		chromedp.WaitVisible(chromedp.CSS(`form button[type="submit"]`)))
	if disabled, err := eval[bool](b, `document.querySelector('form button[type="submit"]').disabled`); err != nil || !disabled {
		t.Errorf("the viewer's confirmation button is not disabled (%v):\n%s", err, b.text())
	}
	b.noDialogs()
}

// TestBrowser_AHostileReasonIsText: v2 aborted from the dashboard with the
// reason <img src=x onerror=alert(1)> shows that text on the app page and
// in the fleet page's badge, and runs nothing: no image, no dialog.
func TestBrowser_AHostileReasonIsText(t *testing.T) {
	t.Parallel()
	const app = "hostile"
	const reason = `<img src=x onerror=alert(1)>`
	release(t, app, "v1", 1, time.Second)
	env.Apps().WaitState(t, time.Minute, app, "v1", "released")
	release(t, app, "v2", 2, time.Minute)
	env.Apps().WaitState(t, time.Minute, app, "v2", "releasing")
	base, printed := startDashboard(t, adminConfig)
	b := newBrowser(t)
	b.open(base, printed)

	b.do("opening the app page", chromedp.Navigate(base+"apps/"+env.Namespace+"/"+app), chromedp.WaitVisible(target))
	b.do("aborting v2 with a hostile reason",
		chromedp.Click(chromedp.CSS(`tr[data-build="v2"] a.action[href*="/abort?"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#reason`)),
		chromedp.SendKeys(chromedp.CSS(`#reason`), reason),
		chromedp.Click(chromedp.CSS(`form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.done`)))
	b.do("going back to the app page", chromedp.Click(appLink(app)), chromedp.WaitVisible(target))
	until(b, 30*time.Second, "v2's failed reason on the app page", `document.querySelector('tr[data-build="v2"]').innerText`,
		func(s string) error {
			if !strings.Contains(s, reason) {
				return fmt.Errorf("v2's row: %q", s)
			}
			return nil
		})
	if n, err := eval[int](b, `document.querySelectorAll("main img").length`); err != nil || n != 0 {
		t.Errorf("the app page has %d images (%v)", n, err)
	}
	b.screenshot("hostile")

	b.do("opening the fleet page", chromedp.Navigate(base+"?q="+app), chromedp.WaitVisible(appLink(app)))
	until(b, 30*time.Second, "the fleet page's badge", `document.querySelector("span.badge").title`, func(s string) error {
		if !strings.Contains(s, "v2 failed: ") || !strings.Contains(s, reason) {
			return fmt.Errorf("the badge says %q", s)
		}
		return nil
	})
	if n, err := eval[int](b, `document.querySelectorAll("main img").length`); err != nil || n != 0 {
		t.Errorf("the fleet page has %d images (%v)", n, err)
	}
	b.noDialogs()
}

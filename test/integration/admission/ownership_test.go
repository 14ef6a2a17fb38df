package admission_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// appRevisionJSON is a valid Revision spec of app in target.
func appRevisionJSON(app, target string) string {
	return `{"app": {"name": "` + app + `", "tag": "v1", "image": "registry.example/` + app + `:v1"},
		"targets": [{"name": "` + target + `", "fleet": "production"}]}`
}

// TestRevisionWebhook_LabelsTheApp checks that a Revision applied without
// the app label and its fleet's carries them from its creation, so that
// nothing, not even a Revision controller that lags, sees it without its
// app, and the controller has no labels to write; a label of a fleet the
// Revision no longer targets goes with the update that moves it.
func TestRevisionWebhook_LabelsTheApp(t *testing.T) {
	ctx := context.Background()
	u := object(t, "Revision", appRevisionJSON("labelled", "production"))
	u.SetLabels(map[string]string{"team": "web"})
	if err := hookedClient.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	rev := &picchuv1alpha1.Revision{}
	if err := hookedClient.Get(ctx, client.ObjectKeyFromObject(u), rev); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"team": "web", picchuv1alpha1.LabelApp: "labelled", picchuv1alpha1.LabelFleetPrefix + "production": ""}
	if !maps.Equal(rev.Labels, want) {
		t.Errorf("labels %v, want %v: the user's, the app's and the fleet's", rev.Labels, want)
	}
	if kept := rev.KeptLabels(); !maps.Equal(kept, rev.Labels) {
		t.Errorf("the Revision controller would write labels %v over %v", kept, rev.Labels)
	}
	rev.Spec.Targets[0].Fleet = "staging"
	if err := hookedClient.Update(ctx, rev); err != nil {
		t.Fatal(err)
	}
	delete(want, picchuv1alpha1.LabelFleetPrefix+"production")
	want[picchuv1alpha1.LabelFleetPrefix+"staging"] = ""
	if !maps.Equal(rev.Labels, want) {
		t.Errorf("labels after moving to fleet staging %v, want %v", rev.Labels, want)
	}
}

// TestRevisionWebhook_RejectsAnotherAppsName checks that app "a" in target
// "b-c" is rejected once app "a-b" in target "c" exists: both would be
// ReleaseManager "a-b-c" and namespace "a-b-c" on every cluster. Builds of
// the same app are accepted.
func TestRevisionWebhook_RejectsAnotherAppsName(t *testing.T) {
	ctx := context.Background()
	if err := hookedClient.Create(ctx, object(t, "Revision", appRevisionJSON("shop-eu", "web"))); err != nil {
		t.Fatal(err)
	}
	if err := hookedClient.Create(ctx, object(t, "Revision", appRevisionJSON("shop-eu", "web"))); err != nil {
		t.Errorf("another build of the same app was rejected: %v", err)
	}
	err := hookedClient.Create(ctx, object(t, "Revision", appRevisionJSON("shop", "eu-web")))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.targets[0].name") ||
		!strings.Contains(err.Error(), `"shop-eu-web"`) || !strings.Contains(err.Error(), `app "shop-eu"`) {
		t.Errorf("got %v, want an invalid error naming spec.targets[0].name, the shared name and the other app", err)
	}
}

// TestRevision_FoundByAppOnTheAPIServer checks that the API server selects
// Revisions by spec.app.name (the CRD's selectable field), so that Picchu
// finds a Revision by the app it is, whatever its labels.
func TestRevision_FoundByAppOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	u := object(t, "Revision", appRevisionJSON("unlabelled", "production"))
	if err := bare.Delivery.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	revs := &picchuv1alpha1.RevisionList{}
	if err := bare.Delivery.Client.List(ctx, revs, client.InNamespace("picchu"),
		client.MatchingFields{picchuv1alpha1.RevisionAppField: "unlabelled"}); err != nil {
		t.Fatalf("listing by %s: %v", picchuv1alpha1.RevisionAppField, err)
	}
	if len(revs.Items) != 1 || revs.Items[0].Name != u.GetName() || revs.Items[0].Labels[picchuv1alpha1.LabelApp] != "" {
		t.Errorf("found %d revisions, want only the unlabelled %s", len(revs.Items), u.GetName())
	}
}

// TestRevisionWebhook_RejectsProtectedNamespaces checks that an app whose
// "<app>-<target>" is a namespace Picchu never owns is refused, naming the
// target's name and the namespace: Kubernetes' own (kube-*), default,
// Istio's, the add-ons' (flux-system), and those --protected-namespaces
// adds ("cert-*" here).
func TestRevisionWebhook_RejectsProtectedNamespaces(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ app, target, ns string }{
		{"istio", "system", "istio-system"},
		{"kube", "system", "kube-system"},
		{"kube", "node-lease", "kube-node-lease"},
		{"cert", "manager", "cert-manager"},
		{"flux", "system", "flux-system"},
		{"ingress", "nginx", "ingress-nginx"},
	} {
		err := hookedClient.Create(ctx, object(t, "Revision", appRevisionJSON(tc.app, tc.target)))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.targets[0].name") || !strings.Contains(err.Error(), `"`+tc.ns+`"`) ||
			!strings.Contains(err.Error(), "protected") {
			t.Errorf("%s in %s: got %v, want an invalid error naming spec.targets[0].name and the protected namespace %s", tc.app, tc.target, err, tc.ns)
		}
	}
	if err := hookedClient.Create(ctx, object(t, "Revision", appRevisionJSON("istio", "canary"))); err != nil {
		t.Errorf("app istio in target canary (namespace istio-canary) was refused: %v", err)
	}
}

// policedNamespace is a delivery namespace whose apps the webhooks'
// --app-namespace-policy keeps to namespaces named after it.
const policedNamespace = "team-a"

// TestRevisionWebhook_RefusesANamespaceOutsideThePolicy: with
// team-a={namespace}-*, a Revision of delivery namespace team-a whose app
// would live in web-production is refused, naming spec.targets[0].name,
// the namespace and what the policy allows; team-a-web is admitted there,
// and web in another delivery namespace, which the policy leaves free.
func TestRevisionWebhook_RefusesANamespaceOutsideThePolicy(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policedNamespace}}
	if err := hookedClient.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	outside := object(t, "Revision", appRevisionJSON("web", "production"))
	outside.SetNamespace(policedNamespace)
	err := hookedClient.Create(ctx, outside)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.targets[0].name") || !strings.Contains(err.Error(), `"web-production"`) ||
		!strings.Contains(err.Error(), "team-a-*") {
		t.Errorf("web in team-a: %v, want an invalid error naming spec.targets[0].name, web-production and team-a-*", err)
	}
	inside := object(t, "Revision", appRevisionJSON("team-a-web", "production"))
	inside.SetNamespace(policedNamespace)
	if err := hookedClient.Create(ctx, inside); err != nil {
		t.Errorf("team-a-web in team-a was refused: %v", err)
	}
	if err := hookedClient.Create(ctx, object(t, "Revision", appRevisionJSON("web", "production"))); err != nil {
		t.Errorf("web in picchu, which the policy leaves free, was refused: %v", err)
	}
}

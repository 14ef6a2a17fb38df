package v1alpha1

import (
	"fmt"
	"regexp"
	"strings"
	"text/template"
)

// DefaultDevRouteTagTemplate is the dev-route header of a Cluster whose
// devRouteTagTemplate is empty.
const DefaultDevRouteTagTemplate = "x-dev-{{.App}}"

// headerName is what an HTTP header name may be (an RFC 9110 token), in
// lower case.
var headerName = regexp.MustCompile("^[a-z0-9!#$%&'*+.^_`|~-]+$")

// DevRouteHeader renders the Cluster's devRouteTagTemplate, a Go template
// given .App, .Target, .Fleet and .Namespace, into the lower-case name of
// the header that sends a request of app in target to the dev route.
func (c *Cluster) DevRouteHeader(app, target, fleet string) (string, error) {
	tmpl := c.Spec.DevRouteTagTemplate
	if tmpl == "" {
		tmpl = DefaultDevRouteTagTemplate
	}
	t, err := template.New("devRouteTagTemplate").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("spec.devRouteTagTemplate %q: %w", tmpl, err)
	}
	var b strings.Builder
	data := map[string]string{"App": app, "Target": target, "Fleet": fleet, "Namespace": AppNamespace(app, target)}
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("spec.devRouteTagTemplate %q: %w", tmpl, err)
	}
	name := strings.ToLower(strings.TrimSpace(b.String()))
	if !headerName.MatchString(name) {
		return "", fmt.Errorf("spec.devRouteTagTemplate %q renders %q, not an HTTP header name", tmpl, name)
	}
	return name, nil
}

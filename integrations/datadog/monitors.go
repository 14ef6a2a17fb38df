package datadog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	dd "github.com/DataDog/datadog-api-client-go/v2/api/datadog"
	"github.com/DataDog/datadog-api-client-go/v2/api/datadogV1"

	"github.com/medium/picchu/integrations/scope"
)

// ErrNoData is returned (wrapped) when a monitor group of the asked build
// reports No Data: Datadog cannot tell whether the build is healthy, so the
// caller holds the release.
var ErrNoData = errors.New("datadog: monitor reports no data")

const (
	// pageSize is the number of monitors asked per page.
	pageSize = 100
	// maxPages bounds the pages read for one query (5000 monitors).
	maxPages = 50
)

// Monitor group statuses, as Datadog spells them.
const (
	statusAlert  = string(datadogV1.MONITOROVERALLSTATES_ALERT)
	statusNoData = string(datadogV1.MONITOROVERALLSTATES_NO_DATA)
)

// monitor is what the cache keeps of a listed monitor.
type monitor struct {
	name string
	// namespaces are the values of its namespace: tags.
	namespaces []string
	groups     []group
}

// of reports whether the monitor may judge app: it is tagged with app's
// namespace, or with no namespace at all (as monitors made before
// namespaces counted are). A monitor tagged with other namespaces alone is
// another team's.
func (m monitor) of(app scope.App) bool {
	return len(m.namespaces) == 0 || slices.ContainsFunc(m.namespaces, func(ns string) bool { return strings.EqualFold(ns, app.Namespace) })
}

// namespacesOf returns the values of the namespace: tags among tags.
func namespacesOf(tags []string) []string {
	var out []string
	for _, t := range tags {
		if k, v, ok := strings.Cut(t, ":"); ok && strings.EqualFold(k, scope.LabelNamespace) {
			out = append(out, v)
		}
	}
	return out
}

// group is what the cache keeps of a monitor group.
type group struct {
	name   string
	tags   []string // the group name split on ","
	status string
}

// FiringAlerts returns the sorted names of the monitors of app that alert for
// the build tag: its SLO monitors (tagged app:<app> and slo:true), or with
// canaryOnly its canary monitors (tagged app:<app> and canary:true). Of
// those, a monitor tagged namespace:<another namespace> (and not the app's)
// is another team's and does not count: the namespace tag keeps apart the
// same-named apps of teams sharing a Datadog account. A monitor
// alerts for the build when a group whose name holds <TagKey>:<tag> (among
// its comma-separated tags, ignoring case) has the status Alert; OK, Warn,
// Ignored, Skipped and Unknown do not alert. A monitor without a group for the
// build, or without groups, does not count: an ungrouped monitor cannot be
// attributed to one build.
//
// The result is empty, not nil, when no monitor alerts. Monitors that alert
// are returned even when another cannot tell; when none alerts, the error
// wraps ErrNoData, naming the monitor, if such a group reports No Data; it wraps
// the API error (with the HTTP status, or context.DeadlineExceeded when a
// request outlives Config.Timeout) when Datadog cannot be asked. It is also an
// error when such a group has a status this package does not know, or when
// app or tag is empty or holds a comma. The monitors of app are listed once
// for all its tags and cached for Config.TTL.
func (c *Client) FiringAlerts(ctx context.Context, app scope.App, tag string, canaryOnly bool) ([]string, error) {
	if err := checkNames(app, tag); err != nil {
		return nil, err
	}
	query := monitorTags(app, canaryOnly)
	monitors, err := c.monitors(ctx, query)
	if err != nil {
		return nil, err
	}
	want := c.tagKey + ":" + tag
	firing := map[string]bool{}
	// A monitor that alerts says more than one without data or with a
	// status this package does not know: the build fails on the first even
	// when another cannot tell.
	var problem error
	for _, m := range monitors {
		if !m.of(app) {
			continue
		}
		for _, g := range m.groups {
			if !hasTag(g.tags, want) {
				continue
			}
			switch g.status {
			case statusAlert:
				firing[m.name] = true
			case statusNoData:
				if problem == nil {
					problem = fmt.Errorf("datadog: monitor %q (tagged %s), group %q: %w", m.name, query, g.name, ErrNoData)
				}
			default:
				if !quietStatus(g.status) && problem == nil {
					problem = fmt.Errorf("datadog: monitor %q (tagged %s), group %q: unrecognised status %q", m.name, query, g.name, g.status)
				}
			}
		}
	}
	if len(firing) == 0 && problem != nil {
		return nil, problem
	}
	names := make([]string, 0, len(firing))
	for name := range firing {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// Ungrouped returns the sorted names of the monitors of app (its SLO
// monitors, or with canaryOnly its canary monitors, of its namespace as
// FiringAlerts selects them) that have groups but
// none for the build tag: they counted nothing of the build, as when no
// request reached it. Ungrouped monitors are not among them: they cannot
// be attributed to one build. The result is empty, not nil, when every
// grouped monitor has a group for the build.
func (c *Client) Ungrouped(ctx context.Context, app scope.App, tag string, canaryOnly bool) ([]string, error) {
	if err := checkNames(app, tag); err != nil {
		return nil, err
	}
	monitors, err := c.monitors(ctx, monitorTags(app, canaryOnly))
	if err != nil {
		return nil, err
	}
	want := c.tagKey + ":" + tag
	names := []string{}
	for _, m := range monitors {
		if m.of(app) && len(m.groups) > 0 && !slices.ContainsFunc(m.groups, func(g group) bool { return hasTag(g.tags, want) }) {
			names = append(names, m.name)
		}
	}
	sort.Strings(names)
	return slices.Compact(names), nil
}

// checkNames rejects an app, namespace or tag checkName refuses.
func checkNames(app scope.App, tag string) error {
	for _, n := range []struct{ what, v string }{{"app", app.Name}, {"namespace", app.Namespace}, {"tag", tag}} {
		if err := checkName(n.what, n.v); err != nil {
			return err
		}
	}
	return nil
}

// checkName rejects an empty app or tag, or one that would split the query.
func checkName(what, v string) error {
	if v == "" {
		return fmt.Errorf("datadog: firing alerts: the %s is empty", what)
	}
	if strings.Contains(v, ",") {
		return fmt.Errorf("datadog: firing alerts: the %s %q holds a comma", what, v)
	}
	return nil
}

// monitorTags is the monitor_tags query selecting the monitors of app.
func monitorTags(app scope.App, canaryOnly bool) string {
	if canaryOnly {
		return "app:" + app.Name + ",canary:true"
	}
	return "app:" + app.Name + ",slo:true"
}

// hasTag reports whether tags holds want, ignoring case as Datadog lowercases
// tags.
func hasTag(tags []string, want string) bool {
	for _, t := range tags {
		if strings.EqualFold(t, want) {
			return true
		}
	}
	return false
}

// quietStatus reports whether status is a known status that does not alert.
func quietStatus(status string) bool {
	switch datadogV1.MonitorOverallStates(status) {
	case datadogV1.MONITOROVERALLSTATES_OK, datadogV1.MONITOROVERALLSTATES_WARN,
		datadogV1.MONITOROVERALLSTATES_IGNORED, datadogV1.MONITOROVERALLSTATES_SKIPPED,
		datadogV1.MONITOROVERALLSTATES_UNKNOWN:
		return true
	}
	return false
}

// monitors returns the monitors selected by query, from the cache or else
// from one request shared by the concurrent callers (see
// querycache.Cache.Get), bounded by Config.Timeout per page.
func (c *Client) monitors(ctx context.Context, query string) ([]monitor, error) {
	return c.cache.Get(ctx, query, func(ctx context.Context) ([]monitor, error) {
		return c.list(ctx, query)
	})
}

// list reads every page of the monitors selected by query.
func (c *Client) list(ctx context.Context, query string) ([]monitor, error) {
	apiKey, appKey, err := c.keys(ctx)
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, dd.ContextAPIKeys, map[string]dd.APIKey{
		"apiKeyAuth": {Key: apiKey},
		"appKeyAuth": {Key: appKey},
	})
	if c.site != nil {
		ctx = context.WithValue(ctx, dd.ContextServerVariables, c.site)
	}
	var all []monitor
	for page := int64(0); ; page++ {
		if page == c.maxPages {
			return nil, fmt.Errorf("datadog: listing monitors tagged %s at %s: more than %d pages of %d monitors", query, c.host, c.maxPages, pageSize)
		}
		ms, err := c.page(ctx, query, page)
		if err != nil {
			return nil, fmt.Errorf("datadog: listing monitors tagged %s at %s: page %d: %w", query, c.host, page, err)
		}
		for i := range ms {
			m, err := fromAPI(&ms[i])
			if err != nil {
				return nil, fmt.Errorf("datadog: listing monitors tagged %s at %s: page %d: %w", query, c.host, page, err)
			}
			all = append(all, m)
		}
		if len(ms) < pageSize {
			return all, nil
		}
	}
}

// page asks for one page, within Config.Timeout.
func (c *Client) page(ctx context.Context, query string, page int64) ([]datadogV1.Monitor, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	params := datadogV1.NewListMonitorsOptionalParameters().
		WithMonitorTags(query).
		WithGroupStates("all").
		WithPage(page).
		WithPageSize(pageSize)
	ms, resp, err := c.api.ListMonitors(ctx, *params)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err == nil {
		return ms, nil
	}
	if resp != nil && resp.StatusCode >= http.StatusMultipleChoices {
		return nil, fmt.Errorf("HTTP status %d%s: %w", resp.StatusCode, apiErrors(err), err)
	}
	return nil, err
}

// apiErrors returns the messages of a Datadog error response, if any.
func apiErrors(err error) string {
	var apiErr dd.GenericOpenAPIError
	if !errors.As(err, &apiErr) {
		return ""
	}
	model, ok := apiErr.Model().(datadogV1.APIErrorResponse)
	if !ok || len(model.Errors) == 0 {
		return ""
	}
	return " (" + strings.Join(model.Errors, "; ") + ")"
}

// rawMonitor is the part of a monitor read when the client could not decode
// it into its model (for example a field of an unforeseen type).
type rawMonitor struct {
	ID    json.Number `json:"id"`
	Name  string      `json:"name"`
	Tags  []string    `json:"tags"`
	State struct {
		Groups map[string]struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"groups"`
	} `json:"state"`
}

// fromAPI keeps what matters of a listed monitor. A monitor or group the
// client could not fully decode is read from its raw JSON, so that it is not
// mistaken for a quiet one.
func fromAPI(m *datadogV1.Monitor) (monitor, error) {
	if m.UnparsedObject != nil {
		var raw rawMonitor
		b, err := json.Marshal(m.UnparsedObject)
		if err == nil {
			err = json.Unmarshal(b, &raw)
		}
		if err != nil {
			return monitor{}, fmt.Errorf("decoding a monitor: %w", err)
		}
		out := monitor{name: monitorName(raw.Name, raw.ID.String()), namespaces: namespacesOf(raw.Tags)}
		for key, g := range raw.State.Groups {
			out.groups = append(out.groups, newGroup(key, g.Name, g.Status))
		}
		return out, nil
	}
	id := ""
	if m.Id != nil {
		id = strconv.FormatInt(*m.Id, 10)
	}
	out := monitor{name: monitorName(m.GetName(), id), namespaces: namespacesOf(m.GetTags())}
	for key, g := range m.GetState().Groups {
		status := ""
		switch {
		case g.Status != nil:
			status = string(*g.Status)
		case g.UnparsedObject != nil:
			// A status the client does not know is kept as sent.
			status, _ = g.UnparsedObject["status"].(string)
		}
		out.groups = append(out.groups, newGroup(key, g.GetName(), status))
	}
	return out, nil
}

// monitorName names a monitor by its name, or by its id when it has none.
func monitorName(name, id string) string {
	if name != "" {
		return name
	}
	return "monitor " + id
}

// newGroup keeps a group, named by its name or else by its key in the state.
func newGroup(key, name, status string) group {
	if name == "" {
		name = key
	}
	tags := strings.Split(name, ",")
	for i := range tags {
		tags[i] = strings.TrimSpace(tags[i])
	}
	return group{name: name, tags: tags, status: status}
}

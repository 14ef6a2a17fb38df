package silence

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

// CreatedBy is the author of every silence Picchu creates.
const CreatedBy = "picchu"

// DefaultMargin is how long a silence outlasts the release it covers, at
// least: silences end two margins after the release is expected to, and
// are extended once less than one margin is left.
const DefaultMargin = 5 * time.Minute

// DefaultMaxLength bounds how far ahead a silence ends (--max-silence):
// one that covers a longer release, or a paused one, is renewed while it
// is needed, half a length before it ends.
const DefaultMaxLength = 2 * time.Hour

// maxSteps bounds the steps Remaining counts in one ramp: NextPercent
// reaches max in at most 100.
const maxSteps = 101

// Matcher is an Alertmanager matcher.
type Matcher struct {
	Name, Value      string
	IsRegex, IsEqual bool
}

func (m Matcher) String() string {
	return picchuv1alpha1.SilenceMatcher{Name: m.Name, Value: m.Value, IsRegex: m.IsRegex, IsEqual: &m.IsEqual}.String()
}

// Key names a silence Picchu holds: the Index-th releaseSilences entry of
// build Tag of App in Target, whose Revision is in Namespace.
type Key struct {
	Namespace, App, Target, Tag string
	Index                       int
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s/%s/%d", k.Namespace, k.App, k.Target, k.Tag, k.Index)
}

// Marker is what ends the comment of the silence k that the Picchu
// instance holds: Picchu finds its silences in Alertmanager by it. Without
// an instance it is the marker of Picchus before instances were named.
func (k Key) Marker(instance string) string {
	if instance == "" {
		return "[picchu silence " + k.String() + "]"
	}
	return "[picchu silence " + k.String() + " instance " + instance + "]"
}

// instanceRE is what an instance may be to fit a marker: a Kubernetes UID
// or a name.
var instanceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckInstance says whether id can name a Picchu instance in a marker:
// empty, or 1 to 63 letters, digits, '.', '_' and '-', the first a letter
// or digit (a Kubernetes UID is one).
func CheckInstance(id string) error {
	if id != "" && !instanceRE.MatchString(id) {
		return fmt.Errorf("instance %q is not 1 to 63 letters, digits, '.', '_' and '-' starting with a letter or digit", id)
	}
	return nil
}

var markerRE = regexp.MustCompile(`\[picchu silence ([^/\]\s]+)/([^/\]\s]+)/([^/\]\s]+)/([^/\]\s]+)/([0-9]{1,4})(?: instance ([A-Za-z0-9][A-Za-z0-9._-]{0,62}))?\]$`)

// ParseMarker returns the key whose marker ends comment and the instance
// it names (empty in a marker without one), and false when none does (a
// silence Picchu did not create).
func ParseMarker(comment string) (k Key, instance string, ok bool) {
	m := markerRE.FindStringSubmatch(comment)
	if m == nil {
		return Key{}, "", false
	}
	i, err := strconv.Atoi(m[5])
	if err != nil {
		return Key{}, "", false
	}
	return Key{Namespace: m[1], App: m[2], Target: m[3], Tag: m[4], Index: i}, m[6], true
}

// Owns says whether the Picchu instance holds a silence whose marker
// names marked: its own, and one without an instance (created before
// instances were named, or by a Picchu without one), which it adopts
// (Decide rewrites it with its own marker, or expires it). It never holds
// another instance's.
func Owns(instance, marked string) bool { return marked == instance || marked == "" }

// Silence is a silence Picchu created in Alertmanager, or is to create or
// change there.
type Silence struct {
	// ID is Alertmanager's; empty for one to create.
	ID       string
	Key      Key
	Matchers []Matcher
	Comment  string
	StartsAt time.Time
	EndsAt   time.Time
	// Expired says Alertmanager's state for it is expired: it silences
	// nothing and is only kept for its history.
	Expired bool
	// Instance is the Picchu instance its marker names (empty: none).
	Instance string
}

// Build is a build of the app in the target, as the silences see it.
type Build struct {
	Tag string
	// State is its state, and Percent the traffic it takes.
	State   release.State
	Percent int32
	// Remaining is how long its release is expected to go on (Remaining);
	// for a retiring build, Decide takes the ramping build's.
	Remaining time.Duration
	// Silences are its target's releaseSilences.
	Silences []picchuv1alpha1.ReleaseSilence
}

// Silenced says a build in state s taking percent of the traffic is being
// released: it ramps, or it retires with traffic left.
func Silenced(s release.State, percent int32) bool {
	return s.IsRamping() || (s.IsRetiring() && percent > 0)
}

// Remaining estimates how long the release of a build still goes on: the
// steps of its ramp from percent to release.max, each held for the step
// delay (the first step from 0 is taken at once), and, when the target
// releases in waves, for each wave after wave, the bake of the wave before
// and a whole ramp. With waves, percent is the build's in its wave.
func Remaining(r picchuv1alpha1.ReleaseInfo, percent int32, wave int) time.Duration {
	delay := release.StepDelay(r)
	d := time.Duration(steps(r, percent)) * delay
	if len(r.Waves) < 2 {
		return d
	}
	for w := max(wave, 0) + 1; w < len(r.Waves); w++ {
		if bake := r.Waves[w-1].Bake; bake != nil && bake.Duration > 0 {
			d += bake.Duration
		}
		d += time.Duration(steps(r, 0)) * delay
	}
	return d
}

// steps counts the step delays a ramp from percent to max still waits.
func steps(r picchuv1alpha1.ReleaseInfo, percent int32) int {
	limit := release.MaxPercent(r)
	n := 0
	for p := max(percent, 0); p < limit && n < maxSteps; p = release.NextPercent(r, p) {
		if p > 0 {
			n++
		}
	}
	return n
}

// Scope is the matcher every silence of app in target carries: its
// namespace there (picchuv1alpha1.SilenceScopeLabel), so the silence
// silences only alerts about the app in the target.
func Scope(app, target string) Matcher {
	return Matcher{Name: picchuv1alpha1.SilenceScopeLabel, Value: picchuv1alpha1.AppNamespace(app, target), IsEqual: true}
}

// Fleet is the clusters a silence reaches, as the alerts name them.
type Fleet struct {
	// Label is the label that names the cluster an alert comes from
	// (--prometheus-cluster-label); empty, silences are not scoped by
	// cluster.
	Label string
	// Values are the label's values on the alerts of the target fleet's
	// clusters (each Cluster's spec.prometheus.clusterLabelValue, or its
	// name).
	Values []string
}

// Matcher is the matcher that keeps a silence to the alerts of the fleet's
// clusters, and of no cluster: Label matches one of Values, or is absent
// (an Alertmanager per cluster, whose alerts carry no cluster label), so
// the same-named app of another delivery namespace or Picchu instance,
// which runs on other clusters, is never silenced. It is false when f
// has no Label.
func (f Fleet) Matcher() (Matcher, bool) {
	if f.Label == "" {
		return Matcher{}, false
	}
	values := slices.Clone(f.Values)
	slices.Sort(values)
	values = slices.Compact(values)
	quoted := make([]string, 0, len(values)+1)
	for _, v := range values {
		if v != "" {
			quoted = append(quoted, regexp.QuoteMeta(v))
		}
	}
	// Alertmanager anchors a regex matcher, and matches an absent label
	// as empty: the empty alternative lets through alerts of no cluster.
	quoted = append(quoted, "")
	return Matcher{Name: f.Label, Value: strings.Join(quoted, "|"), IsRegex: true, IsEqual: true}, true
}

// Matchers are the matchers of the silence k of s: its own, then the
// app's scope (Scope), the fleet's clusters (Fleet.Matcher),
// slo!="true" and canary!="true", unless s has them already.
func Matchers(k Key, s picchuv1alpha1.ReleaseSilence, fleet Fleet) []Matcher {
	out := make([]Matcher, 0, len(s.Matchers)+2+len(picchuv1alpha1.SilenceProtectedLabels))
	for _, m := range s.Matchers {
		out = append(out, Matcher{Name: m.Name, Value: m.Value, IsRegex: m.IsRegex, IsEqual: m.Equal()})
	}
	added := []Matcher{Scope(k.App, k.Target)}
	if m, ok := fleet.Matcher(); ok {
		added = append(added, m)
	}
	for _, label := range picchuv1alpha1.SilenceProtectedLabels {
		added = append(added, Matcher{Name: label, Value: picchuv1alpha1.SilenceProtectedValue})
	}
	for _, m := range added {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// Comment is the comment of the silence k of s that the Picchu instance
// holds: s's comment, or one saying which release it covers, then k's
// marker.
func Comment(k Key, instance string, s picchuv1alpha1.ReleaseSilence) string {
	text := strings.TrimSpace(s.Comment)
	if text == "" {
		text = fmt.Sprintf("%s %s is being released in %s", k.App, k.Tag, k.Target)
	}
	return text + " " + k.Marker(instance)
}

// sameMatchers says a and b hold the same matchers, in any order.
func sameMatchers(a, b []Matcher) bool {
	if len(a) != len(b) {
		return false
	}
	sorted := func(ms []Matcher) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.String()
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(sorted(a), sorted(b))
}

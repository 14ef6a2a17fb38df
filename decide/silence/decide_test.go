package silence

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

var now = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

var latency = picchuv1alpha1.ReleaseSilence{
	Matchers: []picchuv1alpha1.SilenceMatcher{{Name: "alertname", Value: "HighLatency"}},
	Comment:  "pods warm up",
}

// fleet is the target fleet's clusters, as the alerts name them.
var fleet = Fleet{Label: "cluster", Values: []string{"west.2", "east-1"}}

func key(tag string, i int) Key {
	return Key{Namespace: "picchu", App: "shop", Target: "production", Tag: tag, Index: i}
}

// held is a live silence of the build tag ending at end, as Picchu would
// have created it from latency.
func held(id, tag string, end time.Time) Silence {
	return Silence{
		ID: id, Key: key(tag, 0), Matchers: Matchers(key(tag, 0), latency, fleet), Comment: Comment(key(tag, 0), "", latency),
		StartsAt: now.Add(-time.Hour), EndsAt: end,
	}
}

// summary lists a plan as "create v2/0 until +10m40s", "extend s1 until
// ...", "expire s1", sorted, times relative to now.
func summary(p Plan) []string {
	var out []string
	for _, s := range p.Create {
		out = append(out, fmt.Sprintf("create %s/%d until +%s", s.Key.Tag, s.Key.Index, s.EndsAt.Sub(now)))
	}
	for _, s := range p.Extend {
		out = append(out, fmt.Sprintf("extend %s until +%s", s.ID, s.EndsAt.Sub(now)))
	}
	for _, s := range p.Expire {
		out = append(out, "expire "+s.ID)
	}
	slices.Sort(out)
	return out
}

// TestDecide_EveryState decides for one build in each state, with its
// silence missing, held well ahead, or held ending soon: only a releasing
// build, and a retiring one with traffic, hold a silence; every other state
// expires it.
func TestDecide_EveryState(t *testing.T) {
	const remaining = 40 * time.Second
	margin := DefaultMargin
	for _, state := range release.States() {
		for _, percent := range []int32{0, 30} {
			silenced := state == release.Releasing || (state == release.Retiring && percent > 0)
			cases := []struct {
				name     string
				existing []Silence
				want     []string
			}{
				{"none held", nil, nil},
				{"held well ahead", []Silence{held("s1", "v2", now.Add(remaining+2*margin))}, []string{"expire s1"}},
				{"held ending soon", []Silence{held("s1", "v2", now.Add(remaining+margin-time.Second))}, []string{"expire s1"}},
				{"held expired", []Silence{func() Silence { s := held("s1", "v2", now.Add(-time.Minute)); s.Expired = true; return s }()}, nil},
			}
			if silenced {
				cases[0].want = []string{"create v2/0 until +10m40s"}
				cases[1].want = nil
				cases[2].want = []string{"extend s1 until +10m40s"}
				cases[3].want = []string{"create v2/0 until +10m40s"}
			}
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s at %d%%, %s", state, percent, c.name), func(t *testing.T) {
					builds := []Build{{Tag: "v2", State: state, Percent: percent, Remaining: remaining,
						Silences: []picchuv1alpha1.ReleaseSilence{latency}}}
					if state == release.Retiring {
						// A retiring build's silence lasts as long as the ramp of
						// the build that takes its traffic.
						builds = append(builds, Build{Tag: "v3", State: release.Releasing, Remaining: remaining})
					}
					p := Decide(Input{Now: now, Namespace: "picchu", App: "shop", Target: "production", Fleet: fleet, Builds: builds, Existing: c.existing})
					if got := summary(p); !slices.Equal(got, c.want) {
						t.Errorf("plan %q, want %q", got, c.want)
					}
					if silenced != !p.Recheck.IsZero() {
						t.Errorf("recheck at %v; want one only while a silence is held", p.Recheck)
					}
				})
			}
		}
	}
}

func TestDecide(t *testing.T) {
	errors := picchuv1alpha1.ReleaseSilence{Matchers: []picchuv1alpha1.SilenceMatcher{
		{Name: "alertname", Value: "ErrorBudget|Errors", IsRegex: true}, {Name: "severity", Value: "page"},
	}}
	edited := latency
	edited.Comment = "pods warm up slowly"
	releasing := func(tag string, remaining time.Duration, silences ...picchuv1alpha1.ReleaseSilence) Build {
		return Build{Tag: tag, State: release.Releasing, Percent: 20, Remaining: remaining, Silences: silences}
	}
	tests := []struct {
		name     string
		builds   []Build
		existing []Silence
		want     []string
		recheck  time.Duration // after now; 0: none
	}{
		{
			name:    "one silence per entry",
			builds:  []Build{releasing("v2", time.Minute, latency, errors)},
			want:    []string{"create v2/0 until +11m0s", "create v2/1 until +11m0s"},
			recheck: 5 * time.Minute,
		},
		{
			name:   "nothing configured, nothing held: nothing to do",
			builds: []Build{releasing("v2", time.Minute), {Tag: "v1", State: release.Released, Percent: 80}},
		},
		{
			name:     "held long enough",
			builds:   []Build{releasing("v2", time.Minute, latency)},
			existing: []Silence{held("s1", "v2", now.Add(7*time.Minute))},
			recheck:  time.Minute, // 7m - 1m remaining - 5m margin
		},
		{
			name:     "a ramp that slipped is extended",
			builds:   []Build{releasing("v2", 3*time.Minute, latency)},
			existing: []Silence{held("s1", "v2", now.Add(7*time.Minute))},
			want:     []string{"extend s1 until +13m0s"},
			recheck:  5 * time.Minute,
		},
		{
			name:     "a changed comment is written",
			builds:   []Build{releasing("v2", time.Minute, edited)},
			existing: []Silence{held("s1", "v2", now.Add(time.Hour))},
			want:     []string{"extend s1 until +1h0m0s"}, // never shortened
			recheck:  54 * time.Minute,
		},
		{
			name:     "matchers in another order are the same",
			builds:   []Build{releasing("v2", time.Minute, latency)},
			existing: []Silence{func() Silence { s := held("s1", "v2", now.Add(time.Hour)); slices.Reverse(s.Matchers); return s }()},
			recheck:  54 * time.Minute,
		},
		{
			name:   "changed matchers are written",
			builds: []Build{releasing("v2", time.Minute, errors)},
			existing: []Silence{func() Silence {
				s := held("s1", "v2", now.Add(time.Hour))
				s.Comment = Comment(key("v2", 0), "", errors)
				return s
			}()},
			want:    []string{"extend s1 until +1h0m0s"},
			recheck: 54 * time.Minute,
		},
		{
			name:     "an entry removed from the Revision is expired",
			builds:   []Build{releasing("v2", time.Minute, latency)},
			existing: []Silence{held("s1", "v2", now.Add(time.Hour)), {ID: "s2", Key: key("v2", 1), EndsAt: now.Add(time.Hour)}},
			want:     []string{"expire s2"},
			recheck:  54 * time.Minute,
		},
		{
			name:     "duplicates: the one ending last is kept",
			builds:   []Build{releasing("v2", time.Minute, latency)},
			existing: []Silence{held("s1", "v2", now.Add(20*time.Minute)), held("s2", "v2", now.Add(time.Hour)), held("s3", "v2", now.Add(30*time.Minute))},
			want:     []string{"expire s1", "expire s3"},
			recheck:  54 * time.Minute,
		},
		{
			name:     "the build gone",
			builds:   []Build{{Tag: "v1", State: release.Released, Percent: 100}},
			existing: []Silence{held("s1", "v2", now.Add(time.Hour))},
			want:     []string{"expire s1"},
		},
		{
			name:     "released, and the old build retiring with no traffic left",
			builds:   []Build{{Tag: "v2", State: release.Released, Percent: 100, Silences: []picchuv1alpha1.ReleaseSilence{latency}}, {Tag: "v1", State: release.Retiring, Silences: []picchuv1alpha1.ReleaseSilence{latency}}},
			existing: []Silence{held("s1", "v2", now.Add(time.Hour)), held("s0", "v1", now.Add(time.Hour))},
			want:     []string{"expire s0", "expire s1"},
		},
		{
			name: "the ramping build and the retiring one it takes traffic from",
			builds: []Build{
				releasing("v3", 2*time.Minute, latency),
				{Tag: "v2", State: release.Retiring, Percent: 30, Silences: []picchuv1alpha1.ReleaseSilence{errors}},
			},
			want:    []string{"create v2/0 until +12m0s", "create v3/0 until +12m0s"},
			recheck: 5 * time.Minute,
		},
		{
			name:    "a retiring build with traffic and no ramp: held for the margins",
			builds:  []Build{{Tag: "v2", State: release.Retiring, Percent: 30, Silences: []picchuv1alpha1.ReleaseSilence{latency}}},
			want:    []string{"create v2/0 until +10m0s"},
			recheck: 5 * time.Minute,
		},
		{
			name:     "failing: the rollback is not silenced",
			builds:   []Build{{Tag: "v2", State: release.Failing, Percent: 40, Silences: []picchuv1alpha1.ReleaseSilence{latency}}},
			existing: []Silence{held("s1", "v2", now.Add(time.Hour))},
			want:     []string{"expire s1"},
		},
		{
			name:     "silences of other apps and targets are left alone",
			builds:   nil,
			existing: []Silence{{ID: "other", Key: Key{Namespace: "picchu", App: "cart", Target: "production", Tag: "v2"}, EndsAt: now.Add(time.Hour)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Decide(Input{Now: now, Namespace: "picchu", App: "shop", Target: "production", Fleet: fleet, Builds: tt.builds, Existing: tt.existing})
			if got := summary(p); !slices.Equal(got, tt.want) {
				t.Errorf("plan %q, want %q", got, tt.want)
			}
			var recheck time.Duration
			if !p.Recheck.IsZero() {
				recheck = p.Recheck.Sub(now)
			}
			if recheck != tt.recheck {
				t.Errorf("recheck after %s, want %s", recheck, tt.recheck)
			}
			for _, s := range append(p.Create, p.Extend...) {
				if !slices.Contains(s.Matchers, Matcher{Name: "slo", Value: "true"}) || !slices.Contains(s.Matchers, Matcher{Name: "canary", Value: "true"}) {
					t.Errorf("%s: matchers %v lack the exclusions of Picchu's alerts", s.Key, s.Matchers)
				}
				if !slices.Contains(s.Matchers, Matcher{Name: "namespace", Value: "shop-production", IsEqual: true}) {
					t.Errorf("%s: matchers %v lack the app's scope", s.Key, s.Matchers)
				}
				if s.EndsAt.After(now.Add(DefaultMaxLength)) {
					t.Errorf("%s: ends at +%s, beyond the bound %s", s.Key, s.EndsAt.Sub(now), DefaultMaxLength)
				}
				if k, instance, ok := ParseMarker(s.Comment); !ok || k != s.Key || instance != "" {
					t.Errorf("comment %q: marker %v of %q, want %v of none", s.Comment, k, instance, s.Key)
				}
			}
		})
	}
}

// TestDecide_SteadyState: decided again as time passes, a held silence
// asks for nothing until its recheck, and once extended, nothing again for
// a margin.
func TestDecide_SteadyState(t *testing.T) {
	in := Input{Now: now, Namespace: "picchu", App: "shop", Target: "production", Fleet: fleet,
		Builds: []Build{{Tag: "v2", State: release.Releasing, Percent: 10, Remaining: time.Hour, Silences: []picchuv1alpha1.ReleaseSilence{latency}}}}
	p := Decide(in)
	if len(p.Create) != 1 {
		t.Fatalf("plan %q, want one creation", summary(p))
	}
	s := p.Create[0]
	s.ID = "s1"
	in.Existing = []Silence{s}
	for at := now; at.Before(p.Recheck); at = at.Add(10 * time.Second) {
		in.Now = at
		if got := Decide(in); !got.Empty() {
			t.Fatalf("at +%s: plan %q, want nothing (recheck at +%s)", at.Sub(now), summary(got), p.Recheck.Sub(now))
		}
	}
	in.Now = p.Recheck.Add(time.Second)
	if got := Decide(in); len(got.Extend) != 1 {
		t.Fatalf("after the recheck, with the ramp not moved on: plan %q, want an extension", summary(got))
	}
}

func TestRemaining(t *testing.T) {
	delay := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	geometric := picchuv1alpha1.ReleaseInfo{GeometricScaling: picchuv1alpha1.GeometricScaling{Start: 10, Factor: 2, Delay: delay(2 * time.Second)}}
	waves := geometric
	waves.Waves = []picchuv1alpha1.ReleaseWave{{Name: "a", Bake: delay(time.Minute)}, {Name: "b", Bake: delay(time.Hour)}, {Name: "c"}}
	tests := []struct {
		name    string
		release picchuv1alpha1.ReleaseInfo
		percent int32
		wave    int
		want    time.Duration
	}{
		// 10 → 20 → 40 → 80 → 100: four delays from 10.
		{"geometric from 10", geometric, 10, 0, 8 * time.Second},
		{"geometric from 0: the first step at once", geometric, 0, 0, 8 * time.Second},
		{"geometric from 80", geometric, 80, 0, 2 * time.Second},
		{"at max", geometric, 100, 0, 0},
		{"above max", picchuv1alpha1.ReleaseInfo{Max: 50}, 80, 0, 0},
		// 5, 10, ..., 100: 19 delays of 10 s (the defaults).
		{"linear defaults from 5", picchuv1alpha1.ReleaseInfo{ScalingStrategy: picchuv1alpha1.ScalingStrategyLinear}, 5, 0, 190 * time.Second},
		// This wave from 40 (2 delays), then wave b after a's bake (1m +
		// 4 delays), then c after b's (1h + 4 delays).
		{"waves", waves, 40, 0, 4*time.Second + time.Minute + 8*time.Second + time.Hour + 8*time.Second},
		{"the last wave", waves, 40, 2, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Remaining(tt.release, tt.percent, tt.wave); got != tt.want {
				t.Errorf("Remaining = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestMatchers_ScopeToTheAppAndExcludePicchusAlertsOnce: every silence
// carries the app's namespace in the target, its fleet's clusters and the
// exclusions of Picchu's alerts, each once.
func TestMatchers_ScopeToTheAppAndExcludePicchusAlertsOnce(t *testing.T) {
	const clusters = `cluster=~"east-1|west\\.2|"`
	tests := []struct {
		name     string
		matchers []picchuv1alpha1.SilenceMatcher
		fleet    Fleet
		want     []string
	}{
		{"by name", []picchuv1alpha1.SilenceMatcher{{Name: "alertname", Value: "HighLatency"}}, fleet,
			[]string{`alertname="HighLatency"`, `namespace="shop-production"`, clusters, `slo!="true"`, `canary!="true"`}},
		{"with an exclusion and the scope of its own", []picchuv1alpha1.SilenceMatcher{
			{Name: "alertname", Value: "A|B", IsRegex: true}, {Name: "slo", Value: "true", IsEqual: new(bool)}, {Name: "namespace", Value: "shop-production"},
		}, fleet, []string{`alertname=~"A|B"`, `slo!="true"`, `namespace="shop-production"`, clusters, `canary!="true"`}},
		{"with a cluster matcher of its own", []picchuv1alpha1.SilenceMatcher{{Name: "cluster", Value: "east-1"}}, fleet,
			[]string{`cluster="east-1"`, `namespace="shop-production"`, clusters, `slo!="true"`, `canary!="true"`}},
		{"without a cluster label", []picchuv1alpha1.SilenceMatcher{{Name: "alertname", Value: "HighLatency"}}, Fleet{Values: fleet.Values},
			[]string{`alertname="HighLatency"`, `namespace="shop-production"`, `slo!="true"`, `canary!="true"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range Matchers(key("v2", 0), picchuv1alpha1.ReleaseSilence{Matchers: tt.matchers}, tt.fleet) {
				got = append(got, m.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Matchers = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFleetMatcher_ReachesTheFleetsClustersAlone matches the cluster
// matcher as Alertmanager does (anchored; an absent label is empty): it
// lets through the alerts of each cluster of the fleet and those of no
// cluster, and no other cluster's, however its name resembles theirs.
func TestFleetMatcher_ReachesTheFleetsClustersAlone(t *testing.T) {
	f := Fleet{Label: "cluster", Values: []string{"prod-a", "prod.b", "prod-a", "(x|y)"}}
	m, ok := f.Matcher()
	if !ok || m.Name != "cluster" || !m.IsRegex || !m.IsEqual {
		t.Fatalf("Matcher = %+v, %v", m, ok)
	}
	re := regexp.MustCompile("^(?:" + m.Value + ")$")
	for _, v := range []string{"prod-a", "prod.b", "(x|y)", ""} {
		if !re.MatchString(v) {
			t.Errorf("%s does not let through cluster %q of the fleet", m, v)
		}
	}
	for _, v := range []string{"prod-c", "prodxb", "x", "y", "prod-a-2", "other"} {
		if re.MatchString(v) {
			t.Errorf("%s lets through cluster %q, not of the fleet", m, v)
		}
	}
	if _, ok := (Fleet{Values: f.Values}).Matcher(); ok {
		t.Error("a fleet without a cluster label scopes silences by cluster")
	}
}

// TestDecide_AClusterJoiningTheFleetRewritesTheSilence: a silence held
// for the fleet as it was is rewritten to reach the clusters it has now.
func TestDecide_AClusterJoiningTheFleetRewritesTheSilence(t *testing.T) {
	builds := []Build{{Tag: "v2", State: release.State("releasing"), Percent: 20, Remaining: time.Minute, Silences: []picchuv1alpha1.ReleaseSilence{latency}}}
	grown := Fleet{Label: fleet.Label, Values: append(slices.Clone(fleet.Values), "south")}
	p := Decide(Input{Now: now, Namespace: "picchu", App: "shop", Target: "production", Fleet: grown, Builds: builds,
		Existing: []Silence{held("s1", "v2", now.Add(time.Hour))}})
	if len(p.Extend) != 1 || len(p.Create)+len(p.Expire) != 0 {
		t.Fatalf("plan %q; want s1 rewritten", summary(p))
	}
	if want := Matchers(key("v2", 0), latency, grown); !slices.Equal(p.Extend[0].Matchers, want) {
		t.Errorf("rewritten with %v, want %v", p.Extend[0].Matchers, want)
	}
}

// olderMarker is the marker pattern of Picchus before instances were
// named (copied): they must not read a marker that names an instance, so
// they never change or expire another instance's silences.
var olderMarker = regexp.MustCompile(`\[picchu silence ([^/\]\s]+)/([^/\]\s]+)/([^/\]\s]+)/([^/\]\s]+)/([0-9]{1,4})\]$`)

func TestMarker(t *testing.T) {
	k := Key{Namespace: "picchu", App: "shop", Target: "production", Tag: "v2.1-rc", Index: 3}
	tests := []struct {
		instance, want string
	}{
		{"", "shop v2.1-rc is being released in production [picchu silence picchu/shop/production/v2.1-rc/3]"},
		{"0f5c7a9e-61d2-4b1e-9c43-3d2a8b7e6f10", "shop v2.1-rc is being released in production [picchu silence picchu/shop/production/v2.1-rc/3 instance 0f5c7a9e-61d2-4b1e-9c43-3d2a8b7e6f10]"},
	}
	for _, tt := range tests {
		c := Comment(k, tt.instance, picchuv1alpha1.ReleaseSilence{})
		if c != tt.want {
			t.Errorf("Comment = %q, want %q", c, tt.want)
		}
		if got, instance, ok := ParseMarker(c); !ok || got != k || instance != tt.instance {
			t.Errorf("ParseMarker(%q) = %v, %q, %v; want %v, %q", c, got, instance, ok, k, tt.instance)
		}
		if read := olderMarker.MatchString(c); read != (tt.instance == "") {
			t.Errorf("an older Picchu reads %q: %v; want it to read only markers without an instance", c, read)
		}
	}
	c := Comment(k, "", picchuv1alpha1.ReleaseSilence{})
	for _, comment := range []string{"", "maintenance", "[picchu silence a/b/c]", strings.TrimSuffix(c, "]") + " ]",
		strings.TrimSuffix(c, "]") + " instance a/b]", strings.TrimSuffix(c, "]") + " instance ]"} {
		if k, instance, ok := ParseMarker(comment); ok {
			t.Errorf("ParseMarker(%q) = %v, %q; want no marker", comment, k, instance)
		}
	}
}

func TestCheckInstance(t *testing.T) {
	for _, id := range []string{"", "0f5c7a9e-61d2-4b1e-9c43-3d2a8b7e6f10", "delivery-east", "a.b_c"} {
		if err := CheckInstance(id); err != nil {
			t.Errorf("CheckInstance(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"a b", "a]", "a/b", "-a", strings.Repeat("a", 64)} {
		if err := CheckInstance(id); err == nil {
			t.Errorf("CheckInstance(%q) accepted", id)
		}
	}
}

// TestDecide_Bounded: no silence ends more than MaxLength after now; one
// that covers a longer release is renewed once half the bound is left,
// and one written to end further ahead is brought back within it.
func TestDecide_Bounded(t *testing.T) {
	commented := latency
	commented.Comment = "pods warm up slowly"
	releasing := func(remaining time.Duration, s picchuv1alpha1.ReleaseSilence) []Build {
		return []Build{{Tag: "v2", State: release.Releasing, Percent: 20, Remaining: remaining, Silences: []picchuv1alpha1.ReleaseSilence{s}}}
	}
	tests := []struct {
		name      string
		maxLength time.Duration
		builds    []Build
		existing  []Silence
		want      []string
		recheck   time.Duration
	}{
		{
			name:    "a release longer than the bound: created for the bound",
			builds:  releasing(5*time.Hour, latency),
			want:    []string{"create v2/0 until +2h0m0s"},
			recheck: time.Hour,
		},
		{
			name:     "held, more than half the bound left: nothing",
			builds:   releasing(5*time.Hour, latency),
			existing: []Silence{held("s1", "v2", now.Add(61*time.Minute))},
			recheck:  time.Minute,
		},
		{
			name:     "held, less than half the bound left: renewed for the bound",
			builds:   releasing(5*time.Hour, latency),
			existing: []Silence{held("s1", "v2", now.Add(59*time.Minute))},
			want:     []string{"extend s1 until +2h0m0s"},
			recheck:  time.Hour,
		},
		{
			name:     "held for a day (by hand, or by an older Picchu): brought back within the bound",
			builds:   releasing(time.Minute, latency),
			existing: []Silence{held("s1", "v2", now.Add(24*time.Hour))},
			want:     []string{"extend s1 until +11m0s"},
			recheck:  5 * time.Minute,
		},
		{
			name:     "a changed comment keeps an end within the bound",
			builds:   releasing(time.Minute, commented),
			existing: []Silence{held("s1", "v2", now.Add(90*time.Minute))},
			want:     []string{"extend s1 until +1h30m0s"},
			recheck:  84 * time.Minute,
		},
		{
			name:      "a shorter bound",
			maxLength: 30 * time.Minute,
			builds:    releasing(time.Hour, latency),
			want:      []string{"create v2/0 until +30m0s"},
			recheck:   15 * time.Minute,
		},
		{
			name:      "a bound under two margins is two margins",
			maxLength: time.Minute,
			builds:    releasing(time.Hour, latency),
			want:      []string{"create v2/0 until +10m0s"},
			recheck:   5 * time.Minute,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Decide(Input{Now: now, Namespace: "picchu", App: "shop", Target: "production", Fleet: fleet, MaxLength: tt.maxLength,
				Builds: tt.builds, Existing: tt.existing})
			if got := summary(p); !slices.Equal(got, tt.want) {
				t.Errorf("plan %q, want %q", got, tt.want)
			}
			if got := p.Recheck.Sub(now); got != tt.recheck {
				t.Errorf("recheck after %s, want %s", got, tt.recheck)
			}
		})
	}
}

// TestDecide_PausedReleaseRenewedWithinTheBound follows a paused ramp for
// eight hours, deciding every minute and applying each plan: a silence is
// held all along, none is ever written to end more than the bound ahead,
// and it is renewed about once per half bound.
func TestDecide_PausedReleaseRenewedWithinTheBound(t *testing.T) {
	in := Input{Namespace: "picchu", App: "shop", Target: "production", Fleet: fleet,
		Builds: []Build{{Tag: "v2", State: release.Releasing, Percent: 10, Remaining: 3 * time.Hour, Silences: []picchuv1alpha1.ReleaseSilence{latency}}}}
	writes := 0
	for at := now; at.Before(now.Add(8 * time.Hour)); at = at.Add(time.Minute) {
		in.Now = at
		p := Decide(in)
		for _, s := range append(p.Create, p.Extend...) {
			writes++
			if s.EndsAt.After(at.Add(DefaultMaxLength)) || !s.EndsAt.After(at) {
				t.Fatalf("at +%s: written to end at +%s; want within %s of now", at.Sub(now), s.EndsAt.Sub(now), DefaultMaxLength)
			}
			s.ID = fmt.Sprintf("s%d", writes)
			in.Existing = []Silence{s}
		}
		if len(p.Expire) > 0 {
			t.Fatalf("at +%s: plan %q expires the silence of a paused release", at.Sub(now), summary(p))
		}
		if len(in.Existing) != 1 || !in.Existing[0].EndsAt.After(at) {
			t.Fatalf("at +%s: no silence held (%+v)", at.Sub(now), in.Existing)
		}
	}
	if writes > 9 {
		t.Errorf("%d writes in 8 hours; want one at the start and one per hour at most", writes)
	}
}

// TestDecide_Instances: a Picchu instance never changes or expires the
// silences another instance marked, for the same app and target; it
// adopts those whose marker names no instance; without an instance, it
// holds only those.
func TestDecide_Instances(t *testing.T) {
	marked := func(id, instance string, end time.Time) Silence {
		s := held(id, "v2", end)
		s.Instance, s.Comment = instance, Comment(key("v2", 0), instance, latency)
		return s
	}
	releasing := []Build{{Tag: "v2", State: release.Releasing, Percent: 20, Remaining: time.Minute, Silences: []picchuv1alpha1.ReleaseSilence{latency}}}
	released := []Build{{Tag: "v2", State: release.Released, Percent: 100, Silences: []picchuv1alpha1.ReleaseSilence{latency}}}
	tests := []struct {
		name     string
		instance string
		builds   []Build
		existing []Silence
		want     []string
	}{
		{"another instance's silence is left, one of its own created", "a", releasing,
			[]Silence{marked("b1", "b", now.Add(time.Hour))}, []string{"create v2/0 until +11m0s"}},
		{"another instance's silence is not expired when the release ends", "a", released,
			[]Silence{marked("b1", "b", now.Add(time.Hour))}, nil},
		{"its own silence is held beside another's", "a", releasing,
			[]Silence{marked("a1", "a", now.Add(time.Hour)), marked("b1", "b", now.Add(2*time.Hour))}, nil},
		{"its own silence is expired, another's left", "a", released,
			[]Silence{marked("a1", "a", now.Add(time.Hour)), marked("b1", "b", now.Add(time.Hour))}, []string{"expire a1"}},
		{"a silence without an instance is adopted: rewritten with its marker", "a", releasing,
			[]Silence{marked("old", "", now.Add(time.Hour))}, []string{"extend old until +1h0m0s"}},
		{"a silence without an instance is adopted: expired when the release ends", "a", released,
			[]Silence{marked("old", "", now.Add(time.Hour))}, []string{"expire old"}},
		{"without an instance, instances' silences are left", "", released,
			[]Silence{marked("a1", "a", now.Add(time.Hour)), marked("old", "", now.Add(time.Hour))}, []string{"expire old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Decide(Input{Now: now, Namespace: "picchu", App: "shop", Target: "production", Fleet: fleet, Instance: tt.instance,
				Builds: tt.builds, Existing: tt.existing})
			if got := summary(p); !slices.Equal(got, tt.want) {
				t.Errorf("plan %q, want %q", got, tt.want)
			}
			for _, s := range append(p.Create, p.Extend...) {
				if _, instance, ok := ParseMarker(s.Comment); !ok || instance != tt.instance || s.Instance != tt.instance {
					t.Errorf("%s written with comment %q (instance %q); want the marker of %q", s.Key, s.Comment, s.Instance, tt.instance)
				}
			}
		})
	}
}

// FuzzFleetMatcher: for any fleet of cluster values (split on "\n") and
// any cluster, the fleet's matcher, anchored as Alertmanager anchors it,
// lets the cluster through exactly when it is one of the fleet's or empty
// (an alert without the label).
func FuzzFleetMatcher(f *testing.F) {
	f.Add("prod-a\nprod.b\n(x|y)", "prodxb")
	f.Add("a\nb", "a|b")
	f.Add(`east\n[w]est`, "west")
	f.Add("", "")
	f.Add("east", "east\n")
	f.Fuzz(func(t *testing.T, values, cluster string) {
		if !utf8.ValidString(values) || !utf8.ValidString(cluster) {
			t.Skip("Prometheus label values are UTF-8")
		}
		fl := Fleet{Label: "cluster", Values: strings.Split(values, "\n")}
		m, ok := fl.Matcher()
		if !ok {
			t.Fatal("no matcher for a fleet with a cluster label")
		}
		re, err := regexp.Compile("^(?:" + m.Value + ")$")
		if err != nil {
			t.Fatalf("%s does not compile: %v", m.Value, err)
		}
		want := cluster == "" || slices.Contains(fl.Values, cluster)
		if got := re.MatchString(cluster); got != want {
			t.Errorf("fleet %q: %s lets cluster %q through: %t, want %t", fl.Values, m.Value, cluster, got, want)
		}
	})
}

package releasemanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/platform"
)

var (
	linuxAMD64 = platform.Platform{OS: "linux", Architecture: "amd64"}
	linuxARM64 = platform.Platform{OS: "linux", Architecture: "arm64"}
)

// platformBuild is build v2, which its image's platforms gate, as read.
func platformBuild(failed bool, err error, ps ...platform.Platform) *incarnation {
	rev := &picchuv1alpha1.Revision{}
	rev.Spec.App.Image = "registry.example/shop:v2"
	rev.Spec.Failed = failed
	return &incarnation{tag: "v2", revision: rev, platforms: ps, platformsErr: err, platformsChecked: true}
}

// notGated is inc as a build its image's platforms do not gate.
func notGated(inc *incarnation) *incarnation {
	inc.platformsChecked = false
	return inc
}

func platformCluster(name string, live, known bool, nodes ...platform.Platform) *fleetCluster {
	cl := &picchuv1alpha1.Cluster{}
	cl.Name = name
	return &fleetCluster{obj: cl, live: live, nodes: nodes, nodesKnown: known}
}

func TestPlacementHold(t *testing.T) {
	unreachable := errors.New("inspecting registry.example/shop:v2: registry unreachable")
	for _, tc := range []struct {
		name string
		inc  *incarnation
		fc   *fleetCluster
		want string
	}{
		{"not inspected", platformBuild(false, nil), platformCluster("east", true, true, linuxAMD64), ""},
		{"runs", platformBuild(false, nil, linuxAMD64, linuxARM64), platformCluster("east", true, true, linuxAMD64), ""},
		{"no matching node", platformBuild(false, nil, linuxARM64), platformCluster("east", true, true, linuxAMD64),
			"held on cluster east: image offers linux/arm64, but the cluster's ready nodes run only linux/amd64"},
		{"no ready node", platformBuild(false, nil, linuxARM64), platformCluster("east", true, true),
			"held on cluster east: image offers linux/arm64, but the cluster has no ready node"},
		{"nodes not known", platformBuild(false, nil, linuxARM64), platformCluster("east", true, false), ""},
		{"image not readable", platformBuild(false, unreachable), platformCluster("east", true, true, linuxAMD64),
			"held until its image's platforms can be read: inspecting registry.example/shop:v2: registry unreachable"},
		{"a failed build is never held", platformBuild(true, unreachable), platformCluster("east", true, true, linuxAMD64), ""},
		{"a build not gated is never held for its registry", notGated(platformBuild(false, unreachable)), platformCluster("east", true, true, linuxAMD64), ""},
		{"nor for its nodes", notGated(platformBuild(false, nil, linuxARM64)), platformCluster("east", true, true, linuxAMD64), ""},
		{"no revision", &incarnation{tag: "v1", platforms: []platform.Platform{linuxARM64}}, platformCluster("east", true, true, linuxAMD64), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := placementHold(tc.inc, tc.fc); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("hold %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRunsNowhere(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inc   *incarnation
		fleet []*fleetCluster
		want  string
	}{
		{"runs on one", platformBuild(false, nil, linuxARM64),
			[]*fleetCluster{platformCluster("east", true, true, linuxAMD64, linuxARM64), platformCluster("west", true, true, linuxAMD64)}, ""},
		{"runs nowhere", platformBuild(false, nil, linuxARM64),
			[]*fleetCluster{platformCluster("east", true, true, linuxAMD64), platformCluster("west", true, true)},
			"no live cluster has a ready node of a platform image registry.example/shop:v2 offers (linux/arm64): east runs linux/amd64; west has no ready node"},
		{"a live cluster's nodes not known", platformBuild(false, nil, linuxARM64),
			[]*fleetCluster{platformCluster("east", true, true, linuxAMD64), platformCluster("west", true, false)}, ""},
		{"standbys do not count", platformBuild(false, nil, linuxARM64),
			[]*fleetCluster{platformCluster("east", true, true, linuxAMD64), platformCluster("standby", false, true, linuxARM64)},
			"no live cluster has a ready node of a platform image registry.example/shop:v2 offers (linux/arm64): east runs linux/amd64"},
		{"no live cluster", platformBuild(false, nil, linuxARM64), []*fleetCluster{platformCluster("standby", false, true, linuxAMD64)}, ""},
		{"platforms not known", platformBuild(false, nil), []*fleetCluster{platformCluster("east", true, true, linuxAMD64)}, ""},
		{"a build not gated is never rejected", notGated(platformBuild(false, nil, linuxARM64)),
			[]*fleetCluster{platformCluster("east", true, true, linuxAMD64)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot{fleet: tc.fleet}
			if got := s.runsNowhere(tc.inc); got != tc.want {
				t.Errorf("runsNowhere\n%q, want\n%q", got, tc.want)
			}
		})
	}
}

func TestSetPlatformsCondition(t *testing.T) {
	unreachable := errors.New("registry unreachable")
	fleet := []*fleetCluster{platformCluster("east", true, true, linuxAMD64, linuxARM64), platformCluster("west", true, true, linuxAMD64)}
	for _, tc := range []struct {
		name       string
		inspecting bool
		builds     []*incarnation
		want       *metav1.Condition
	}{
		{"not inspecting", false, []*incarnation{platformBuild(false, nil, linuxARM64)}, nil},
		{"runnable", true, []*incarnation{platformBuild(false, nil, linuxAMD64)},
			&metav1.Condition{Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonPlatformsRunnable}},
		{"held on west", true, []*incarnation{platformBuild(false, nil, linuxARM64)},
			&metav1.Condition{Status: metav1.ConditionFalse, Reason: picchuv1alpha1.ReasonNoMatchingNode,
				Message: "v2 held on cluster west: image offers linux/arm64, but the cluster's ready nodes run only linux/amd64"}},
		{"unknown", true, []*incarnation{platformBuild(false, unreachable)},
			&metav1.Condition{Status: metav1.ConditionFalse, Reason: picchuv1alpha1.ReasonPlatformsUnknown, Message: "held: v2: registry unreachable"}},
		{"failed builds do not count", true, []*incarnation{platformBuild(true, unreachable)},
			&metav1.Condition{Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonPlatformsRunnable}},
		{"builds not gated do not count", true, []*incarnation{notGated(platformBuild(false, unreachable)), notGated(platformBuild(false, nil, linuxARM64))},
			&metav1.Condition{Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonPlatformsRunnable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rm := &picchuv1alpha1.ReleaseManager{}
			// A condition left from before goes when images are not inspected.
			meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{Type: picchuv1alpha1.ConditionImagePlatforms, Status: metav1.ConditionTrue, Reason: "Old"})
			setPlatformsCondition(rm, &snapshot{incarnations: tc.builds, fleet: fleet}, tc.inspecting)
			got := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionImagePlatforms)
			switch {
			case tc.want == nil && got != nil:
				t.Errorf("condition %+v, want none", got)
			case tc.want == nil:
			case got == nil:
				t.Errorf("no condition, want %+v", tc.want)
			case got.Status != tc.want.Status || got.Reason != tc.want.Reason || !strings.Contains(got.Message, tc.want.Message):
				t.Errorf("condition %s %s %q, want %s %s %q", got.Status, got.Reason, got.Message, tc.want.Status, tc.want.Reason, tc.want.Message)
			}
		})
	}
}

func TestPlatformGated(t *testing.T) {
	build := func(state string, peak int32, change func(*incarnation)) *incarnation {
		inc := &incarnation{tag: "v2", revision: &picchuv1alpha1.Revision{}}
		inc.status.State.Current, inc.status.PeakPercent = state, peak
		if change != nil {
			change(inc)
		}
		return inc
	}
	for _, tc := range []struct {
		name string
		inc  *incarnation
		want bool
	}{
		{"seen for the first time", build("", 0, nil), true},
		{"deploying", build("deploying", 0, nil), true},
		{"deployed", build("deployed", 0, nil), true},
		{"pending release", build("pendingrelease", 0, nil), true},
		{"canarying at 10 %", build("canarying", 10, func(inc *incarnation) { inc.status.CurrentPercent = 10 }), false},
		{"releasing", build("releasing", 20, nil), false},
		{"released (re-scaled)", build("released", 100, nil), false},
		{"brought back, deploying again", build("deploying", 100, nil), false},
		{"rolled back to", build("deploying", 0, func(inc *incarnation) { inc.control.rollback = "2026-11-02T09:00:00Z" }), false},
		{"retiring", build("retiring", 100, nil), false},
		{"retired", build("retired", 100, nil), false},
		{"failing", build("failing", 0, nil), false},
		{"failed on its Revision", build("deploying", 0, func(inc *incarnation) { inc.revision.Spec.Failed = true }), false},
		{"no Revision", build("deploying", 0, func(inc *incarnation) { inc.revision = nil }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := platformGated(tc.inc); got != tc.want {
				t.Errorf("gated %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeImages answers every image with err, or with platforms, and records
// the images asked for.
type fakeImages struct {
	asked     []string
	platforms []platform.Platform
	err       error
}

func (f *fakeImages) Platforms(_ context.Context, image string, _ []corev1.Secret) ([]platform.Platform, error) {
	f.asked = append(f.asked, image)
	return f.platforms, f.err
}

// TestInspectImages_OnlyBuildsAboutToTakeTraffic: while the registry fails,
// a new build holds on it with its error, clipped; a released build and
// one brought back are not inspected, and keep the platforms their
// ReplicaSets were written with.
func TestInspectImages_OnlyBuildsAboutToTakeTraffic(t *testing.T) {
	build := func(tag, state string, peak int32) *incarnation {
		rev := &picchuv1alpha1.Revision{}
		rev.Spec.App.Image = "registry.example/shop:" + tag
		inc := &incarnation{tag: tag, revision: rev, target: &picchuv1alpha1.RevisionTarget{}}
		inc.status.State.Current, inc.status.PeakPercent = state, peak
		return inc
	}
	fresh, released, back := build("v3", "deploying", 0), build("v2", "released", 100), build("v1", "deploying", 100)
	withPlatforms := func(ps ...platform.Platform) corev1.PodTemplateSpec {
		var tmpl corev1.PodTemplateSpec
		tmpl.Spec.Affinity = platform.WithRequirements(nil, platform.Requirements(ps))
		return tmpl
	}
	east := platformCluster("east", true, true, linuxAMD64)
	west := platformCluster("west", true, true, linuxAMD64)
	east.templates = map[string]corev1.PodTemplateSpec{"v2": {}}
	west.templates = map[string]corev1.PodTemplateSpec{"v2": withPlatforms(linuxAMD64, linuxARM64), "v1": withPlatforms(linuxARM64)}
	s := &snapshot{incarnations: []*incarnation{fresh, released, back}, fleet: []*fleetCluster{east, west}}
	images := &fakeImages{err: fmt.Errorf("registry registry.example: inspecting registry.example/shop:v3: %s", strings.Repeat("500 body ", 1000))}
	(&Reconciler{Images: images}).inspectImages(context.Background(), s)

	if want := []string{"registry.example/shop:v3"}; !slices.Equal(images.asked, want) {
		t.Errorf("asked for %v, want %v", images.asked, want)
	}
	if !fresh.platformsChecked || fresh.platformsErr == nil || !errors.Is(fresh.platformsErr, images.err) ||
		len(fresh.platformsErr.Error()) > maxBuildPlatformsText || !strings.HasSuffix(fresh.platformsErr.Error(), "…") ||
		!strings.HasPrefix(fresh.platformsErr.Error(), "registry registry.example: ") {
		t.Errorf("the new build: checked %v, error %q", fresh.platformsChecked, fresh.platformsErr)
	}
	if err := placementHold(fresh, east); err == nil {
		t.Error("the new build is not held")
	}
	for _, tc := range []struct {
		inc  *incarnation
		want []platform.Platform
	}{{released, []platform.Platform{linuxAMD64, linuxARM64}}, {back, []platform.Platform{linuxARM64}}} {
		if tc.inc.platformsChecked || tc.inc.platformsErr != nil || !slices.Equal(tc.inc.platforms, tc.want) {
			t.Errorf("%s: checked %v, error %v, platforms %v, want %v", tc.inc.tag, tc.inc.platformsChecked, tc.inc.platformsErr, tc.inc.platforms, tc.want)
		}
		if err := placementHold(tc.inc, east); err != nil {
			t.Errorf("%s held: %v", tc.inc.tag, err)
		}
	}
	rm := &picchuv1alpha1.ReleaseManager{}
	setPlatformsCondition(rm, s, true)
	c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionImagePlatforms)
	if c == nil || c.Reason != picchuv1alpha1.ReasonPlatformsUnknown || !strings.HasPrefix(c.Message, "held: v3: registry registry.example: ") || len(c.Message) > maxPlatformsMessage {
		t.Errorf("condition %+v", c)
	}
}

// TestSetPlatformsCondition_Bounded: however many builds hold and however
// long their errors, the message stays within its bound.
func TestSetPlatformsCondition_Bounded(t *testing.T) {
	var builds []*incarnation
	for i := range 100 {
		inc := platformBuild(false, clippedError{errors.New(strings.Repeat("é", 2000))})
		inc.tag = fmt.Sprintf("v%d", i)
		builds = append(builds, inc)
	}
	rm := &picchuv1alpha1.ReleaseManager{}
	setPlatformsCondition(rm, &snapshot{incarnations: builds}, true)
	c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionImagePlatforms)
	if c == nil || len(c.Message) > maxPlatformsMessage || !utf8.ValidString(c.Message) || !strings.HasSuffix(c.Message, "…") {
		t.Errorf("condition message of %d bytes", len(c.Message))
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer text", 10, "a longe…"},
		{"ééééé", 8, "éé…"},
	} {
		if got := clip(tc.s, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// A build a cluster rejected keeps the reason on record once it is failed:
// a failed build is neither inspected nor applied again, so its later runs
// find no reason of their own, and must not wipe the one that failed it.
func TestBuildReport_AFailedBuildKeepsWhyItWasRejected(t *testing.T) {
	const why = "no live cluster has a ready node of a platform image registry.example/shop:v2 offers (linux/s390x): east runs linux/amd64"
	for _, tc := range []struct {
		name     string
		failed   bool
		recorded string // Rejected as recorded before the run
		found    string // why this run found it rejected
		want     string
	}{
		{"found, not yet failed", false, "", why, why},
		{"failed: kept when no run finds it again", true, why, "", why},
		{"failed: a reason found again is recorded", true, why, "east: invalid", "east: invalid"},
		{"not failed: cleared once no cluster rejects it", false, why, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inc := platformBuild(tc.failed, nil)
			inc.status = picchuv1alpha1.ReleaseManagerRevisionStatus{Tag: inc.tag, Rejected: tc.recorded}
			inc.status.State.Current = "failing"
			s := &snapshot{now: time.Now(), rm: &picchuv1alpha1.ReleaseManager{}}
			out := s.buildReport(inc, settledBuild{state: "failing", rejected: tc.found}, clusterOutcome{}, s.now)
			if out.status.Rejected != tc.want {
				t.Errorf("rejected %q, want %q", out.status.Rejected, tc.want)
			}
		})
	}
}

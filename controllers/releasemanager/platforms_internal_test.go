package releasemanager

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/images/platform"
)

var (
	linuxAMD64 = platform.Platform{OS: "linux", Architecture: "amd64"}
	linuxARM64 = platform.Platform{OS: "linux", Architecture: "arm64"}
)

func platformBuild(failed bool, err error, ps ...platform.Platform) *incarnation {
	rev := &picchuv1alpha1.Revision{}
	rev.Spec.App.Image = "registry.example/shop:v2"
	rev.Spec.Failed = failed
	return &incarnation{tag: "v2", revision: rev, platforms: ps, platformsErr: err}
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
			&metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonPlatformsRunnable}},
		{"held on west", true, []*incarnation{platformBuild(false, nil, linuxARM64)},
			&metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonNoMatchingNode,
				Message: "v2 held on cluster west: image offers linux/arm64, but the cluster's ready nodes run only linux/amd64"}},
		{"unknown", true, []*incarnation{platformBuild(false, unreachable)},
			&metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonPlatformsUnknown, Message: "held: v2: registry unreachable"}},
		{"failed builds do not count", true, []*incarnation{platformBuild(true, unreachable)},
			&metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonPlatformsRunnable}},
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

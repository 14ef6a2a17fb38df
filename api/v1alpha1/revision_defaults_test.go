package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"reflect"
	"strings"
	"testing"
)

func port(name string, mode PortMode, ingresses ...Ingress) PortInfo {
	return PortInfo{Name: name, Mode: mode, Ingresses: ingresses}
}

func Test_DefaultRouting(t *testing.T) {
	tests := []struct {
		name          string
		target        RevisionTarget
		wantIngresses map[string][]Ingress
		wantDefaults  map[string]string
	}{
		{
			name:          "private port",
			target:        RevisionTarget{Ports: []PortInfo{port("http", PortModePrivate)}},
			wantIngresses: map[string][]Ingress{"http": {IngressPrivate}},
			wantDefaults:  map[string]string{"private": "http"},
		},
		{
			name:          "public port is also private",
			target:        RevisionTarget{Ports: []PortInfo{port("web", PortModePublic)}},
			wantIngresses: map[string][]Ingress{"web": {IngressPrivate, IngressPublic}},
			wantDefaults:  map[string]string{"private": "web", "public": "web"},
		},
		{
			name:          "local port is on no ingress",
			target:        RevisionTarget{Ports: []PortInfo{port("status", PortModeLocal)}},
			wantIngresses: map[string][]Ingress{"status": nil},
			wantDefaults:  nil,
		},
		{
			name:          "a port without mode is private (the schema default)",
			target:        RevisionTarget{Ports: []PortInfo{port("http", "")}},
			wantIngresses: map[string][]Ingress{"http": {IngressPrivate}},
			wantDefaults:  map[string]string{"private": "http"},
		},
		{
			name:          "several ports: the one named http",
			target:        RevisionTarget{Ports: []PortInfo{port("grpc", PortModePrivate), port("http", PortModePrivate)}},
			wantIngresses: map[string][]Ingress{"grpc": {IngressPrivate}, "http": {IngressPrivate}},
			wantDefaults:  map[string]string{"private": "http"},
		},
		{
			name: "several ports: the one flagged default wins over http",
			target: RevisionTarget{Ports: []PortInfo{
				port("http", PortModePublic), {Name: "grpc", Mode: PortModePublic, Default: true},
			}},
			wantIngresses: map[string][]Ingress{"http": {IngressPrivate, IngressPublic}, "grpc": {IngressPrivate, IngressPublic}},
			wantDefaults:  map[string]string{"private": "grpc", "public": "grpc"},
		},
		{
			name:          "several ports and no rule: no default",
			target:        RevisionTarget{Ports: []PortInfo{port("a", PortModePrivate), port("b", PortModePrivate)}},
			wantIngresses: map[string][]Ingress{"a": {IngressPrivate}, "b": {IngressPrivate}},
			wantDefaults:  nil,
		},
		{
			name: "explicit entries and ingresses are kept",
			target: RevisionTarget{
				Ports:               []PortInfo{port("a", PortModePublic, IngressPublic), port("b", PortModePrivate)},
				DefaultIngressPorts: map[string]string{"public": "a"},
			},
			wantIngresses: map[string][]Ingress{"a": {IngressPublic}, "b": {IngressPrivate}},
			wantDefaults:  map[string]string{"public": "a", "private": "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target
			target.DefaultRouting()
			for _, p := range target.Ports {
				if want := tt.wantIngresses[p.Name]; !reflect.DeepEqual(p.Ingresses, want) {
					t.Errorf("port %s ingresses = %v, want %v", p.Name, p.Ingresses, want)
				}
				if p.Mode == "" {
					t.Errorf("port %s has no mode after defaulting", p.Name)
				}
			}
			if !reflect.DeepEqual(target.DefaultIngressPorts, tt.wantDefaults) {
				t.Errorf("defaultIngressPorts = %v, want %v", target.DefaultIngressPorts, tt.wantDefaults)
			}
			again := *target.DeepCopy()
			again.DefaultRouting()
			if !reflect.DeepEqual(again, target) {
				t.Errorf("DefaultRouting is not idempotent:\nonce  %+v\ntwice %+v", target, again)
			}
		})
	}
}

func Test_RevisionValidate(t *testing.T) {
	three := int32(3)
	tests := []struct {
		name         string
		target       RevisionTarget
		wantErrs     []string // substrings, each naming a field
		wantWarnings []string
	}{
		{name: "valid", target: RevisionTarget{Ports: []PortInfo{
			{Name: "http", Mode: PortModePublic}, {Name: "status", Port: 4444, ContainerPort: 4444, Mode: PortModeLocal},
		}}},
		{
			name: "ingress with ports and no default",
			target: RevisionTarget{Ports: []PortInfo{
				{Name: "a", Port: 80, Mode: PortModePrivate}, {Name: "b", Port: 81, ContainerPort: 81, Mode: PortModePrivate},
			}},
			wantErrs: []string{"spec.targets[0].defaultIngressPorts[private]: Required value: the private ingress has ports a, b"},
		},
		{
			name: "two ports flagged default on one ingress",
			target: RevisionTarget{Ports: []PortInfo{
				{Name: "a", Port: 80, Mode: PortModePrivate, Default: true}, {Name: "b", Port: 81, ContainerPort: 81, Mode: PortModePrivate, Default: true},
			}},
			wantErrs: []string{"spec.targets[0].ports: Invalid value: \"a, b\": only one port exposed on the private ingress may be flagged default"},
		},
		{
			name: "ports flagged default on one ingress, one named http: http, as the original chose",
			target: RevisionTarget{Ports: []PortInfo{
				{Name: "a", Port: 80, Mode: PortModePrivate, Default: true}, {Name: "http", Port: 81, ContainerPort: 81, Mode: PortModePrivate, Default: true},
			}},
			wantWarnings: []string{"spec.targets[0].ports: ports a, http exposed on the private ingress are all flagged default: the flags are ignored, http is its default port"},
		},
		{
			name: "invalid config selector",
			target: RevisionTarget{ConfigSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Sometimes"}},
			}},
			wantErrs: []string{"spec.targets[0].configSelector: Invalid value"},
		},
		{
			name: "duplicate and unnamed enabled SLOs",
			target: RevisionTarget{ServiceLevelObjectives: []ServiceLevelObjective{
				{Name: "availability", Enabled: true}, {Name: "availability", Enabled: true}, {Enabled: true},
				{Name: "availability"}, // disabled: not checked
			}},
			wantErrs: []string{
				"spec.targets[0].serviceLevelObjectives[1].name: Duplicate value: \"availability\"",
				"spec.targets[0].serviceLevelObjectives[2].name: Required value",
			},
		},
		{
			name:         "min above max and canary above max warn",
			target:       RevisionTarget{Scale: ScaleInfo{Min: &three, Max: 1}, Canary: Canary{Percent: 20}, Release: ReleaseInfo{Max: 10}},
			wantWarnings: []string{"spec.targets[0].scale: min (3) is above max (1)", "spec.targets[0].canary.percent: canary percent (20) is above release max (10)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.target.Release.Max == 0 {
				tt.target.Release.Max = 100
			}
			r := &Revision{Spec: RevisionSpec{Targets: []RevisionTarget{tt.target}}}
			r.Name = "demo-v1"
			r.DefaultRouting()
			warnings, err := r.Validate()
			if len(tt.wantErrs) == 0 && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(tt.wantErrs) > 0 && err == nil {
				t.Fatalf("accepted; want errors %q", tt.wantErrs)
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if got := strings.Join(warnings, "\n"); len(warnings) != len(tt.wantWarnings) {
				t.Errorf("warnings:\n%s\nwant %q", got, tt.wantWarnings)
			}
			for _, want := range tt.wantWarnings {
				if !strings.Contains(strings.Join(warnings, "\n"), want) {
					t.Errorf("warnings lack %q: %q", want, warnings)
				}
			}
		})
	}
}

func TestDefaultScale_DefaultIsMinWhenUnset(t *testing.T) {
	sixteen, zero := int32(16), int32(0)
	r := &Revision{Spec: RevisionSpec{Targets: []RevisionTarget{
		{Name: "a", Scale: ScaleInfo{Min: &sixteen, Max: 96}},
		{Name: "b", Scale: ScaleInfo{Min: &sixteen, Default: 20, Max: 96}},
		{Name: "c", Scale: ScaleInfo{Min: &zero, Max: 5}},
		{Name: "d"},
	}}}
	r.DefaultScale()
	for i, want := range []int32{16, 20, 1, 1} {
		if got := r.Spec.Targets[i].Scale.Default; got != want {
			t.Errorf("target %s: default %d, want %d", r.Spec.Targets[i].Name, got, want)
		}
	}
}

// TestDefaultRouting_ZeroPortsReadAsUnset: an explicit 0 port number is
// read as the original read it, unset: port and containerPort 80,
// ingressPort 443; numbers that are set are kept.
func TestDefaultRouting_ZeroPortsReadAsUnset(t *testing.T) {
	tg := RevisionTarget{Ports: []PortInfo{{Name: "http"}, {Name: "grpc", Port: 9000, ContainerPort: 9001, IngressPort: 9002}}}
	tg.DefaultRouting()
	if p := tg.Ports[0]; p.Port != 80 || p.ContainerPort != 80 || p.IngressPort != 443 {
		t.Errorf("zeros read as %d/%d/%d, want 80/80/443", p.Port, p.ContainerPort, p.IngressPort)
	}
	if p := tg.Ports[1]; p.Port != 9000 || p.ContainerPort != 9001 || p.IngressPort != 9002 {
		t.Errorf("set numbers changed to %d/%d/%d", p.Port, p.ContainerPort, p.IngressPort)
	}
}

// TestDefaultLabels: a Revision is admitted with the labels Picchu keeps on
// it (the user's, the app label, one fleet label per target's fleet and no
// other fleet label), so that the Revision controller, which writes
// KeptLabels when they differ, has nothing to write; a second defaulting
// changes nothing.
func TestDefaultLabels(t *testing.T) {
	targets := func(fleets ...string) []RevisionTarget {
		var out []RevisionTarget
		for i, f := range fleets {
			out = append(out, RevisionTarget{Name: "t" + string(rune('a'+i)), Fleet: f})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		targets []RevisionTarget
		want    map[string]string
	}{
		{"no labels", nil, targets("production"),
			map[string]string{LabelApp: "shop", LabelFleetPrefix + "production": ""}},
		{"the user's kept, the app label corrected", map[string]string{"team": "web", LabelApp: "other"}, targets("production", "staging"),
			map[string]string{"team": "web", LabelApp: "shop", LabelFleetPrefix + "production": "", LabelFleetPrefix + "staging": ""}},
		{"a fleet no longer targeted loses its label", map[string]string{LabelFleetPrefix + "old": "", LabelFleetPrefix + "production": "x"}, targets("production"),
			map[string]string{LabelApp: "shop", LabelFleetPrefix + "production": ""}},
		{"two targets in one fleet make one label", nil, targets("production", "production"),
			map[string]string{LabelApp: "shop", LabelFleetPrefix + "production": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Revision{Spec: RevisionSpec{App: RevisionApp{Name: "shop"}, Targets: tc.targets}}
			r.Labels = tc.labels
			r.DefaultLabels()
			if !reflect.DeepEqual(r.Labels, tc.want) {
				t.Errorf("labels %v, want %v", r.Labels, tc.want)
			}
			if kept := r.KeptLabels(); !reflect.DeepEqual(kept, r.Labels) {
				t.Errorf("KeptLabels of a defaulted Revision %v, want its labels %v: the controller would write them", kept, r.Labels)
			}
		})
	}
	r := &Revision{}
	r.DefaultLabels()
	if r.Labels != nil {
		t.Errorf("a Revision without an app got labels %v", r.Labels)
	}
}

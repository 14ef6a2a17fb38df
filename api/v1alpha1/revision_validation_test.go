package v1alpha1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestValidate_AcceptsWhatTheOriginalAcceptedWithAWarning checks the values
// the original accepted and Picchu reads as it did, though they are likely
// mistakes: each is accepted, with a warning naming the field and saying
// what Picchu does with it. docs/api.md lists them.
func TestValidate_AcceptsWhatTheOriginalAcceptedWithAWarning(t *testing.T) {
	http := func(name string, port, container int32) PortInfo {
		return PortInfo{Name: name, Port: port, ContainerPort: container, Protocol: corev1.ProtocolTCP, Mode: PortModePrivate}
	}
	tests := []struct {
		name   string
		target RevisionTarget
		want   []string
	}{
		{
			name:   "unknown schedule",
			target: RevisionTarget{Release: ReleaseInfo{Schedule: "weekly"}},
			want:   []string{`spec.targets[0].release.schedule: unknown schedule "weekly" behaves as "always"`},
		},
		{
			name:   "release max above 100",
			target: RevisionTarget{Release: ReleaseInfo{Max: 150}},
			want:   []string{"spec.targets[0].release.max: 150 is above 100: the build takes at most 100 percent"},
		},
		{
			name: "steps above 100",
			target: RevisionTarget{Release: ReleaseInfo{
				GeometricScaling: GeometricScaling{Start: 150}, LinearScaling: LinearScaling{Increment: 120},
			}},
			want: []string{
				"spec.targets[0].release.geometricScaling.start: 150 is above 100: the first step goes to release.max",
				"spec.targets[0].release.linearScaling.increment: 120 is above 100: the first step goes to release.max",
			},
		},
		{
			name:   "canary percent above 100 is capped at max, whatever max says",
			target: RevisionTarget{Canary: Canary{Percent: 150, TTL: 60}, Release: ReleaseInfo{Max: 120}},
			want: []string{
				"spec.targets[0].canary.percent: canary percent (150) is above release max (100); the canary is capped at max",
				"spec.targets[0].release.max: 120 is above 100",
			},
		},
		{
			name:   "negative canary",
			target: RevisionTarget{Canary: Canary{Percent: -5, TTL: -60}},
			want: []string{
				"spec.targets[0].canary.percent: -5 is negative: no canary runs, as with 0",
				"spec.targets[0].canary.ttl: -60 is negative: no canary runs, as with 0",
			},
		},
		{
			name: "SLO canary allowances of 100 or more",
			target: RevisionTarget{ServiceLevelObjectives: []ServiceLevelObjective{
				{Name: "a", ServiceLevelIndicator: ServiceLevelIndicator{Canary: SLICanaryConfig{AllowancePercent: 150}}},
				{Name: "b", ServiceLevelIndicator: ServiceLevelIndicator{Canary: SLICanaryConfig{AllowancePercentString: "100"}}},
				// The string takes precedence: 150 is not used.
				{Name: "c", ServiceLevelIndicator: ServiceLevelIndicator{Canary: SLICanaryConfig{AllowancePercent: 150, AllowancePercentString: "0.5"}}},
			}},
			want: []string{
				"spec.targets[0].serviceLevelObjectives[0].serviceLevelIndicator.canary.allowancePercent: 150 is 100 or more: this SLO's canary alert cannot fire",
				"spec.targets[0].serviceLevelObjectives[1].serviceLevelIndicator.canary.allowancePercentString: 100 is 100 or more",
			},
		},
		{
			name:   "two ports on one number",
			target: RevisionTarget{Ports: []PortInfo{http("http", 80, 8080), http("grpc", 80, 8081), http("admin", 81, 8082)}},
			want: []string{
				"spec.targets[0].ports[1].port: 80/TCP is also the port of ports[0] (http), as the original allowed: the app's Service has it once, named http",
			},
		},
		{
			name: "one number over two protocols is no duplicate",
			target: RevisionTarget{Ports: []PortInfo{
				{Name: "dns", Port: 53, ContainerPort: 5353, Protocol: corev1.ProtocolUDP, Mode: PortModeLocal},
				{Name: "dns-tcp", Port: 53, ContainerPort: 5354, Mode: PortModeLocal},
			}},
		},
		{
			name: "unknown and repeated ingresses",
			target: RevisionTarget{Ports: []PortInfo{
				{Name: "http", Port: 80, ContainerPort: 8080, Ingresses: []Ingress{IngressPrivate, "internet", IngressPrivate}},
			}},
			want: []string{
				`spec.targets[0].ports[0].ingresses[1]: "internet" is not an ingress (public or private): ignored, as in the original`,
				`spec.targets[0].ports[0].ingresses[2]: "private" is listed twice`,
			},
		},
		{
			name: "ports all flagged default, the default port named",
			target: RevisionTarget{
				Ports:               []PortInfo{{Name: "a", Port: 80, Default: true}, {Name: "b", Port: 81, Default: true}},
				DefaultIngressPorts: map[string]string{"private": "b"},
			},
			want: []string{"spec.targets[0].ports: ports a, b exposed on the private ingress are all flagged default: the flags are ignored, b is its default port"},
		},
		{
			name:   "known schedules and percents within 100 warn of nothing",
			target: RevisionTarget{Release: ReleaseInfo{Schedule: ScheduleHumane, Max: 100}, Canary: Canary{Percent: 10, TTL: 60}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Revision{Spec: RevisionSpec{Targets: []RevisionTarget{tt.target}}}
			r.Name = "demo-v1"
			r.DefaultRouting()
			warnings, err := r.Validate()
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			got := strings.Join(warnings, "\n")
			if len(warnings) != len(tt.want) {
				t.Errorf("%d warnings, want %d:\n%s", len(warnings), len(tt.want), got)
			}
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("warnings lack %q:\n%s", want, got)
				}
			}
		})
	}
}

// TestValidate_FlaggedDefaultsWithoutANamedPortAreRejected: several ports
// of one ingress flagged default, and nothing naming which serves its
// default hosts, leave no default port.
func TestValidate_FlaggedDefaultsWithoutANamedPortAreRejected(t *testing.T) {
	r := &Revision{Spec: RevisionSpec{Targets: []RevisionTarget{{
		Ports: []PortInfo{{Name: "a", Port: 80, Default: true}, {Name: "b", Port: 81, Default: true}},
	}}}}
	r.DefaultRouting()
	_, err := r.Validate()
	if err == nil || !strings.Contains(err.Error(), "only one port exposed on the private ingress may be flagged default, unless defaultIngressPorts names its default port") {
		t.Fatalf("Validate() = %v, want the flags named", err)
	}
}

package v1alpha1

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

func matcher(name, value string) SilenceMatcher { return SilenceMatcher{Name: name, Value: value} }

func regex(name, value string) SilenceMatcher {
	return SilenceMatcher{Name: name, Value: value, IsRegex: true}
}

func not(m SilenceMatcher) SilenceMatcher {
	f := false
	m.IsEqual = &f
	return m
}

// TestValidate_ReleaseSilences checks the webhook's rules on release
// silences: regular expressions compile, no silence reaches outside the
// app's namespace in the target, and none may match Picchu's SLO and
// canary alerts, by their labels or their names.
func TestValidate_ReleaseSilences(t *testing.T) {
	slos := []ServiceLevelObjective{
		{Name: "availability", Enabled: true},
		{Name: "latency", Alerting: Alerting{Name: "LatencyBurn"}},
	}
	rules := []monitoringv1.Rule{
		{Alert: "QueueStuck", Labels: map[string]string{"slo": "true"}},
		{Alert: "DiskFull", Labels: map[string]string{"severity": "page"}},
	}
	tests := []struct {
		name     string
		matchers []SilenceMatcher
		// want are the errors, each "field: what"; none when empty.
		want []string
	}{
		{name: "an alert by name", matchers: []SilenceMatcher{matcher("alertname", "HighLatency")}},
		{name: "alerts by names", matchers: []SilenceMatcher{regex("alertname", "HighLatency|DiskFull"), matcher("severity", "page")}},
		{name: "an alertRules alert not labelled slo", matchers: []SilenceMatcher{matcher("alertname", "DiskFull")}},
		{name: "slo and canary labels other than true", matchers: []SilenceMatcher{
			matcher("alertname", "HighLatency"), matcher("slo", "false"), not(matcher("canary", "true")), regex("slo", "f.*"),
		}},
		{name: "a protected name excluded by another alertname matcher", matchers: []SilenceMatcher{
			regex("alertname", "availability_canary|HighLatency"), not(matcher("alertname", "availability_canary")),
		}},
		{
			name:     "slo=true",
			matchers: []SilenceMatcher{matcher("alertname", "HighLatency"), matcher("slo", "true")},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers[1]: Forbidden: matches slo="true": Picchu's SLO and canary alerts are never silenced`},
		},
		{
			name:     "canary by a regex matching true",
			matchers: []SilenceMatcher{matcher("alertname", "HighLatency"), regex("canary", "t.*")},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers[1]: Forbidden: matches canary="true"`},
		},
		{
			name:     "slo not false",
			matchers: []SilenceMatcher{matcher("alertname", "HighLatency"), not(matcher("slo", "false"))},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers[1]: Forbidden: matches slo="true"`},
		},
		{
			name:     "a canary alert by name",
			matchers: []SilenceMatcher{matcher("alertname", "availability_canary")},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers: Forbidden: the alertname matchers match "availability_canary", an SLO or canary alert of this target`},
		},
		{
			name:     "a Sloth alert by a regex",
			matchers: []SilenceMatcher{regex("alertname", "Latency.*")},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers: Forbidden: the alertname matchers match "LatencyBurn"`},
		},
		{
			name:     "the Sloth alert of an SLO without alerting.name",
			matchers: []SilenceMatcher{matcher("alertname", "availability")},
			want:     []string{`the alertname matchers match "availability"`},
		},
		{
			name:     "an alertRules alert labelled slo",
			matchers: []SilenceMatcher{matcher("alertname", "QueueStuck")},
			want:     []string{`the alertname matchers match "QueueStuck"`},
		},
		{name: "the app's own namespace", matchers: []SilenceMatcher{matcher("alertname", "HighLatency"), matcher("namespace", "demo-production")}},
		{
			name:     "another app's namespace",
			matchers: []SilenceMatcher{matcher("alertname", "HighLatency"), matcher("namespace", "cart-production")},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers[1]: Forbidden: matches namespace="cart-production": only namespace="demo-production", the app's namespace in this target, may be matched`},
		},
		{
			name:     "the app's namespace in another target",
			matchers: []SilenceMatcher{matcher("alertname", "HighLatency"), matcher("namespace", "demo-staging")},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers[1]: Forbidden: matches namespace="demo-staging"`},
		},
		{
			name:     "every namespace by a regex",
			matchers: []SilenceMatcher{matcher("alertname", "HighLatency"), regex("namespace", ".*")},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers[1]: Forbidden: matches namespace=~".*"`},
		},
		{
			name:     "every namespace but the app's",
			matchers: []SilenceMatcher{matcher("alertname", "HighLatency"), not(matcher("namespace", "demo-production"))},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers[1]: Forbidden: matches namespace!="demo-production"`},
		},
		{
			name:     "a regular expression that does not compile",
			matchers: []SilenceMatcher{regex("alertname", "HighLatency"), regex("severity", "page(")},
			want:     []string{`spec.targets[0].releaseSilences[0].matchers[1].value: Invalid value: "page(": not a regular expression`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Revision{Spec: RevisionSpec{App: RevisionApp{Name: "demo"}, Targets: []RevisionTarget{{
				Name: "production", ServiceLevelObjectives: slos, AlertRules: rules,
				ReleaseSilences: []ReleaseSilence{{Matchers: tt.matchers}},
			}}}}
			r.Name = "demo-v1"
			r.DefaultRouting()
			_, err := r.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want %q", tt.want)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

func TestProtectedAlertNames(t *testing.T) {
	target := RevisionTarget{
		ServiceLevelObjectives: []ServiceLevelObjective{{Name: "b"}, {Name: "a", Alerting: Alerting{Name: "ABurn"}}, {}},
		AlertRules: []monitoringv1.Rule{
			{Alert: "X", Labels: map[string]string{"canary": "true"}},
			{Alert: "Y"},
			{Record: "r", Labels: map[string]string{"slo": "true"}},
		},
	}
	got := strings.Join(target.ProtectedAlertNames(), ",")
	if want := "ABurn,X,a_canary,b,b_canary"; got != want {
		t.Errorf("ProtectedAlertNames() = %s, want %s", got, want)
	}
}

// TestSilenceMatcher_MatchesAsAlertmanager: regular expressions are
// anchored, isEqual false negates, unset isEqual is true.
func TestSilenceMatcher_MatchesAsAlertmanager(t *testing.T) {
	tests := []struct {
		m     SilenceMatcher
		value string
		want  bool
	}{
		{matcher("a", "x"), "x", true},
		{matcher("a", "x"), "xy", false},
		{not(matcher("a", "x")), "x", false},
		{not(matcher("a", "x")), "", true},
		{regex("a", "x|y"), "y", true},
		{regex("a", "x"), "xx", false},
		{regex("a", "x|y"), "ax", false},
		{not(regex("a", "x.*")), "xyz", false},
		{matcher("a", ""), "", true},
	}
	for _, tt := range tests {
		matches, err := tt.m.Compile()
		if err != nil {
			t.Fatal(err)
		}
		if got := matches(tt.value); got != tt.want {
			t.Errorf("%+v matches %q = %v, want %v", tt.m, tt.value, got, tt.want)
		}
	}
}

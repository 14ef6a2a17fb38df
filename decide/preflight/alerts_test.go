package preflight

import (
	"errors"
	"testing"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func TestQueries(t *testing.T) {
	tests := []struct {
		name string
		p    *picchuv1alpha1.ClusterPreflight
		want []string
	}{
		{name: "none", p: nil},
		{name: "empty", p: &picchuv1alpha1.ClusterPreflight{}},
		{name: "alerts, sorted", p: &picchuv1alpha1.ClusterPreflight{Alerts: []string{"KubeNodeNotReady", "EtcdNoLeader"}},
			want: []string{`ALERTS{alertstate="firing",alertname=~"EtcdNoLeader|KubeNodeNotReady"}`}},
		{name: "alerts with labels, quoted", p: &picchuv1alpha1.ClusterPreflight{Alerts: []string{"A"}, AlertLabels: map[string]string{"region": `us"west`, "cluster": "west"}},
			want: []string{`ALERTS{alertstate="firing",alertname=~"A",cluster="west",region="us\"west"}`}},
		{name: "query alone", p: &picchuv1alpha1.ClusterPreflight{Query: "up == 0"}, want: []string{"up == 0"}},
		{name: "blank query", p: &picchuv1alpha1.ClusterPreflight{Query: "  "}},
		{name: "both", p: &picchuv1alpha1.ClusterPreflight{Alerts: []string{"A"}, Query: "up == 0"},
			want: []string{`ALERTS{alertstate="firing",alertname=~"A"}`, "up == 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Queries(tt.p)
			if len(got) != len(tt.want) {
				t.Fatalf("Queries = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("query %d = %s, want %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestCheckAlerts(t *testing.T) {
	tests := []struct {
		name    string
		answers []Answer
		want    string // "" for a pass
	}{
		{name: "nothing asked"},
		{name: "quiet", answers: []Answer{{Query: "a"}, {Query: "b", Series: []string{}}}},
		{name: "firing, sorted and once each", answers: []Answer{{Series: []string{"KubeNodeNotReady", "EtcdNoLeader"}}, {Series: []string{"KubeNodeNotReady"}}},
			want: "alerts: firing: EtcdNoLeader, KubeNodeNotReady"},
		{name: "many", answers: []Answer{{Series: []string{"a", "b", "c", "d", "e", "f", "g"}}},
			want: "alerts: firing: a, b, c, d, e and 2 more"},
		{name: "unanswered holds", answers: []Answer{{Series: []string{"x"}}, {Err: errors.New("connection refused")}},
			want: "alerts: cannot be read: connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := CheckAlerts(tt.answers)
			switch {
			case tt.want == "" && f != nil:
				t.Errorf("CheckAlerts = %v, want a pass", f)
			case tt.want != "" && (f == nil || f.Error() != tt.want):
				t.Errorf("CheckAlerts = %v, want %q", f, tt.want)
			}
		})
	}
}

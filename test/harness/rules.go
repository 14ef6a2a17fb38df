package harness

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RulesOf reads every PrometheusRule on a cluster, as prometheus-operator
// would, and returns their groups, each named "<namespace>/<rule>/<group>"
// so that groups of different objects never clash.
func RulesOf(ctx context.Context, c client.Client) ([]monitoringv1.RuleGroup, error) {
	list := &monitoringv1.PrometheusRuleList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing PrometheusRules: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	var groups []monitoringv1.RuleGroup
	for _, pr := range list.Items {
		for _, g := range pr.Spec.Groups {
			g := *g.DeepCopy()
			g.Name = pr.Namespace + "/" + pr.Name + "/" + g.Name
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// SyncRules plays prometheus-operator for a test: every interval it reads
// the PrometheusRules on the cluster c and, when they changed, loads them
// into p. It runs until ctx is done. Errors (Prometheus stopped, a rule it
// rejects) go to report, and the load is tried again next time.
func SyncRules(ctx context.Context, c client.Client, p *Prometheus, interval time.Duration, report func(error)) {
	var loaded []byte
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		groups, err := RulesOf(ctx, c)
		if err == nil {
			var data []byte
			if data, err = MarshalRules(groups); err == nil && !bytes.Equal(data, loaded) {
				if err = p.SetRules(ctx, groups); err == nil {
					loaded = data
				}
			}
		}
		if err != nil && ctx.Err() == nil {
			report(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

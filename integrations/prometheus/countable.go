package prometheus

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/medium/picchu/integrations/scope"
)

// An SLI query is countable when the baseline comparison can count its
// increase over a window per raw series, before anything adds series up:
// a counter of a pod that restarts (back to 0), or whose series leaves a
// sum (a scale-down, a retired pod), then counts what it served and no
// more, where the increase of a recorded sum takes the drop for a counter
// reset and counts the other pods' whole history again.
//
// A countable query is, recursively, one of:
//
//   - a vector selector without offset, @, anchored or smoothed: a
//     counter, such as istio_requests_total{destination_app="shop"};
//   - sum, sum by (…) or sum without (…) of a countable query;
//   - label_replace or label_join of a countable query;
//   - a countable query in parentheses;
//   - two countable queries joined by +, - or or, with any on, ignoring,
//     group_left or group_right, and no bool or fill.
//
// Each of them commutes with the increase over a window: the increase of a
// sum is the sum of the increases, of a relabelled series the relabelled
// increase. Anything else (rate, increase, max, count, a number, an offset)
// does not, and the comparison counts the SLO's recorded series instead.

// CheckCountable says why the baseline comparison cannot count query, an
// SLI's totalQuery or errorQuery, per raw series: the query does not parse,
// or it is not of a countable shape (see the shapes above). It returns nil
// when the query is countable.
func CheckCountable(query string) error {
	expr, err := parser.ParseExpr(query)
	if err != nil {
		return fmt.Errorf("does not parse as PromQL: %w", err)
	}
	_, err = perSeries{window: time.Second}.rewrite(expr)
	return err
}

// perSeries rewrites a countable query into the increase of its raw
// series over window, added up as the query adds them up.
type perSeries struct {
	// window is the range of every increase.
	window time.Duration
	// cluster, when not empty, is added to every by and on list and taken
	// out of every without and ignoring list, so that the query, asked of
	// Thanos or a federation over every cluster's raw series, keeps them
	// apart by the cluster's external label as each cluster's own
	// recording rule did.
	cluster string
	// fleet, when not nil, are the values of the cluster label a selected
	// series may have (or none): the clusters of the app's fleet. Not
	// applied when the query writes the cluster label itself.
	fleet []string
	// namespace, when not empty, is the only value of the label namespace
	// a selected series may have: the app's own, where the Prometheus
	// enforces the namespace label on the app's recording rules.
	namespace string
}

// honestQuery is the query that counts, over ps's window, the increase of
// query's raw series by the build's tag (tagKey copied to the label
// "tag") and cluster label, of ps's namespace and fleet. The cluster label
// is added to the query's own groupings unless the query writes it itself
// (label_replace or label_join into it).
func (ps perSeries) honestQuery(query, tagKey string) (string, error) {
	expr, err := parser.ParseExpr(query)
	if err != nil {
		return "", fmt.Errorf("does not parse as PromQL: %w", err)
	}
	clusterLabel := ps.cluster
	if writesLabel(expr, clusterLabel) {
		ps.cluster, ps.fleet = "", nil
	}
	inner, err := ps.rewrite(expr)
	if err != nil {
		return "", err
	}
	if tagKey != "" && tagKey != tagLabel {
		inner = &parser.Call{Func: parser.Functions["label_replace"], Args: parser.Expressions{
			inner, &parser.StringLiteral{Val: tagLabel}, &parser.StringLiteral{Val: "$1"},
			&parser.StringLiteral{Val: tagKey}, &parser.StringLiteral{Val: "(.*)"},
		}}
	}
	out := &parser.AggregateExpr{Op: parser.SUM, Grouping: []string{tagLabel, clusterLabel}, Expr: inner}
	return out.String(), nil
}

// tagLabel is the label the comparison reads a build's tag from, as the
// SLO's recording rules write it.
const tagLabel = "tag"

// writesLabel says expr sets label with label_replace or label_join.
func writesLabel(expr parser.Expr, label string) bool {
	found := false
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		call, ok := node.(*parser.Call)
		if !ok || (call.Func.Name != "label_replace" && call.Func.Name != "label_join") || len(call.Args) < 2 {
			return nil
		}
		if dst, ok := call.Args[1].(*parser.StringLiteral); ok && dst.Val == label {
			found = true
		}
		return nil
	})
	return found
}

// errNotCountable is wrapped by the errors of queries that are not of a
// countable shape.
var errNotCountable = errors.New("only sums, label_replace, label_join, +, - and or of counter selectors can be counted per series")

// rewrite returns expr with each of its selectors replaced by its
// increase over the window, or why expr is not countable.
func (ps perSeries) rewrite(expr parser.Expr) (parser.Expr, error) {
	switch e := expr.(type) {
	case *parser.ParenExpr:
		inner, err := ps.rewrite(e.Expr)
		if err != nil {
			return nil, err
		}
		return &parser.ParenExpr{Expr: inner}, nil
	case *parser.VectorSelector:
		return ps.selector(e)
	case *parser.AggregateExpr:
		return ps.aggregate(e)
	case *parser.Call:
		return ps.call(e)
	case *parser.BinaryExpr:
		return ps.binary(e)
	case *parser.NumberLiteral, *parser.StringLiteral:
		return nil, fmt.Errorf("%s is a constant, not a counter: %w", brief(expr), errNotCountable)
	}
	return nil, fmt.Errorf("%s: %w", brief(expr), errNotCountable)
}

// selector is the increase of a counter selector over the window.
func (ps perSeries) selector(vs *parser.VectorSelector) (parser.Expr, error) {
	if vs.OriginalOffset != 0 || vs.OriginalOffsetExpr != nil || vs.Timestamp != nil || vs.StartOrEnd != 0 || vs.Anchored || vs.Smoothed {
		return nil, fmt.Errorf("%s reads its series at another time than the window's (offset, @, anchored or smoothed): %w", brief(vs), errNotCountable)
	}
	sel := *vs
	sel.LabelMatchers = slices.Clone(vs.LabelMatchers)
	if ps.namespace != "" {
		sel.LabelMatchers = append(sel.LabelMatchers, labels.MustNewMatcher(labels.MatchEqual, scope.LabelNamespace, ps.namespace))
	}
	if ps.cluster != "" && ps.fleet != nil {
		sel.LabelMatchers = append(sel.LabelMatchers, labels.MustNewMatcher(labels.MatchRegexp, ps.cluster, fleetRegexp(ps.fleet)))
	}
	return &parser.Call{Func: parser.Functions["increase"], Args: parser.Expressions{
		&parser.MatrixSelector{VectorSelector: &sel, Range: ps.window},
	}}, nil
}

// aggregate rewrites a sum; the increase of any other aggregation (max,
// avg, count…) is not that aggregation of the increases.
func (ps perSeries) aggregate(a *parser.AggregateExpr) (parser.Expr, error) {
	if a.Op != parser.SUM {
		return nil, fmt.Errorf("%s is not a sum: the increase of a %s is not the %s of the increases: %w", brief(a), a.Op, a.Op, errNotCountable)
	}
	inner, err := ps.rewrite(a.Expr)
	if err != nil {
		return nil, err
	}
	grouping := slices.Clone(a.Grouping)
	if a.Without {
		grouping = ps.dropCluster(grouping)
	} else {
		grouping = ps.addCluster(grouping)
	}
	return &parser.AggregateExpr{Op: a.Op, Expr: inner, Grouping: grouping, Without: a.Without}, nil
}

// call rewrites label_replace and label_join, which relabel each series
// and keep its value; any other function changes the values.
func (ps perSeries) call(c *parser.Call) (parser.Expr, error) {
	if (c.Func.Name != "label_replace" && c.Func.Name != "label_join") || len(c.Args) == 0 {
		return nil, fmt.Errorf("%s: %s is not label_replace or label_join: %w", brief(c), c.Func.Name, errNotCountable)
	}
	inner, err := ps.rewrite(c.Args[0])
	if err != nil {
		return nil, err
	}
	args := append(parser.Expressions{inner}, c.Args[1:]...)
	return &parser.Call{Func: c.Func, Args: args}, nil
}

// binary rewrites +, - and or of two countable queries, with the cluster
// label kept in their matching.
func (ps perSeries) binary(b *parser.BinaryExpr) (parser.Expr, error) {
	vm := b.VectorMatching
	switch {
	case b.Op != parser.ADD && b.Op != parser.SUB && b.Op != parser.LOR:
		return nil, fmt.Errorf("%s: %s is not +, - or or: %w", brief(b), b.Op, errNotCountable)
	case vm == nil || b.ReturnBool:
		return nil, fmt.Errorf("%s: not an operation between two vectors: %w", brief(b), errNotCountable)
	case vm.FillValues.LHS != nil || vm.FillValues.RHS != nil:
		return nil, fmt.Errorf("%s: fill values are not counters: %w", brief(b), errNotCountable)
	}
	lhs, err := ps.rewrite(b.LHS)
	if err != nil {
		return nil, err
	}
	rhs, err := ps.rewrite(b.RHS)
	if err != nil {
		return nil, err
	}
	matching := *vm
	matching.Include = slices.Clone(vm.Include)
	if vm.On {
		matching.MatchingLabels = ps.addCluster(vm.MatchingLabels)
	} else {
		matching.MatchingLabels = ps.dropCluster(vm.MatchingLabels)
	}
	return &parser.BinaryExpr{Op: b.Op, LHS: lhs, RHS: rhs, VectorMatching: &matching}, nil
}

// addCluster is labels with the cluster label, when ps adds it.
func (ps perSeries) addCluster(labels []string) []string {
	if ps.cluster == "" || slices.Contains(labels, ps.cluster) {
		return slices.Clone(labels)
	}
	return append(slices.Clone(labels), ps.cluster)
}

// dropCluster is labels without the cluster label, when ps adds it.
func (ps perSeries) dropCluster(labels []string) []string {
	if ps.cluster == "" {
		return slices.Clone(labels)
	}
	return slices.DeleteFunc(slices.Clone(labels), func(l string) bool { return l == ps.cluster })
}

// brief is expr as PromQL, cut to a length a warning can quote.
func brief(expr parser.Expr) string {
	const most = 80
	s := expr.String()
	if r := []rune(s); len(r) > most {
		return string(r[:most-1]) + "…"
	}
	return s
}

package prometheus

import (
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/medium/picchu/integrations/scope"
)

// awkward are label values that a careless quoting would break out of.
var awkward = []string{
	"",
	"plain",
	"v1.2.3-rc.1+build",
	`has "double" quotes`,
	`back\slash`,
	`trailing backslash\`,
	`\"`,
	`\\"`,
	"new\nline",
	"carriage\rreturn\ttab",
	"nul\x00byte",
	"bell\a and del\x7f",
	"'single' and `back` quotes",
	`}, app=~".*"`,
	`"} or vector(1) # `,
	"unicode: héllo, 日本, 🚀",
	"replacement char \uFFFD",
	"line separator \u2028",
	"invalid utf-8 \xff\xfe end",
	"truncated rune \xe6\x97",
}

func TestQuoteUnquotesToTheValue(t *testing.T) {
	for _, value := range awkward {
		got := quote(value)
		expr, err := parser.ParseExpr(`x{l=` + got + `}`)
		if err != nil {
			t.Errorf("quote(%q) = %s does not parse: %v", value, got, err)
			continue
		}
		matchers := expr.(*parser.VectorSelector).LabelMatchers
		var found bool
		for _, m := range matchers {
			if m.Name == "l" {
				found = true
				if m.Type != labels.MatchEqual || m.Value != value {
					t.Errorf("quote(%q) = %s parses to matcher %s", value, got, m)
				}
			}
		}
		if !found {
			t.Errorf("quote(%q) = %s: no matcher on l in %s", value, got, expr)
		}
	}
}

func TestQuoteIsAGoStringLiteral(t *testing.T) {
	// PromQL double-quoted strings escape as Go's do.
	for _, value := range awkward {
		got, err := strconv.Unquote(quote(value))
		if err != nil || got != value {
			t.Errorf("strconv.Unquote(quote(%q)) = %q, %v", value, got, err)
		}
	}
}

func TestCanaryAlertsQueryParses(t *testing.T) {
	for _, app := range awkward {
		for _, tag := range []string{"v1", `t"a\g`, "x\ny"} {
			query := canaryAlertsQuery(scope.App{Name: app, Namespace: app + "-production"}, tag)
			expr, err := parser.ParseExpr(query)
			if err != nil {
				t.Errorf("canaryAlertsQuery(%q, %q) = %s does not parse: %v", app, tag, query, err)
				continue
			}
			agg, ok := expr.(*parser.AggregateExpr)
			if !ok {
				t.Errorf("canaryAlertsQuery(%q, %q) = %s is a %T, not a sum", app, tag, query, expr)
				continue
			}
			if agg.Op != parser.SUM || agg.Without || !slices.Equal(agg.Grouping, []string{"app", "tag", "namespace", "alertname", DefaultClusterLabel}) {
				t.Errorf("canaryAlertsQuery(%q, %q) = %s: wrong aggregation %s", app, tag, query, agg)
			}
			selector, ok := agg.Expr.(*parser.VectorSelector)
			if !ok {
				t.Errorf("canaryAlertsQuery(%q, %q) = %s sums a %T, not a selector", app, tag, query, agg.Expr)
				continue
			}
			want := map[string]string{
				"__name__": "ALERTS", "app": app, "tag": tag, "namespace": app + "-production", "canary": "true", "alertstate": "firing",
			}
			if len(selector.LabelMatchers) != len(want) {
				t.Errorf("canaryAlertsQuery(%q, %q) = %s: matchers %v, want %v", app, tag, query, selector.LabelMatchers, want)
			}
			for _, m := range selector.LabelMatchers {
				if v, ok := want[m.Name]; !ok || m.Type != labels.MatchEqual || m.Value != v {
					t.Errorf("canaryAlertsQuery(%q, %q) = %s: unexpected matcher %s", app, tag, query, m)
				}
			}
		}
	}
}

func TestSLOAlertsQueryParses(t *testing.T) {
	if _, err := parser.ParseExpr(sloAlertsQuery); err != nil {
		t.Fatalf("%s does not parse: %v", sloAlertsQuery, err)
	}
}

package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Names are what Describe calls the builds, the SLO and the wave. Empty
// names are left out (a build's becomes "the canary" or "the baseline").
type Names struct {
	// Canary and Baseline name the builds, e.g. their tags "v7" and "v6".
	Canary, Baseline string
	// SLO names the SLO whose counts were compared, e.g. "availability".
	SLO string
	// Wave names the wave the clusters are in, e.g. "us".
	Wave string
}

// Describe renders the verdict and its figures for people, in one line:
//
//	v7 fails availability: 2.3 % errors (412 of 17 880) against v6's 0.9 % (161 of 17 790) in wave us (3 clusters), one-sided p < 0.001; west is an outlier at 6.1 % (110 of 1 800) against 1.9 % (302 of 16 080) in the other clusters and v6's 0.9 % (55 of 5 930) there, p < 0.001
//	v7 passes availability: 0.9 % errors (160 of 17 880) against v6's 0.9 % (161 of 17 790) in wave us (3 clusters), one-sided p = 0.53
//	v7 holds availability: too few requests (v7 20, v6 17 790; each needs 3 236) in wave us (1 cluster)
//
// The p-values are Result.P and Outlier.P: adjusted for the tests made, so
// each compares with 1 − Confidence directly.
func (r Result) Describe(n Names) string {
	canary, baseline := or(n.Canary, "the canary"), or(n.Baseline, "the baseline")
	verb := map[Outcome]string{Pass: "passes", Fail: "fails", TooFew: "holds"}[r.Outcome]
	var b strings.Builder
	b.WriteString(canary + " " + verb)
	if n.SLO != "" {
		b.WriteString(" " + n.SLO)
	}
	b.WriteString(": ")
	where := clusters(len(r.Clusters))
	if n.Wave != "" {
		where = "wave " + n.Wave + " (" + where + ")"
	}
	if r.Outcome == TooFew {
		fmt.Fprintf(&b, "too few requests (%s %s, %s %s; each needs %s) in %s",
			canary, count(r.Canary.Requests), baseline, count(r.Baseline.Requests), count(r.MinRequests), where)
		return b.String()
	}
	fmt.Fprintf(&b, "%s errors %s against %s %s %s in %s, one-sided %s",
		percent(r.Canary), of(r.Canary), possessive(baseline), percent(r.Baseline), of(r.Baseline), where, pValue(r.P))
	for _, o := range r.Outliers {
		fmt.Fprintf(&b, "; %s is an outlier at %s %s against %s %s in the other clusters",
			o.Cluster, percent(o.Canary), of(o.Canary), percent(o.Others), of(o.Others))
		if o.BaselineCompared {
			fmt.Fprintf(&b, " and %s %s %s there", possessive(baseline), percent(o.Baseline), of(o.Baseline))
		}
		b.WriteString(", " + pValue(o.P))
	}
	return b.String()
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func possessive(name string) string { return name + "'s" }

func clusters(n int) string {
	switch n {
	case 0:
		return "no cluster"
	case 1:
		return "1 cluster"
	}
	return strconv.Itoa(n) + " clusters"
}

// of renders counts as "(412 of 17 880)".
func of(c Counts) string {
	return "(" + count(c.Errors) + " of " + count(c.Requests) + ")"
}

// count renders a count rounded to a whole number, its thousands apart:
// "17 880".
func count(v float64) string {
	digits := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// percent renders an error ratio as a percentage: one decimal from 0.1 %
// ("2.3 %"), two significant digits below ("0.052 %"), "0 %" for none.
func percent(c Counts) string {
	pct := 100 * c.Ratio()
	switch {
	case pct == 0:
		return "0 %"
	case pct < 0.0001:
		return "< 0.0001 %"
	case pct < 0.1:
		decimals := 1 - int(math.Floor(math.Log10(pct)))
		return strconv.FormatFloat(pct, 'f', decimals, 64) + " %"
	}
	return strconv.FormatFloat(pct, 'f', 1, 64) + " %"
}

// pValue renders a p-value as "p < 0.001", with three significant digits
// below 0.1 ("p = 0.0104", so that one just above 0.01 does not read as
// 0.01), and with two decimals from 0.1 ("p = 0.53").
func pValue(p float64) string {
	switch {
	case p < 0.001:
		return "p < 0.001"
	case p < 0.1:
		return "p = " + strconv.FormatFloat(p, 'f', 2-int(math.Floor(math.Log10(p))), 64)
	}
	return "p = " + strconv.FormatFloat(p, 'f', 2, 64)
}

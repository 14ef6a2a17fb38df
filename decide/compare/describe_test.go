package compare

import "testing"

// Test_count: whole numbers with their thousands apart, as in "17 880".
func Test_count(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 7.4: "7", 7.5: "8", 999: "999", 1000: "1 000", 17880: "17 880", 123456: "123 456", 1234567.2: "1 234 567", 1e15: "1 000 000 000 000 000",
	} {
		if got := count(v); got != want {
			t.Errorf("count(%g) = %q, want %q", v, got, want)
		}
	}
}

// Test_percent: one decimal from 0.1 %, two significant digits below.
func Test_percent(t *testing.T) {
	for _, tc := range []struct {
		c    Counts
		want string
	}{
		{Counts{17880, 412}, "2.3 %"},
		{Counts{17790, 161}, "0.9 %"},
		{Counts{1000, 1000}, "100.0 %"},
		{Counts{100000, 52}, "0.052 %"},
		{Counts{1000000, 9}, "0.00090 %"},
		{Counts{1e15, 1}, "< 0.0001 %"},
		{Counts{5000, 0}, "0 %"},
		{Counts{}, "0 %"},
	} {
		if got := percent(tc.c); got != tc.want {
			t.Errorf("percent(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}

// Test_pValue: below 0.001 as a bound, three significant digits below
// 0.1, two decimals above.
func Test_pValue(t *testing.T) {
	for p, want := range map[float64]string{
		0: "p < 0.001", 0.00099: "p < 0.001", 0.001: "p = 0.00100", 0.0104: "p = 0.0104", 0.00996: "p = 0.00996", 0.0999: "p = 0.0999", 0.53: "p = 0.53", 1: "p = 1.00",
	} {
		if got := pValue(p); got != want {
			t.Errorf("pValue(%g) = %q, want %q", p, got, want)
		}
	}
}

// TestResult_Describe_Names: without names, the builds are "the canary"
// and "the baseline", and the SLO and wave are left out.
func TestResult_Describe_Names(t *testing.T) {
	r := Compare(one(Counts{17880, 412}, Counts{17790, 161}))
	want := "the canary fails: 2.3 % errors (412 of 17 880) against the baseline's 0.9 % (161 of 17 790) in 1 cluster, one-sided p < 0.001"
	if got := r.Describe(Names{}); got != want {
		t.Errorf("Describe:\n got %s\nwant %s", got, want)
	}
	want = "v7 holds: too few requests (v7 0, the baseline 0; each needs 3 236) in no cluster"
	if got := Compare(Input{}).Describe(Names{Canary: "v7"}); got != want {
		t.Errorf("Describe:\n got %s\nwant %s", got, want)
	}
}

// TestResult_Describe_IssueExample: the issue's example, a canary at 2.3 %
// against 0.9 % in three clusters with west at 6.1 %, reads as the issue
// writes it, with the figures of the outlier's comparisons added.
func TestResult_Describe_IssueExample(t *testing.T) {
	in := Input{
		Canary:   map[string]Counts{"west": {1800, 110}, "east": {8000, 150}, "north": {8080, 152}},
		Baseline: map[string]Counts{"west": {5930, 55}, "east": {5930, 53}, "north": {5930, 53}},
	}
	want := "v7 fails availability: 2.3 % errors (412 of 17 880) against v6's 0.9 % (161 of 17 790) in wave us (3 clusters), one-sided p < 0.001; " +
		"west is an outlier at 6.1 % (110 of 1 800) against 1.9 % (302 of 16 080) in the other clusters and v6's 0.9 % (55 of 5 930) there, p < 0.001"
	if got := Compare(in).Describe(names); got != want {
		t.Errorf("Describe:\n got %s\nwant %s", got, want)
	}
}

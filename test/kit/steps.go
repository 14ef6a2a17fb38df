package kit

import (
	"slices"
	"testing"
	"time"
)

// Stamp is a value a ReleaseManager recorded for a build (a percent, a
// state) and when it recorded it.
type Stamp struct {
	Value string
	At    time.Time
}

// CheckSteps asserts that the ramp that started at release went through
// want (the percents in order) and held each percent at least delay, from
// the stamps the operator recorded in status.
func CheckSteps(t testing.TB, steps []Stamp, release time.Time, want []string, delay time.Duration) {
	t.Helper()
	if release.IsZero() {
		t.Fatalf("the release never started: %v", steps)
	}
	i := slices.IndexFunc(steps, func(s Stamp) bool { return !s.At.Before(release) && s.Value != "0" })
	if i < 0 {
		t.Fatalf("the ramp never started: %v", steps)
	}
	ramp := steps[i:]
	var got []string
	for _, s := range ramp {
		got = append(got, s.Value)
	}
	if !slices.Equal(got, want) {
		t.Errorf("ramp went through %v, want %v", got, want)
	}
	for j := 1; j < len(ramp); j++ {
		if held := ramp[j].At.Sub(ramp[j-1].At); held < delay {
			t.Errorf("%s%% held %v, less than the step delay %v", ramp[j-1].Value, held, delay)
		} else {
			t.Logf("%s%% held %v", ramp[j-1].Value, held.Round(time.Millisecond))
		}
	}
}

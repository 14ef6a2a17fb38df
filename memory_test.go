package main

import (
	"runtime/debug"
	"testing"
)

func TestCollectSooner(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int
	}{
		{"GOGC unset: the operator's default", map[string]string{}, defaultGCPercent},
		{"GOGC set: it decides", map[string]string{"GOGC": "200"}, 100},
		{"GOGC set empty: still the user's", map[string]string{"GOGC": ""}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			collectSooner(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
		})
	}
}

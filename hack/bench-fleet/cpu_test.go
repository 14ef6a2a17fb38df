package main

import (
	"math"
	"testing"
)

func TestParseMachineCPU(t *testing.T) {
	before, err := parseMachineCPU("cpu  100 10 50 800 40 5 5 0 7 0\ncpu0 50 5 25 400 20 2 3 0 0 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if before.busy != 170 || before.idle != 840 {
		t.Fatalf("busy %v idle %v, want 170 and 840 (guest is in user already)", before.busy, before.idle)
	}
	after := machineCPU{busy: before.busy + 150, idle: before.idle + 50}
	if got := before.idleShare(after); math.Abs(got-0.25) > 1e-9 {
		t.Fatalf("idle share %v, want 0.25", got)
	}
	if got := before.idleShare(before); got != 0 {
		t.Fatalf("idle share of no time %v, want 0", got)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2 3", "cpu 1 2 x 4 5 6 7 8"} {
		if _, err := parseMachineCPU(bad); err == nil {
			t.Errorf("parseMachineCPU(%q): no error", bad)
		}
	}
}

func TestReadMachineCPU(t *testing.T) {
	c, err := readMachineCPU()
	if err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	if c.busy <= 0 || c.idle < 0 {
		t.Fatalf("machine CPU %+v: want some busy time since boot", c)
	}
}

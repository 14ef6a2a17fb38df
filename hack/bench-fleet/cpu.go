package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// machineCPU is the machine's CPU time since boot, all cores together, in
// clock ticks (/proc/stat): busy and idle (waiting on I/O counted idle).
// A span's idle share says whether the machine's cores were the bound of
// what ran in it.
type machineCPU struct{ busy, idle float64 }

// readMachineCPU reads the machine's CPU time from /proc/stat.
func readMachineCPU() (machineCPU, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, fmt.Errorf("reading the machine's CPU time: %w", err)
	}
	return parseMachineCPU(string(stat))
}

// parseMachineCPU reads the first line of /proc/stat, the cores' sum:
// "cpu user nice system idle iowait irq softirq steal guest guest_nice".
// Guest time is counted in user already.
func parseMachineCPU(stat string) (machineCPU, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("/proc/stat: want a first line \"cpu\" with at least 8 figures, got %q", line)
	}
	var ticks [8]float64
	for i := range ticks {
		n, err := strconv.ParseUint(fields[i+1], 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("/proc/stat: figure %d of %q: %w", i+1, line, err)
		}
		ticks[i] = float64(n)
	}
	user, nice, system, idle, iowait, irq, softirq, steal := ticks[0], ticks[1], ticks[2], ticks[3], ticks[4], ticks[5], ticks[6], ticks[7]
	return machineCPU{busy: user + nice + system + irq + softirq + steal, idle: idle + iowait}, nil
}

// idleShare is the share of the machine's CPU time from c to later that
// was idle, 0 to 1; 0 when no time passed.
func (c machineCPU) idleShare(later machineCPU) float64 {
	busy, idle := later.busy-c.busy, later.idle-c.idle
	if busy+idle <= 0 {
		return 0
	}
	return idle / (busy + idle)
}

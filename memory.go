package main

import (
	"runtime/debug"
)

// defaultGCPercent is the operator's garbage collection target when GOGC
// is not set: the heap may grow by half its live size between collections,
// not by all of it (Go's default, 100).
//
// The operator's live heap is small (its caches, about 20 MB for 100 apps
// on two clusters), but a release decodes a stream of watch events and
// builds every object it applies: at Go's default the heap held about
// three times its live size after a release. At 50 the operator's resident
// set after a release of 100 apps is about a sixth smaller, for a few
// percent more of its CPU (docs/benchmarks.md, "The operator's memory").
// Prometheus sets its own default below Go's for the same reason. GOGC,
// when set, decides, and GOMEMLIMIT applies as always.
const defaultGCPercent = 50

// gcEnv is the variable that sets the garbage collection target.
const gcEnv = "GOGC"

// collectSooner sets the garbage collection target to defaultGCPercent,
// unless GOGC is set (lookup reads the environment: os.LookupEnv).
func collectSooner(lookup func(string) (string, bool)) {
	if _, set := lookup(gcEnv); set {
		return
	}
	debug.SetGCPercent(defaultGCPercent)
}

//go:build race

package main

// The test binary is built with the race detector: the operator it runs as
// a process is too, so that its build reuses the packages compiled for the
// test.
func init() { raceBuild = true }

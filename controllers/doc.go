// Package controllers holds Picchu's reconcilers and the options they share.
// The release decisions (state machine, traffic weights, replica maths,
// schedules) are pure functions in this package tree; the reconcilers
// snapshot, decide, act through plans, and record.
package controllers

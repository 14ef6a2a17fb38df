// Package datadog answers which Datadog monitors alert for a build (tag) of an
// app, so that Picchu can fail a canary or a release on them.
//
// The monitors of an app are those tagged app:<app>; its SLO monitors also
// carry slo:true and its canary monitors canary:true, the labels Picchu puts on
// its Prometheus alerts. A monitor alerts for a build when one of its groups
// names the build's tag (by default the group tag "tag:<tag>") and is in the
// Alert state. When such a group reports No Data, or Datadog cannot be asked,
// the answer is an error: the caller holds the release, never promoting on
// missing data and never failing on it.
//
// Every request carries a deadline, and answers are cached per app and kind of
// monitor (not per tag), bounded in time and size, with concurrent identical
// misses collapsed into one request.
package datadog

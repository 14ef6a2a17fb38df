// Package docs holds tests that the documents say what the code and the
// shipped manifests do.
package docs

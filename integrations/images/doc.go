// Package images inspects container images in their registries: the
// platforms (os, architecture, variant) an image reference offers, read
// once per digest with the credentials of the Revision's image pull
// secrets. Every request goes through a guard (guard.go) that bounds each
// response body, keeps to the image's registry and the allowed hosts, and
// sends no credentials over plain HTTP; failures are remembered for a
// backoff.
package images

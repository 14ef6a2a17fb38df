// Package images inspects container images in their registries: the
// platforms (os, architecture, variant) an image reference offers, read
// once per digest with the credentials of the Revision's image pull
// secrets.
package images

// Package access builds access to target clusters from their Cluster objects:
// a REST config from the Cluster's server and CA and the credentials in the
// Secret of the same name.
package access

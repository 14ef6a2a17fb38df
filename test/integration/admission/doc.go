// Package admission tests what Picchu's API accepts and rejects, against real
// API servers: one with only our CRDs installed (the schema alone must
// default and validate) and one that also calls our admission webhooks,
// served by the test process. It also checks the CRDs against the original
// operator's, field path by field path.
package admission

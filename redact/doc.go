// Package redact reports a failed request about a Secret without what the
// API server answered of it. An "Invalid" answer quotes the values it
// refuses, and the message of an admission webhook or policy can quote
// anything of the object sent: reported as they are, a Secret's values
// would reach conditions, events, Slack and the Revision's failed-reason.
// Describe says what went wrong; Wrap makes an error of it that still
// classifies as the answer (apierrors.IsInvalid, IsForbidden, ...).
// ClusterSecrets, Mirrors and the ReleaseManager's copies of a build's
// Secrets (through package applier) all report their failures this way.
package redact

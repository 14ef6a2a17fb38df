// Package mirror is the Mirror reconciler: it copies the Revisions that run
// somewhere at home, with their config, to another Picchu delivery cluster
// named by each Mirror of their namespace, and reports how that went in the
// Mirror's status and the picchu_mirror_failure_counter metric.
//
// It is a controller of its own, with its own queue: a mirror that cannot
// be reached, or refuses what it is sent, costs the release at home nothing.
// One run works on one Mirror and every Revision of its namespace:
//
//   - plan (pure, copies.go): which builds to copy (deployed, not
//     disableMirroring), and the shape of each copy: the ConfigMaps,
//     Secrets and ExternalSecrets of each target's configSelector, the
//     ConfigMaps and Secrets of the Mirror's additionalConfigSelectors,
//     then the Revision, spec copied with every external test disabled,
//     labels and annotations without Picchu's bookkeeping, no status;
//   - write (remote.go): each copy the mirror does not hold yet, server-side
//     applied as "picchu-mirror"; nothing is read from or written to the
//     mirror for a copy written or checked within the resync period whose
//     content has not changed since, so the steady state sends nothing; an
//     object there the Mirror did not write is left alone (NotOwned);
//   - follow deletions (controller.go, collect): a copy whose source is
//     deleted at home is deleted from the mirror;
//   - report (status.go, pure): the Mirror's Ready, Reconciling and Stalled
//     conditions, and a retry with backoff while something fails.
//
// docs/mirror.md says it for users.
package mirror

#!/usr/bin/env bash
# Orders the package list on stdin for `go test -p N`, which starts the
# packages' tests in the order it is given them: the longest first, so that
# the many short packages fill the time beside them instead of one long
# package running alone at the end; then the rest; then the packages whose
# tests time the release on the wall clock, once the test binaries are
# built and the long packages are done.
#
# test/integration/release is last: it checks each step of a release
# against its forecast to the second, and in the suite's first minutes
# (every test binary compiling, three packages starting their API servers)
# its first step landed 1.9 s after the forecast that assumes the build
# deploys at once. Alphabetically it came near the end, where it passed.
#
# The order is by measured duration (docs/development.md, "Test time"):
# update it when a package's time changes by a minute.
set -euo pipefail

slowest=(
	test/integration/controllers
	test/integration/mirror
	test/integration/platforms
	test/integration/admission
	test/integration/harness
	test/integration/clustersecrets
	test/integration/autoscaling
	test/integration/thirdparty
)
last=(
	test/integration/release
)

pkgs=$(cat)
for s in "${slowest[@]}"; do
	grep -E "/${s}\$" <<<"$pkgs" || true
done
pattern=$(printf '/%s$|' "${slowest[@]}" "${last[@]}")
grep -vE "${pattern%|}" <<<"$pkgs" || true
for s in "${last[@]}"; do
	grep -E "/${s}\$" <<<"$pkgs" || true
done

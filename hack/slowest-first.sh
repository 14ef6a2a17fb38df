#!/usr/bin/env bash
# Orders the package list on stdin for `go test -p N`, which starts the
# packages' tests in the order it is given them: the longest first, so that
# the many short packages fill the time beside them instead of one long
# package running alone at the end; then the rest.
#
# test/integration/release, the longest, comes after the other long ones,
# not first: it times a release against its forecast on the wall clock,
# and in the suite's first minutes (every test binary compiling, three
# packages starting their API servers) the first runs of its release came
# seconds late. By the time the long packages before it are under way, the
# test binaries are built. When it came last, it ran alone for its last
# four and a half minutes.
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
	test/integration/release
)

pkgs=$(cat)
for s in "${slowest[@]}"; do
	grep -E "/${s}\$" <<<"$pkgs" || true
done
pattern=$(printf '/%s$|' "${slowest[@]}")
grep -vE "${pattern%|}" <<<"$pkgs" || true

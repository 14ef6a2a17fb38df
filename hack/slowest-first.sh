#!/usr/bin/env bash
# Orders the package list on stdin for `go test -p N`, which starts the
# packages' tests in the order it is given them: the longest first, so that
# the many short packages fill the time beside them instead of the longest
# running alone at the end. On 2 cores, test/integration/release (about
# 5 minutes) started last alphabetically and ran alone for 4 of them.
#
# The order is by measured duration (docs/development.md, "Test time"):
# update it when a package's time changes by a minute.
set -euo pipefail

slowest=(
	test/integration/release
	test/integration/controllers
	test/integration/mirror
	test/integration/admission
	test/integration/platforms
	test/integration/harness
	test/integration/clustersecrets
	test/integration/autoscaling
	test/integration/thirdparty
)

pkgs=$(cat)
for s in "${slowest[@]}"; do
	grep -E "/${s}\$" <<<"$pkgs" || true
done
pattern=$(printf '/%s$|' "${slowest[@]}")
grep -vE "${pattern%|}" <<<"$pkgs" || true

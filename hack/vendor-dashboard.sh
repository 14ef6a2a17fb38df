#!/usr/bin/env bash
# Vendors the one front-end library the dashboard embeds, idiomorph (it puts a
# refreshed page section in place node by node, so focus and the nodes under
# the pointer stay), from npm at the version and integrity that
# hack/dashboard/package-lock.json pins, into
# cmd/kubectl-picchu/plugin/dashboard/vendor/ with its licence. The copy is
# committed: building and testing need neither npm nor the network; run this
# only to change the version (edit package.json, then
# `npm install --package-lock-only --ignore-scripts` in hack/dashboard).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/cmd/kubectl-picchu/plugin/dashboard/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp "$root/hack/dashboard/package.json" "$root/hack/dashboard/package-lock.json" "$work/"
# npm ci checks each package against the lock's integrity, and runs no
# package's scripts.
(cd "$work" && npm ci --ignore-scripts --no-audit --no-fund >&2)
mkdir -p "$out"
cp "$work/node_modules/idiomorph/dist/idiomorph.min.js" "$out/idiomorph.min.js"
cp "$work/node_modules/idiomorph/LICENSE" "$out/idiomorph.LICENSE"
version=$(cd "$work" && node -p 'require("./node_modules/idiomorph/package.json").version')
echo "vendored idiomorph $version into ${out#"$root"/}" >&2

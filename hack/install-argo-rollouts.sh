#!/usr/bin/env bash
# Provisions the peer that `make bench-peer` measures Picchu against, once,
# and prints its directory (that line alone on stdout; everything else goes
# to stderr): bin/argo-rollouts/<version>/ with
#   rollouts-controller  Argo Rollouts' controller, built from the Go module proxy;
#   crds/*.yaml          its CRDs, from the same module.
# The module is downloaded and built inside a copy of itself: its go.mod
# replaces k8s.io modules, which `go install module@version` refuses.
# Nothing is written outside the repository but Go's own module and build
# caches, and nothing needs root. A second run builds nothing.
set -euo pipefail

version=v1.10.0
module=github.com/argoproj/argo-rollouts
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir="$root/bin/argo-rollouts/$version"
binary="$dir/rollouts-controller"

log() { echo "install-argo-rollouts: $*" >&2; }
die() { log "error: $*"; exit 1; }

runs() { "$1" --help >/dev/null 2>&1; }

if [ -x "$binary" ] && runs "$binary" && [ -f "$dir/crds/rollout-crd.yaml" ]; then
  echo "$dir"
  exit 0
fi

command -v go >/dev/null || die "no go on PATH to build Argo Rollouts $version with"
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
log "building Argo Rollouts $version from the Go module proxy (once, about 4 minutes)"
src=$(cd "$tmp" && GOFLAGS= go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] && [ -d "$src" ] || die "go mod download $module@$version failed (is the Go module proxy reachable?)"
cp -r "$src" "$tmp/src"
chmod -R u+w "$tmp/src"
(cd "$tmp/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$tmp/rollouts-controller" ./cmd/rollouts-controller >&2) ||
  die "building $module@$version ./cmd/rollouts-controller failed"
runs "$tmp/rollouts-controller" || die "the Argo Rollouts controller just built does not run"
mkdir -p "$dir/crds"
cp "$tmp/src"/manifests/crds/*-crd.yaml "$dir/crds/"
# Copy, then rename, so that a concurrent run never sees half a binary.
cp "$tmp/rollouts-controller" "$binary.tmp.$$"
mv -f "$binary.tmp.$$" "$binary"
log "installed Argo Rollouts $version in $dir"
echo "$dir"

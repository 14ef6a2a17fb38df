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

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/progress.sh
source "$root/hack/lib/progress.sh"
PROGRESS_PREFIX=install-argo-rollouts

version=v1.10.0
module=github.com/argoproj/argo-rollouts
dir="$root/bin/argo-rollouts/$version"
binary="$dir/rollouts-controller"

die() { progress_log "error: $*"; exit 1; }

# runs checks that a candidate binary executes.
runs() { "$1" --help >/dev/null 2>&1; }

if [ -x "$binary" ] && runs "$binary" && [ -f "$dir/crds/rollout-crd.yaml" ]; then
  echo "$dir"
  exit 0
fi

command -v go >/dev/null || die "no go on PATH to build Argo Rollouts $version with"
mkdir -p "$dir"
# Build in a fresh directory, then move into place, so that a build cut
# short (or a concurrent run) never leaves a binary that looks whole.
out=$(mktemp -d "$dir/.build.XXXXXX")
trap 'chmod -R u+w "$out" 2>/dev/null; rm -rf "$out"' EXIT
progress_log "building Argo Rollouts $version into bin/: the first time, about 4 minutes on 2 cores"
src=$(cd "$out" && GOFLAGS= go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] && [ -d "$src" ] || die "go mod download $module@$version failed (is the Go module proxy reachable?)"
cp -r "$src" "$out/src"
chmod -R u+w "$out/src"
(cd "$out/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 progress_build "Argo Rollouts $version" 0 \
  go build -v -o "$out/rollouts-controller" ./cmd/rollouts-controller) || die "building $module@$version ./cmd/rollouts-controller failed"
runs "$out/rollouts-controller" || die "the Argo Rollouts controller just built does not run"
mkdir -p "$dir/crds"
cp "$out/src"/manifests/crds/*-crd.yaml "$dir/crds/"
mv -f "$out/rollouts-controller" "$binary"
progress_log "installed Argo Rollouts $version in $dir"
echo "$dir"

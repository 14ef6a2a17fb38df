#!/usr/bin/env bash
# Provisions golangci-lint, which `make verify` runs with .golangci.yml, once,
# and prints the path of its binary (that line alone on stdout; everything
# else goes to stderr): bin/golangci-lint/<version>/golangci-lint, built from
# the Go module proxy by go install (module
# github.com/golangci/golangci-lint/v2) with the local Go toolchain, the one
# that builds picchu, so it reads the Go version go.mod names. A second run
# finds the binary of the first and builds nothing; a change of the version
# below (or GOLANGCI_LINT_VERSION) builds again.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/progress.sh
source "$root/hack/lib/progress.sh"
PROGRESS_PREFIX=install-golangci-lint

version=${GOLANGCI_LINT_VERSION:-v2.15.0}
module=github.com/golangci/golangci-lint/v2
dir="$root/bin/golangci-lint/$version"
binary="$dir/golangci-lint"

# runs checks that a candidate binary executes and prints its version.
runs() { "$1" version >/dev/null 2>&1; }

if [ -x "$binary" ] && runs "$binary"; then
  echo "$binary"
  exit 0
fi

# Install into a fresh directory, then move the binary into place, so that a
# build cut short (or a concurrent run) never leaves a binary that looks whole.
mkdir -p "$dir"
out=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$out"' EXIT
progress_log "building golangci-lint $version into bin/: the first time, 2 to 8 minutes on 2 cores"
# Outside the module, so that its go.mod and GOFLAGS play no part.
(cd "$out" && GOFLAGS= CGO_ENABLED=0 progress_build "golangci-lint $version" 0 \
  env GOBIN="$out" go install -v "$module/cmd/golangci-lint@$version")
runs "$out/golangci-lint" || { progress_log "error: the golangci-lint built does not run"; exit 1; }
mv -f "$out/golangci-lint" "$binary"
progress_log "installed golangci-lint $version at $binary"
echo "$binary"

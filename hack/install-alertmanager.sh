#!/usr/bin/env bash
# Provisions the Alertmanager the tests run, once, and prints the path of its
# binary (that line alone on stdout; everything else goes to stderr):
#   1. bin/alertmanager/<version>/alertmanager when an earlier run put it there;
#   2. otherwise Alertmanager <version> built from the Go module proxy with
#      go install, into bin/alertmanager/<version>/.
# Nothing is written outside the repository but Go's own module and build
# caches, and nothing needs root. (Debian's prometheus-alertmanager, used
# before, reads its default templates from /usr/share/prometheus/alertmanager,
# a path built into its binary, and does not start without them there; the
# upstream build embeds them.) v0.28.1 is the last release whose module holds
# its web UI's files, which its build embeds; later modules leave them out
# and do not build with go install.
# A second run finds the binary of the first and builds nothing.
set -euo pipefail

version=0.28.1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir="$root/bin/alertmanager/$version"
binary="$dir/alertmanager"

log() { echo "install-alertmanager: $*" >&2; }
die() { log "error: $*"; exit 1; }

# runs checks that a candidate binary executes and prints its version.
runs() { "$1" --version >/dev/null 2>&1; }

if [ -x "$binary" ] && runs "$binary"; then
  echo "$binary"
  exit 0
fi

command -v go >/dev/null || die "no go on PATH to build Alertmanager $version with"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log "building Alertmanager $version from the Go module proxy (once)"
# Outside this module, so that its go.mod plays no part; the version is
# stamped as the release's own build does.
(cd "$tmp" && GOFLAGS= GOBIN="$tmp/bin" CGO_ENABLED=0 go install \
  -ldflags "-X github.com/prometheus/common/version.Version=$version" \
  "github.com/prometheus/alertmanager/cmd/alertmanager@v$version" >&2) ||
  die "go install of github.com/prometheus/alertmanager/cmd/alertmanager@v$version failed (is the Go module proxy reachable?)"
runs "$tmp/bin/alertmanager" || die "the Alertmanager $version just built does not run"
mkdir -p "$dir"
# Copy, then rename, so that a concurrent run never sees half a binary.
cp "$tmp/bin/alertmanager" "$binary.tmp.$$"
mv -f "$binary.tmp.$$" "$binary"
log "installed Alertmanager $version at $binary"
echo "$binary"

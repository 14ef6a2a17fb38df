#!/usr/bin/env bash
# Runs a make target (test by default) in a fresh clone of this repository
# as a user who is not root, and lists every file it created or changed
# outside the clone, the temporary directories and the user's Go caches
# (GOPATH/pkg: modules and checksums; the build cache; telemetry counters).
# It exits 1 when there is one, or when the target fails. Run it as root
# (it creates the user when missing) on a machine where nothing else is
# writing:
#
#   hack/check-writes.sh [user] [make target]
#
# The user's HOME gets its own Go caches, so the first run downloads and
# builds every module. Files written by other processes meanwhile (a log,
# an editor) are listed too: read the list.
set -euo pipefail

user=${1:-picchu-check}
target=${2:-test}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { echo "check-writes: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root: it runs make as another user"
if ! id "$user" >/dev/null 2>&1; then
  log "creating the user $user"
  useradd --create-home --shell /bin/bash "$user"
fi
home=$(getent passwd "$user" | cut -d: -f6)
[ -n "$home" ] && [ -d "$home" ] || die "$user has no home directory"
go=$(command -v go) || die "no go on PATH"
goroot=$("$go" env GOROOT)

clone="$home/picchu-check"
rm -rf "$clone"
marker=$(mktemp)
# The clone is made by the user, from a copy it may read.
bundle=$(mktemp --suffix=.bundle)
git -C "$root" bundle create "$bundle" HEAD >&2
chmod 644 "$bundle"
su "$user" -c "git clone --quiet '$bundle' '$clone'"
rm -f "$bundle"
touch "$marker"
sleep 1 # file times are compared to the marker's, to the second on some file systems

log "make $target in $clone as $user"
status=0
su "$user" -c "export PATH='$goroot/bin:/usr/local/bin:/usr/bin:/bin' GOFLAGS=-count=1; cd '$clone' && make $target" || status=$?
log "make $target exited with $status"

gopkg=$(su "$user" -c "'$goroot/bin/go' env GOPATH")/pkg
gocache=$(su "$user" -c "'$goroot/bin/go' env GOCACHE")
gotelemetry=$(su "$user" -c "'$goroot/bin/go' env GOTELEMETRYDIR")
written=$(find / \( -path /proc -o -path /sys -o -path /dev -o -path /run \
  -o -path "$clone" -o -path /tmp -o -path /var/tmp -o -path "$gopkg" \
  -o -path "$gocache" -o -path "$gotelemetry" -o -path "$marker" \) -prune -o -newer "$marker" \
  \( -type f -o -type l \) -print 2>/dev/null || true)
rm -f "$marker"
if [ -n "$written" ]; then
  log "written outside $clone, the temporary directories and the Go caches:"
  echo "$written"
  exit 1
fi
log "nothing written outside $clone, the temporary directories and the Go caches"
exit "$status"

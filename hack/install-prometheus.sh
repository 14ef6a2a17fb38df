#!/usr/bin/env bash
# Provisions the Prometheus server the tests run, once, and prints the path of
# its binary (that line alone on stdout; everything else goes to stderr):
#   1. bin/prometheus/<version>/prometheus when an earlier run put it there;
#   2. otherwise a prometheus already on PATH;
#   3. otherwise the binary of Debian's prometheus package, fetched with
#      apt-get download and unpacked with dpkg-deb -x, so no service is
#      installed or started, and copied to bin/prometheus/<version>/;
#   4. when that fails, apt-get install of the package (with services kept
#      from starting), and the /usr/bin/prometheus it installs.
# A second run finds the binary of the first and downloads nothing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prom_root="$root/bin/prometheus"

log() { echo "install-prometheus: $*" >&2; }
die() { log "error: $*"; exit 1; }

# runs checks that a candidate binary executes and prints its version.
runs() { "$1" --version >/dev/null 2>&1; }

# 1. A binary an earlier run installed: the highest version there.
if [ -d "$prom_root" ]; then
  while IFS= read -r dir; do
    if [ -x "$prom_root/$dir/prometheus" ] && runs "$prom_root/$dir/prometheus"; then
      echo "$prom_root/$dir/prometheus"
      exit 0
    fi
  done < <(ls -1 "$prom_root" | sort -rV)
fi

# 2. One on PATH.
if path=$(command -v prometheus 2>/dev/null) && runs "$path"; then
  echo "$path"
  exit 0
fi

# 3. Debian's package, downloaded and unpacked, never installed.
# shellcheck source=lib/debian.sh
source "$root/hack/lib/debian.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

installed=""
if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
  log "downloading Debian's prometheus package"
  debian_download "$tmp" prometheus || true
  deb=$(ls -1 "$tmp"/prometheus_*.deb 2>/dev/null | head -n 1 || true)
  if [ -n "$deb" ]; then
    # Debian's version without epoch and packaging suffix: 2.42.0+ds-5+b6 -> 2.42.0.
    version=$(dpkg-deb -f "$deb" Version)
    version=${version#*:}
    version=${version%%[+~-]*}
    dpkg-deb -x "$deb" "$tmp/root"
    [ -x "$tmp/root/usr/bin/prometheus" ] || die "$deb holds no usr/bin/prometheus"
    runs "$tmp/root/usr/bin/prometheus" || die "the prometheus binary of $deb does not run"
    mkdir -p "$prom_root/$version"
    # Copy, then rename, so that a concurrent run never sees half a binary.
    cp "$tmp/root/usr/bin/prometheus" "$prom_root/$version/prometheus.tmp.$$"
    mv -f "$prom_root/$version/prometheus.tmp.$$" "$prom_root/$version/prometheus"
    installed="$prom_root/$version/prometheus"
    log "installed Prometheus $version at $installed"
  fi
fi

# 4. Installing the package, without starting its service.
if [ -z "$installed" ] && command -v apt-get >/dev/null; then
  log "installing Debian's prometheus package"
  policy=/usr/sbin/policy-rc.d
  own_policy=""
  if [ ! -e "$policy" ] && as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"; then
    own_policy=1
  fi
  if as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >&2; then
    if path=$(command -v prometheus 2>/dev/null) && runs "$path"; then
      installed="$path"
    fi
  fi
  [ -z "$own_policy" ] || as_root rm -f "$policy"
fi

[ -n "$installed" ] || die "no Prometheus: none under $prom_root, none on PATH, and Debian's prometheus package could be neither downloaded nor installed (is apt-get available and a Debian mirror reachable?)"
echo "$installed"

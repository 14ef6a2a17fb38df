#!/usr/bin/env bash
# Provisions the headless Chromium the dashboard's browser tests drive, once,
# and prints the path of a command that starts it (that line alone on stdout;
# everything else goes to stderr):
#   1. bin/chromium/<version>/chromium when an earlier run put it there;
#   2. otherwise a chromium already on PATH;
#   3. otherwise Debian's chromium package and the libraries it needs that this
#      machine lacks (as apt-get would install them, without recommends),
#      fetched with apt-get download and unpacked with dpkg-deb -x under
#      bin/chromium/<version>/root, so nothing is installed system-wide; a
#      small script beside it starts the browser with those libraries;
#   4. when that fails, apt-get install of the package, and /usr/bin/chromium.
# A second run finds the browser of the first and downloads nothing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chromium_root="$root/bin/chromium"

log() { echo "install-chromium: $*" >&2; }
die() { log "error: $*"; exit 1; }

# runs checks that a candidate starts and prints its version.
runs() { "$1" --version >/dev/null 2>&1; }

# 1. A browser an earlier run installed: the highest version there.
if [ -d "$chromium_root" ]; then
  while IFS= read -r dir; do
    if [ -x "$chromium_root/$dir/chromium" ] && runs "$chromium_root/$dir/chromium"; then
      echo "$chromium_root/$dir/chromium"
      exit 0
    fi
  done < <(ls -1 "$chromium_root" | sort -rV)
fi

# 2. One on PATH.
for name in chromium chromium-browser; do
  if path=$(command -v "$name" 2>/dev/null) && runs "$path"; then
    echo "$path"
    exit 0
  fi
done

# shellcheck source=lib/debian.sh
source "$root/hack/lib/debian.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# missing lists the packages apt-get would install for chromium here.
missing() {
  apt-get install -s --no-install-recommends chromium 2>/dev/null | awk '/^Inst /{print $2}'
}

installed=""
if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
  log "downloading Debian's chromium package and the libraries this machine lacks"
  pkgs=$(missing)
  if [ -z "$pkgs" ]; then
    # Without package lists apt-get knows no chromium: update them once.
    as_root apt-get update >&2 || log "apt-get update failed"
    pkgs=$(missing)
  fi
  # shellcheck disable=SC2086 # one word per package
  [ -z "$pkgs" ] || debian_download "$tmp" $pkgs || true
  deb=$(ls -1 "$tmp"/chromium_*.deb 2>/dev/null | head -n 1 || true)
  if [ -n "$deb" ]; then
    # Debian's version without epoch and packaging suffix: 148.0.7778.167-1~deb12u1 -> 148.0.7778.167.
    version=$(dpkg-deb -f "$deb" Version)
    version=${version#*:}
    version=${version%%[+~-]*}
    for d in "$tmp"/*.deb; do
      dpkg-deb -x "$d" "$tmp/root"
    done
    [ -x "$tmp/root/usr/lib/chromium/chromium" ] || die "$deb holds no usr/lib/chromium/chromium"
    # Unpacked beside its final place, then renamed, so that a concurrent
    # run never sees half a browser.
    mkdir -p "$chromium_root"
    stage="$chromium_root/.$version.$$"
    rm -rf "$stage"
    mkdir -p "$stage"
    mv "$tmp/root" "$stage/root"
    libs=""
    for dir in "$stage"/root/usr/lib/*-linux-gnu "$stage"/root/usr/lib/*-linux-gnu/*/; do
      [ -d "$dir" ] && libs="$libs:${dir#"$stage"/}"
    done
    cat >"$stage/chromium" <<EOF
#!/bin/sh
# Starts the Chromium that hack/install-chromium.sh unpacked here, with the
# libraries it unpacked beside it.
here=\$(cd "\$(dirname "\$0")" && pwd)
libs="$libs"
LD_LIBRARY_PATH="\$(echo "\$libs" | sed "s|:|:\$here/|g" | cut -c2-)\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "\$here/root/usr/lib/chromium/chromium" "\$@"
EOF
    chmod 755 "$stage/chromium"
    runs "$stage/chromium" || { "$stage/chromium" --version >&2 || true; rm -rf "$stage"; die "the chromium of $deb does not start"; }
    rm -rf "${chromium_root:?}/$version"
    mv "$stage" "$chromium_root/$version"
    installed="$chromium_root/$version/chromium"
    log "installed Chromium $version at $installed"
  fi
fi

# 4. Installing the package.
if [ -z "$installed" ] && command -v apt-get >/dev/null; then
  log "installing Debian's chromium package"
  if as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >&2; then
    if path=$(command -v chromium 2>/dev/null) && runs "$path"; then
      installed="$path"
    fi
  fi
fi

[ -n "$installed" ] || die "no Chromium: none under $chromium_root, none on PATH, and Debian's chromium package could be neither downloaded nor installed (is apt-get available and a Debian mirror reachable?)"
echo "$installed"

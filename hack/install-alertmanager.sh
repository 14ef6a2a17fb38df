#!/usr/bin/env bash
# Provisions the Alertmanager the tests run, once, and prints the path of its
# binary (that line alone on stdout; everything else goes to stderr):
#   1. bin/alertmanager/<version>/alertmanager when an earlier run put it there;
#   2. otherwise an alertmanager (or Debian's prometheus-alertmanager) on PATH;
#   3. otherwise the binary of Debian's prometheus-alertmanager package,
#      fetched with apt-get download and unpacked with dpkg-deb -x, so no
#      service is installed or started, and copied to bin/alertmanager/<version>/;
#   4. when that fails, apt-get install of the package (with services kept
#      from starting), and the /usr/bin/prometheus-alertmanager it installs.
# Debian's build reads its default notification templates from
# /usr/share/prometheus/alertmanager (default.tmpl, email.tmpl), a path built
# into the binary, and exits without them: the templates of the package are
# kept beside the binary, and copied there (as root, or with sudo) when
# missing, as installing the package would.
# A second run finds the binary of the first and downloads nothing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
am_root="$root/bin/alertmanager"
package=prometheus-alertmanager

log() { echo "install-alertmanager: $*" >&2; }
die() { log "error: $*"; exit 1; }

# runs checks that a candidate binary executes and prints its version.
runs() { "$1" --version >/dev/null 2>&1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

# Where Debian's build reads its default templates.
templates=/usr/share/prometheus/alertmanager
template_files="default.tmpl email.tmpl"

# templates_from copies the templates kept in $1 to $templates when missing.
templates_from() {
  local f missing=""
  for f in $template_files; do
    [ -f "$templates/$f" ] || missing=1
  done
  [ -n "$missing" ] || return 0
  for f in $template_files; do
    [ -f "$1/$f" ] || die "no $f beside the binary in $1 to copy to $templates"
  done
  log "copying Alertmanager's default templates to $templates, where Debian's build reads them"
  as_root mkdir -p "$templates" && (cd "$1" && as_root cp $template_files "$templates/") ||
    die "cannot write $templates (neither root nor sudo): Debian's Alertmanager does not start without its templates there"
}

# 1. A binary an earlier run installed: the highest version there.
if [ -d "$am_root" ]; then
  while IFS= read -r dir; do
    if [ -x "$am_root/$dir/alertmanager" ] && runs "$am_root/$dir/alertmanager"; then
      templates_from "$am_root/$dir"
      echo "$am_root/$dir/alertmanager"
      exit 0
    fi
  done < <(ls -1 "$am_root" | sort -rV)
fi

# 2. One on PATH.
for name in alertmanager prometheus-alertmanager; do
  if path=$(command -v "$name" 2>/dev/null) && runs "$path"; then
    echo "$path"
    exit 0
  fi
done

# 3. Debian's package, downloaded and unpacked, never installed.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt-get download fetches as the _apt user when run as root, which must be
# able to write here (else it warns and fetches as root).
if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
  chown _apt "$tmp"
fi

download() {
  (cd "$tmp" && apt-get download "$package" >&2)
}

installed=""
if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
  log "downloading Debian's $package package"
  if ! download; then
    log "apt-get download failed; updating the package lists and retrying"
    as_root apt-get update >&2 || log "apt-get update failed"
    download || log "apt-get download failed again"
  fi
  deb=$(ls -1 "$tmp"/"$package"_*.deb 2>/dev/null | head -n 1 || true)
  if [ -n "$deb" ]; then
    # Debian's version without epoch and packaging suffix: 0.25.0-1+b4 -> 0.25.0.
    version=$(dpkg-deb -f "$deb" Version)
    version=${version#*:}
    version=${version%%[+~-]*}
    dpkg-deb -x "$deb" "$tmp/root"
    binary="$tmp/root/usr/bin/$package"
    [ -x "$binary" ] || die "$deb holds no usr/bin/$package"
    runs "$binary" || die "the $package binary of $deb does not run"
    mkdir -p "$am_root/$version"
    for f in $template_files; do
      cp "$tmp/root$templates/$f" "$am_root/$version/$f" || die "$deb holds no $templates/$f"
    done
    templates_from "$am_root/$version"
    # Copy, then rename, so that a concurrent run never sees half a binary
    # (the templates go first: a binary found means they are there).
    cp "$binary" "$am_root/$version/alertmanager.tmp.$$"
    mv -f "$am_root/$version/alertmanager.tmp.$$" "$am_root/$version/alertmanager"
    installed="$am_root/$version/alertmanager"
    log "installed Alertmanager $version at $installed"
  fi
fi

# 4. Installing the package, without starting its service.
if [ -z "$installed" ] && command -v apt-get >/dev/null; then
  log "installing Debian's $package package"
  policy=/usr/sbin/policy-rc.d
  own_policy=""
  if [ ! -e "$policy" ] && as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"; then
    own_policy=1
  fi
  if as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$package" >&2; then
    if path=$(command -v "$package" 2>/dev/null) && runs "$path"; then
      installed="$path"
    fi
  fi
  [ -z "$own_policy" ] || as_root rm -f "$policy"
fi

[ -n "$installed" ] || die "no Alertmanager: none under $am_root, none on PATH, and Debian's $package package could be neither downloaded nor installed (is apt-get available and a Debian mirror reachable?)"
echo "$installed"

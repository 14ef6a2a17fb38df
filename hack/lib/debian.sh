# Shared by the hack/ scripts that take a program from Debian's packages
# without installing it (install-prometheus.sh, install-chromium.sh).
# Source it after defining log, then:
#   as_root COMMAND...          runs COMMAND as root (directly, or with sudo)
#   debian_download DIR PKG...  fetches the packages' .deb files into DIR with
#                               apt-get download, updating the package lists
#                               and retrying once when that fails

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

debian_download() {
  local dir=$1
  shift
  # apt-get download fetches as the _apt user when run as root, which must
  # be able to write there (else it warns and fetches as root).
  if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
    chown _apt "$dir"
  fi
  if (cd "$dir" && apt-get download "$@" >&2); then
    return 0
  fi
  log "apt-get download failed; updating the package lists and retrying"
  as_root apt-get update >&2 || log "apt-get update failed"
  (cd "$dir" && apt-get download "$@" >&2) || { log "apt-get download failed again"; return 1; }
}

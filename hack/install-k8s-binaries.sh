#!/usr/bin/env bash
# Provisions the Kubernetes binaries the tests and the local fleet run, once,
# into bin/k8s/<kubernetes version>/:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
#   kwok and kwokctl,
# the Kubernetes ones and etcd built from the Go module proxy by one
# "go build" in the module hack/k8s, which pins their versions (so they
# compile in parallel and share every package they have in common), kwok
# installed from its own module; and bin/kubectl, a link to that kubectl,
# for people. A second run builds nothing; a change of any version
# in hack/k8s (recorded in the directory's .versions) builds again. Prints the
# directory (KUBEBUILDER_ASSETS) on stdout; progress goes to stderr: what is
# built, every 15 s how many packages are compiled, and each binary as it is
# done, with the time elapsed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/progress.sh
source "$root/hack/lib/progress.sh"
PROGRESS_PREFIX=install-k8s-binaries
cd "$root/hack/k8s"
export GOFLAGS=-mod=mod CGO_ENABLED=0

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
# kwok v0.7.0 runs nodes and pods with its built-in fast stages; it is
# installed from its own module (v0.8 needs stage files the fleet's kwokctl
# and the tests would have to be given).
kwok_version=v0.7.0
versions="Kubernetes $k8s_version, etcd $etcd_version, kwok $kwok_version"
dir="$root/bin/k8s/$k8s_version"
mkdir -p "$dir"

# name -> package. go build names etcd's binary after its package's
# directory, "server"; it is renamed.
declare -A pkg=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
)
names=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
built_name() { if [ "$1" = etcd ]; then echo server; else echo "$1"; fi; }

wanted=$versions
have=$(cat "$dir/.versions" 2>/dev/null || true)
missing=()
for bin in "${names[@]}"; do
  if [ "$have" != "$wanted" ] || [ ! -x "$dir/$bin" ] || [ ! -x "$dir/kwok" ] || [ ! -x "$dir/kwokctl" ]; then missing+=("$bin"); fi
done

if [ ${#missing[@]} -gt 0 ]; then
  start=$SECONDS
  progress_log "building ${missing[*]} ($versions) into bin/: the first time, about 9 minutes on 2 cores"
  progress_log "downloading the Go modules they need and counting their packages"
  pkgs=()
  for bin in "${missing[@]}"; do pkgs+=("${pkg[$bin]}"); done
  total=$(progress_count "${pkgs[@]}")
  progress_log "  $total packages to compile ($(progress_elapsed $((SECONDS - start))))"

  # The version stamped into the Kubernetes binaries, as its own release
  # builds do, so /version and the API server's compatibility checks see a
  # release.
  minor=${k8s_version#v1.}
  minor=${minor%%.*}
  ldflags="-s -w \
   -X k8s.io/component-base/version.gitVersion=$k8s_version \
   -X k8s.io/component-base/version.gitMajor=1 \
   -X k8s.io/component-base/version.gitMinor=$minor \
   -X k8s.io/component-base/version.gitTreeState=clean \
   -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"

  # Build into a fresh directory, then move each binary into place, so
  # that a build cut short never leaves a binary that looks whole.
  out=$(mktemp -d "$dir/.build.XXXXXX")
  log=$(mktemp)
  trap 'rm -rf "$out" "$log"' EXIT
  go build -v -trimpath -ldflags "$ldflags" -o "$out/" "${pkgs[@]}" 2>"$log" &
  pid=$!
  next=$((SECONDS + PROGRESS_EVERY))
  pending=("${missing[@]}")
  while :; do
    running=1
    kill -0 "$pid" 2>/dev/null || running=0
    left=()
    for bin in "${pending[@]}"; do
      if [ -x "$out/$(built_name "$bin")" ]; then
        progress_log "  built $bin ($(progress_elapsed $((SECONDS - start))))"
      else
        left+=("$bin")
      fi
    done
    pending=("${left[@]+"${left[@]}"}")
    [ "$running" = 1 ] || break
    if [ "$SECONDS" -ge "$next" ]; then
      progress_compiled "$log" "" "$total" "$start"
      next=$((SECONDS + PROGRESS_EVERY))
    fi
    sleep 1
  done
  if ! wait "$pid"; then
    progress_log "building failed after $(progress_elapsed $((SECONDS - start))):"
    grep -v '^go: downloading' "$log" | tail -n 30 >&2
    exit 1
  fi
  for bin in "${missing[@]}"; do
    mv -f "$out/$(built_name "$bin")" "$dir/$bin"
  done
  for bin in kwok kwokctl; do
    progress_build "$bin $kwok_version" 0 \
      env GOBIN="$out" GOFLAGS= go install -v "sigs.k8s.io/kwok/cmd/$bin@$kwok_version"
    mv -f "$out/$bin" "$dir/$bin"
  done
  echo "$wanted" >"$dir/.versions"
  progress_log "built ${missing[*]} in $(progress_elapsed $((SECONDS - start)))"
fi
ln -sfn "k8s/$k8s_version/kubectl" "$root/bin/kubectl"
echo "$dir"

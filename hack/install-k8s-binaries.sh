#!/usr/bin/env bash
# Provisions the Kubernetes binaries the tests and the local fleet run, once,
# under bin/:
#   bin/k8s/<version>/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kubectl}
#     built from the Go module proxy with the module in hack/k8s;
#   bin/kwok/<version>/{kwok,kwokctl}
#     installed with go install;
#   bin/kubectl, a link to the kubectl above, for people.
# The version is part of each path, so a bump rebuilds and a second run builds
# nothing. Prints the directory of the Kubernetes binaries (KUBEBUILDER_ASSETS)
# on stdout; progress (each binary as it starts and finishes, and every 15 s
# how far along it is) goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/progress.sh
source "$root/hack/lib/progress.sh"
PROGRESS_PREFIX=install-k8s-binaries
cd "$root/hack/k8s"
export GOFLAGS=-mod=mod CGO_ENABLED=0

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
kwok_version=${KWOK_VERSION:-v0.7.0}
k8s_dir="$root/bin/k8s/$k8s_version"
kwok_dir="$root/bin/kwok/$kwok_version"
mkdir -p "$k8s_dir" "$kwok_dir"

# The version stamped into the binaries, as Kubernetes' own release builds do,
# so that /version and the API server's compatibility checks see a release.
minor=${k8s_version#v1.}
minor=${minor%%.*}
ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=$k8s_version \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=$k8s_version"

# name -> package, in build order: etcd first (small), then kube-apiserver,
# which compiles most of what the others share.
declare -A pkg=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
)
order=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)

missing=()
for bin in "${order[@]}"; do
  [ -x "$k8s_dir/$bin" ] || missing+=("$bin")
done
if [ ${#missing[@]} -gt 0 ]; then
  start=$SECONDS
  progress_log "building ${missing[*]} (Kubernetes $k8s_version, etcd $etcd_version) into bin/: the first time, about 8 minutes on 2 cores"
  progress_log "downloading the Go modules they need and counting their packages"
  pkgs=()
  for bin in "${missing[@]}"; do pkgs+=("${pkg[$bin]}"); done
  total=$(progress_count "${pkgs[@]}")
  progress_log "  $total packages in all ($(progress_elapsed $((SECONDS - start))))"
  for bin in "${missing[@]}"; do
    flags=$ldflags
    [ "$bin" != etcd ] || flags="-s -w"
    # Build beside the target, then rename, so that a build cut short never
    # leaves a binary that looks whole.
    progress_build "$bin" "$(progress_count "${pkg[$bin]}")" \
      go build -v -trimpath -ldflags "$flags" -o "$k8s_dir/$bin.tmp" "${pkg[$bin]}"
    mv -f "$k8s_dir/$bin.tmp" "$k8s_dir/$bin"
  done
  progress_log "built ${missing[*]} in $(progress_elapsed $((SECONDS - start)))"
fi
ln -sfn "k8s/$k8s_version/kubectl" "$root/bin/kubectl"

for bin in kwok kwokctl; do
  if [ ! -x "$kwok_dir/$bin" ]; then
    progress_build "$bin $kwok_version" 0 \
      env GOBIN="$kwok_dir" GOFLAGS= go install -v "sigs.k8s.io/kwok/cmd/$bin@$kwok_version"
  fi
done
echo "$k8s_dir"

#!/usr/bin/env bash
# Provisions the Kubernetes binaries the tests run, once, under bin/:
#   bin/k8s/<version>/{kube-apiserver,kube-controller-manager,kube-scheduler,etcd}
#     built from the Go module proxy with the module in hack/k8s;
#   bin/kwok/<version>/{kwok,kwokctl}
#     installed with go install.
# The version is part of each path, so a bump rebuilds and a second run builds
# nothing. Prints the directory of the Kubernetes binaries (KUBEBUILDER_ASSETS).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root/hack/k8s"

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
kwok_version=${KWOK_VERSION:-v0.7.0}
k8s_dir="$root/bin/k8s/$k8s_version"
kwok_dir="$root/bin/kwok/$kwok_version"
mkdir -p "$k8s_dir" "$kwok_dir"

log() { echo "install-k8s-binaries: $*" >&2; }

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

missing=()
for bin in kube-apiserver kube-controller-manager kube-scheduler; do
  [ -x "$k8s_dir/$bin" ] || missing+=("k8s.io/kubernetes/cmd/$bin")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "building ${missing[*]} $k8s_version (about 5 minutes the first time)"
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$k8s_dir/" "${missing[@]}"
fi
if [ ! -x "$k8s_dir/etcd" ]; then
  log "building etcd $etcd_version"
  GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$k8s_dir/etcd" go.etcd.io/etcd/server/v3
fi
for bin in kwok kwokctl; do
  if [ ! -x "$kwok_dir/$bin" ]; then
    log "installing $bin $kwok_version"
    GOBIN="$kwok_dir" CGO_ENABLED=0 go install "sigs.k8s.io/kwok/cmd/$bin@$kwok_version"
  fi
done
echo "$k8s_dir"

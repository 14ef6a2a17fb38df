#!/usr/bin/env bash
# Runs the local fleet of the demo and the end-to-end tests (test/e2e/fleet):
#   hack/fleet.sh up      build what is missing under bin/, start the fleet or what of it stopped
#   hack/fleet.sh down    stop every process of the fleet and remove .fleet/
#   hack/fleet.sh status  same as up, then print where everything is
# The first run builds the Kubernetes binaries (a few minutes) and fetches
# Prometheus; later runs reuse them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
case "${1:-}" in
  up|status)
    export KUBEBUILDER_ASSETS
    KUBEBUILDER_ASSETS=$(hack/install-k8s-binaries.sh)
    hack/install-prometheus.sh >/dev/null
    ;;
  down) ;;
  *) echo "usage: hack/fleet.sh up|down|status" >&2; exit 2 ;;
esac
go build -o bin/picchu-fleet ./hack/fleet
exec bin/picchu-fleet "$@"

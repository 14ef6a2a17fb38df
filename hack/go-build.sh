#!/usr/bin/env bash
# Runs a Go build and says how far along it is (see hack/lib/progress.sh):
#   hack/go-build.sh NAME TOTAL COMMAND...
# prints when NAME starts, every 15 s how many packages of about TOTAL (0:
# unknown) are compiled, and when it is done. COMMAND must print the packages
# it compiles on stderr (go build -v, go install -v, go vet).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/progress.sh
source "$root/hack/lib/progress.sh"
PROGRESS_PREFIX=make
progress_build "$@"

#!/usr/bin/env bash
# Runs a Go build and says how far along it is (see hack/lib/progress.sh):
#   hack/go-build.sh NAME TOTAL COMMAND...
# prints when NAME starts, every 15 s how many packages of about TOTAL (0:
# unknown) are compiled, and when it is done. TOTAL may instead be the
# arguments of "go list -deps" ("-test ./...", say): the packages are then
# counted first, with the same reports while modules download. COMMAND must
# print the packages it compiles on stderr (go build -v, go install -v, go vet).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/progress.sh
source "$root/hack/lib/progress.sh"
PROGRESS_PREFIX=make
name=$1 total=$2
shift 2
if ! [[ $total =~ ^[0-9]+$ ]]; then
  # shellcheck disable=SC2086 # the arguments of go list, split on purpose
  total=$(progress_count $total)
fi
progress_build "$name" "$total" "$@"

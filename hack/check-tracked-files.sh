#!/usr/bin/env bash
# Fails when a file git tracks is binary (as git sees it: "-text") or
# larger than 1 MiB, unless the allow-list below names it with its reason.
# Build outputs (the operator, demo, bench-fleet, test binaries) belong in
# bin/ or are ignored; they never belong in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

limit=${TRACKED_FILE_LIMIT:-$((1024 * 1024))}
# path glob | why it may be binary or large
allowed=(
	'docs/images/*.png|screenshots of the dashboard, shown by docs/dashboard.md'
)

allows() {
	local path=$1 entry
	for entry in "${allowed[@]}"; do
		# shellcheck disable=SC2053 # the glob is meant to match
		[[ $path == ${entry%%|*} ]] && return 0
	done
	return 1
}

bad=0
while IFS=$'\t' read -r info path; do
	[[ -f $path ]] || continue # deleted in the work tree
	allows "$path" && continue
	size=$(stat -c %s "$path")
	if [[ $info == i/-text* ]]; then
		echo "tracked binary file: $path ($size bytes)"
		bad=1
	elif ((size > limit)); then
		echo "tracked file over $limit bytes: $path ($size bytes)"
		bad=1
	fi
done < <(git ls-files --eol | sed -E 's/^(i\/[^ ]*) +w\/[^ ]* +attr\/[^\t]*\t/\1\t/')

if ((bad)); then
	echo "remove them (git rm --cached), or, for data that must be binary or large, add them to the allow-list of hack/check-tracked-files.sh with the reason"
	exit 1
fi

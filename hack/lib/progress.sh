# Shared by the hack/ scripts: runs a Go build and says how far along it is,
# so a first run that compiles Kubernetes for minutes never looks hung.
# Source it, then:
#   progress_build NAME TOTAL COMMAND...
# runs COMMAND (a "go build -v" or "go install -v"), prints when NAME starts,
# every $PROGRESS_EVERY seconds (default 15) how many packages are compiled
# (of about TOTAL, when TOTAL is not 0) and the time elapsed, and when it is
# done. Everything goes to
# stderr with the prefix $PROGRESS_PREFIX; on failure the build's last lines
# are printed and the function returns the build's status.

PROGRESS_EVERY=${PROGRESS_EVERY:-15}
PROGRESS_PREFIX=${PROGRESS_PREFIX:-build}

progress_log() { echo "$PROGRESS_PREFIX: $*" >&2; }

# progress_elapsed SECONDS prints 95 as "1m35s".
# progress_compiled LOG NAME TOTAL START: says how many packages the build
# logging to LOG (go build -v) has compiled, of about TOTAL, since START.
progress_compiled() {
  local done_count of=""
  done_count=$(grep -cv '^#\|^go: ' "$1" || true)
  [ "$3" -eq 0 ] || of=" of about $3"
  progress_log "  $2$done_count$of packages compiled, $(progress_elapsed $((SECONDS - $4)))"
}

progress_elapsed() {
  local s=$1
  if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

progress_build() {
  local name=$1 total=$2
  shift 2
  local out start pid status=0 next
  out=$(mktemp)
  start=$SECONDS
  progress_log "building $name"
  "$@" 2>"$out" &
  pid=$!
  next=$((start + PROGRESS_EVERY))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$next" ]; then
      progress_compiled "$out" "$name: " "$total" "$start"
      next=$((SECONDS + PROGRESS_EVERY))
    fi
    sleep 1
  done
  wait "$pid" || status=$?
  if [ "$status" -ne 0 ]; then
    progress_log "building $name failed after $(progress_elapsed $((SECONDS - start))):"
    tail -n 30 "$out" >&2
  else
    progress_log "built $name in $(progress_elapsed $((SECONDS - start)))"
  fi
  rm -f "$out"
  return "$status"
}

# progress_count PACKAGE... prints how many packages a build of PACKAGE
# compiles from scratch (standard library included), downloading the modules
# it needs first; while that goes on, it says so every $PROGRESS_EVERY seconds.
progress_count() {
  local errs out pid start next
  errs=$(mktemp)
  out=$(mktemp)
  start=$SECONDS
  go list -deps "$@" >"$out" 2>"$errs" &
  pid=$!
  next=$((start + PROGRESS_EVERY))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$next" ]; then
      progress_log "  still downloading modules and listing packages, $(progress_elapsed $((SECONDS - start)))"
      next=$((SECONDS + PROGRESS_EVERY))
    fi
    sleep 1
  done
  wait "$pid" || cat "$errs" >&2
  wc -l <"$out" | tr -d ' '
  rm -f "$errs" "$out"
}

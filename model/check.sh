#!/usr/bin/env bash
# Model-checks the operation lifecycle (model/lifecycle.pml) with spin. model/README.md explains what it covers.
#
# Every case is one spin + gcc + pan run in its own directory under a temporary directory, which is removed on
# exit; nothing is written to the repository. The cases:
#   design*        the current design with three sets of bounds. The search is exhaustive and must report 0 errors,
#                  and every vacuity probe listed in lifecycle.pml must be reached (-DPROBES).
#   old-fail-path  -DOLD_FAIL_PATH: the search MUST find a p_cancel_wins violation; its shortest trail is printed.
#   fence-by-timer -DFENCE_BY_TIMER, the self-fence as heartbeat-loop.ts implements it (a timer; calls check only the
#                  AbortSignal): it MUST violate p_self_fence (model/README.md, "Findings"); its trail is printed.
#   mutants        three more deliberate bugs (one of them under two sets of bounds), each of which MUST be caught
#                  by the property named for it.
# Each case prints one summary line (states stored, depth reached, errors). The script exits non-zero on any
# unexpected result: an error in the design, a probe not reached, a missing violation, a search cut short by the
# depth or memory bound, or a tool failure.
#
# Needs spin (Debian: apt-get install spin) and gcc. Runs $MODEL_JOBS cases at a time (default: nproc, at most 2; each
# pan takes up to about 1 GiB).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
model="$here/lifecycle.pml"
for tool in spin gcc; do
  command -v "$tool" >/dev/null || { echo "model/check.sh: $tool not found (Debian: apt-get install -y spin gcc)" >&2; exit 2; }
done

jobs_max=${MODEL_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ -n "${MODEL_JOBS:-}" ] || [ "$jobs_max" -le 2 ] || jobs_max=2
work=$(mktemp -d "${TMPDIR:-/tmp}/durable-ops-model.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$(date +%s)

# pan compile flags: safety only (assertions, invalid end states; no never claim or cycle detection), state-vector
# compression, and a 2 GiB memory bound. Run flags: a 10,000-step depth bound (the deepest run reaches about 130,
# and a run that hits the bound fails below) and a 2^25-slot hash table.
PAN_CC=(-O2 -DSAFETY -DCOLLAPSE -DMEMLIM=2048)
PAN_RUN=(-m10000 -w25)
# The vacuity probes, as "n name" lines, from their list in lifecycle.pml.
probes=$(sed -nE 's/^ \*   probe ([0-9]+) ([a-z_]+) .*/\1 \2/p' "$model")
[ -n "$probes" ] || { echo "model/check.sh: no probes listed in $model" >&2; exit 2; }

# run_case NAME EXPECT [spin -D flags…]
#   EXPECT: pass            an exhaustive search with 0 errors that reaches every probe (compiled with -DPROBES)
#           violates:P      at least one error, and the shortest one found violates property P
run_case() {
  set +e +o pipefail   # runs in its own subshell: every outcome is judged below, none aborts it
  local name=$1 expect=$2
  shift 2
  local dir="$work/$name" t0 t1 out cc=("${PAN_CC[@]}") run=("${PAN_RUN[@]}")
  mkdir -p "$dir" && cp "$model" "$dir/lifecycle.pml" && cd "$dir"
  local defs=("$@")
  case $expect in
    pass) defs+=(-DPROBES) ;;
    violates:*) cc+=(-DREACH); run+=(-i) ;;  # -i: keep searching for a shorter trail (needs -DREACH)
  esac
  t0=$(date +%s.%N)
  {
    spin "${defs[@]}" -a lifecycle.pml >spin.out 2>&1 &&
      gcc "${cc[@]}" -o pan pan.c >gcc.out 2>&1 &&
      ./pan "${run[@]}" >pan.out 2>&1
  } || { echo "FAIL $name: spin/gcc/pan failed: $(tail -n 3 spin.out gcc.out pan.out 2>/dev/null | tr '\n' ' ')" >result; return 0; }
  t1=$(date +%s.%N)
  out=$(cat pan.out)
  local states depth errors violated verdict ok=1
  states=$(grep -oE '[0-9.e+]+ states, stored' <<<"$out" | head -n 1 | cut -d' ' -f1)
  depth=$(grep -oE 'depth reached [0-9]+' <<<"$out" | head -n 1 | cut -d' ' -f3)
  errors=$(grep -oE 'errors: [0-9]+' <<<"$out" | head -n 1 | cut -d' ' -f2)
  # With -i the last error reported is the shortest one found, and it is the one in the trail file.
  violated=$(grep -E 'assertion violated' <<<"$out" | tail -n 1 | grep -oE 'p_[a-z_]+' | head -n 1 || true)
  if [ -z "$states" ] || [ -z "$errors" ]; then
    ok=0; verdict="no result (out of memory?): $(tail -n 2 pan.out | tr '\n' ' ')"
  elif grep -q 'max search depth too small' <<<"$out"; then
    ok=0; verdict="search cut short by the depth bound"
  else
    case $expect in
      pass)
        local missing
        missing=$(while read -r _ probe; do grep -qx "probe reached: $probe" pan.out || printf ' %s' "$probe"; done <<<"$probes")
        if [ "$errors" != 0 ]; then
          ok=0; verdict="UNEXPECTED: $errors error(s), first: $(grep -m1 'assertion violated\|invalid end state' <<<"$out")"
        elif [ -n "$missing" ]; then
          ok=0; verdict="UNEXPECTED: probes not reached:$missing"
        else verdict="verified, 0 errors; all $(wc -l <<<"$probes") probes reached"; fi ;;
      violates:*)
        if [ "$errors" != 0 ] && [ "$violated" = "${expect#violates:}" ]; then verdict="violates $violated, as it must"
        else ok=0; verdict="UNEXPECTED: expected a ${expect#violates:} violation, got errors=$errors ${violated:-(none)}"; fi ;;
    esac
  fi
  printf '%s %-20s %-44s states stored %10s  depth %3s  errors %7s  %5.1f s  %s\n' \
    "$([ $ok = 1 ] && echo ok || echo FAIL)" "$name" "${*:-(defaults)}" "$states" "${depth:-?}" "${errors:-?}" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$verdict" >result
  if [ "$ok" = 1 ] && [ "$expect" != pass ]; then
    # The counterexample, as the model's own printf lines: database time, process, step.
    spin "$@" -t -B lifecycle.pml 2>&1 | grep -E 't=[0-9]+|assertion violated' | sed -E 's/^[[:space:]]+/    /' >trail.txt || true
  fi
}

names=()
launch() {
  names+=("$1")
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  ( run_case "$@" ) &
}

# The current design. Defaults: 2 workers, max_attempts 2, 1 owner retry, lease L = 3, margin M = 1, deadline 5,
# clock up to 10. The wider bounds trade clock range for a third worker, or for a third attempt.
launch design              pass
launch design-3-workers    pass -DNWORKERS=3 -DMAXT=7
launch design-3-attempts   pass -DMAXA=3 -DMAXT=8
# The old two-transaction failure path must lose the owner's cancel.
launch old-fail-path       violates:p_cancel_wins -DOLD_FAIL_PATH
# The self-fence as committed: a timer-only fence lets a worker paused past its lease end call out before it fires.
launch fence-by-timer      violates:p_self_fence  -DFENCE_BY_TIMER -DOFF_p_fence_margin
# Mutants: each property must catch the bug it exists for.
launch no-self-fence       violates:p_self_fence  -DNO_SELF_FENCE -DOFF_p_fence_margin
launch fence-from-reply    violates:p_fence_margin -DFENCE_FROM_REPLY
launch fence-from-reply-4  violates:p_self_fence  -DFENCE_FROM_REPLY -DOFF_p_fence_margin -DL=4
launch guard-status-only   violates:p_stale_write -DGUARD_STATUS_ONLY
wait

failed=0
for name in "${names[@]}"; do
  if [ -f "$work/$name/result" ]; then cat "$work/$name/result"; else echo "FAIL $name: no result"; fi
  grep -q '^ok ' "$work/$name/result" 2>/dev/null || failed=$((failed + 1))
done
for name in old-fail-path fence-by-timer; do
  if [ -s "$work/$name/trail.txt" ]; then
    echo "$name counterexample (shortest trail; t = database time, W<n> = worker pid):"
    cat "$work/$name/trail.txt"
  fi
done
echo "model/check.sh: ${#names[@]} cases, $failed unexpected, $(( $(date +%s) - started )) s"
[ "$failed" = 0 ]

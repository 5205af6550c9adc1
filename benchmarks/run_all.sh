#!/usr/bin/env bash
# Run the four benchmarks one after the other, then print all their tables.
#
#   bash benchmarks/run_all.sh [--quick] [extra args passed to every script, e.g. --ref-wheel W]
#
# Each script's full output goes to $BENCH_RESULTS/<name>.log and its JSON to
# $BENCH_RESULTS/<name>.json (default benchmarks/results); the tables come last, so the tail of
# the output holds them. A failing script does not stop the others; the exit code says if any did.
set -u
cd "$(dirname "$0")/.." || exit

mode=()
if [[ "${1:-}" == "--quick" ]]; then
  mode=(--quick)
  shift
fi
py="${PYTHON:-python3}"
out="${BENCH_RESULTS:-benchmarks/results}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1

status=0
jsons=()
for name in call_overhead launch_overhead build_time load_time; do
  start=$(date +%s)
  rm -f "$out/$name.json"  # never print a stale table from an earlier run
  if "$py" "benchmarks/$name.py" "${mode[@]}" --json "$out/$name.json" "$@" >"$out/$name.log" 2>&1; then
    echo "[run_all] $name: ok in $(($(date +%s) - start)) s (log: $out/$name.log)"
  else
    rc=$?
    status=1
    echo "[run_all] $name: FAILED (exit $rc) after $(($(date +%s) - start)) s; last lines of $out/$name.log:"
    tail -n 5 "$out/$name.log" | sed 's/^/    /'
  fi
  [[ -f "$out/$name.json" ]] && jsons+=("$out/$name.json")
done

echo
if ((${#jsons[@]})); then
  "$py" benchmarks/_common.py "${jsons[@]}"
fi
exit $status

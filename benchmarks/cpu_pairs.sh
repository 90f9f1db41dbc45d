#!/usr/bin/env bash
# Which vCPUs of a (virtual) machine share a physical core. One single-process env pinned to
# vCPU 0 runs alone, then again at the same time as an identical one pinned to vCPU j: two vCPUs
# of different cores give about 2x the lone rate together, two hyperthreads of one core far less.
# Usage: bash benchmarks/cpu_pairs.sh [j ...]   (default: every other vCPU). PY, N, STEPS from the environment.
set -u
PY=${PY:-python}; N=${N:-128}; STEPS=${STEPS:-300}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bench() {  # vCPU -> env-steps/s of PickCube state, N envs, one torch thread
  taskset -c "$1" "$PY" -m benchmarks.throughput -n "$N" --steps "$STEPS" --torch-threads 1 --json 2>/dev/null \
    | "$PY" -c 'import json, sys; print(round(json.load(sys.stdin)["fps"]))'
}
alone=$(bench 0); echo "vCPU 0 alone: $alone env-steps/s (N = $N, $STEPS steps)"
last=$(($(nproc) - 1))
for j in ${@:-$(seq 1 "$last")}; do
  bench 0 > "$tmp/a" & bench "$j" > "$tmp/b" & wait
  a=$(cat "$tmp/a"); b=$(cat "$tmp/b")
  "$PY" -c "print(f'vCPU 0 + vCPU $j at once: $a + $b = {$a + $b} env-steps/s, {($a + $b) / $alone:.2f}x vCPU 0 alone')"
done

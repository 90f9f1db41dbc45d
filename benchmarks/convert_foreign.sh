#!/usr/bin/env bash
# `replay convert` of ManiSkill's own motion-planning demos (A) against our own demos of the same
# task (B): whole processes, run in turn (A B A B ...), so a machine whose speed drifts slows both
# alike. Each converts its first K episodes to CONTROL with one worker and K envs at once.
# Prints one line per pair: wall and CPU seconds per episode each side, the ratios A / B, and each
# side's mean source length in steps (a ManiSkill demo is longer than ours, which is most of the
# difference per episode; per step is the like-for-like figure).
#
# ManiSkill's demos are made in ManiSkill's own venv (docs/FORMAT.md, "ManiSkill's files"):
#   MS_DIR/TASK-v1/motionplanning/*.h5
# Usage: MS_DIR=ms [K=10] [RUNS=3] [CONTROL=pd_ee_delta_pos] bash benchmarks/convert_foreign.sh TASK ...
set -euo pipefail
PY=${PY:-.venv/bin/python}
MS_DIR=${MS_DIR:?set MS_DIR to the record dir of the ManiSkill demos}
K=${K:-10}
RUNS=${RUNS:-3}
CONTROL=${CONTROL:-pd_ee_delta_pos}
OUT=${OUT:-$(mktemp -d)}
echo "task k run load a_wall_s_per_ep b_wall_s_per_ep a_cpu_s_per_ep b_cpu_s_per_ep wall_ratio cpu_ratio a_len b_len a_converted b_converted"
for T in "$@"; do
  src=$(ls "$MS_DIR/$T-v1/motionplanning/"*.h5 | head -1)
  k=$("$PY" -c "import json,sys; print(min($K, len(json.load(open(sys.argv[1][:-3] + '.json'))['episodes'])))" "$src")
  "$PY" -m demos.cli generate "$T" --n "$k" --num-envs "$k" --workers 1 --out "$OUT/$T.ours.h5" --overwrite >/dev/null 2>&1
  for r in $(seq "$RUNS"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    for side in a b; do
      if [ $side = a ]; then in=$src; else in=$OUT/$T.ours.h5; fi
      /usr/bin/time -f "%e %U %S" -o "$OUT/$side.time" "$PY" -m replay.cli convert "$in" --control-mode "$CONTROL" \
        --count "$k" --num-envs "$k" --workers 1 --out "$OUT/$T.$side.h5" --overwrite --no-progress >/dev/null 2>&1 || true
    done
    "$PY" - "$T" "$k" "$r" "$load" "$src" "$OUT" <<'EOF'
import json, sys
task, k, run, load, src, out = sys.argv[1:]
k = int(k)

def timed(side):
    wall, user, system = map(float, open(f"{out}/{side}.time").read().split()[-3:])
    return wall / k, (user + system) / k

def mean_length(h5):
    steps = [e["elapsed_steps"] for e in json.load(open(h5[:-3] + ".json"))["episodes"][:k]]
    return sum(steps) / len(steps)

def converted(side):
    try:
        return len(json.load(open(f"{out}/{task}.{side}.json"))["episodes"])
    except OSError:
        return 0

(aw, ac), (bw, bc) = timed("a"), timed("b")
print(f"{task} {k} {run} {load} {aw:.2f} {bw:.2f} {ac:.2f} {bc:.2f} {aw / bw:.2f} {ac / bc:.2f} "
      f"{mean_length(src):.1f} {mean_length(f'{out}/{task}.ours.h5'):.1f} {converted('a')} {converted('b')}")
EOF
  done
done

#!/usr/bin/env bash
# `demos generate` against ManiSkill 3.0.1's own motion-planning script on the same task and the
# same cores: whole commands (start-up included) timed from outside, run in turn (ours, theirs,
# ours, theirs ...), so a machine whose speed drifts slows both alike. Both keep successes only
# and use CORES processes: `--workers CORES` against `--num-procs CORES` (CPU PhysX, no video).
# Prints one line per pair: the 1-minute load average at its start and end, wall and CPU seconds,
# demos/s per core (N / wall / CORES), the ratio, each side's mean demo length in control steps
# (from the files' episode metadata) and each side's attempts (ours: from the summary line
# `demos generate` prints; ManiSkill's: from the seeds of its kept episodes, each of its processes
# trying seeds from its own start until it has its share). Both commands' output is kept in OUT.
#
# ManiSkill lives in a venv of its own (docs/FORMAT.md, "ManiSkill check"); on a machine without
# a GPU its env needs a Vulkan device even for state-only demos, so lavapipe provides one.
# Usage: [MS_PYTHON=/tmp/msvenv/bin/python] [CORES=2] [RUNS=1] bash benchmarks/demos_vs_maniskill.sh [TASK:N ...]
set -euo pipefail
PY=${PY:-.venv/bin/python}
MS_PYTHON=${MS_PYTHON:-/tmp/msvenv/bin/python}
CORES=${CORES:-2}
RUNS=${RUNS:-1}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
eval "$(bash scripts/lavapipe.sh)"
[ $# -gt 0 ] || set -- PushCube:32 PickCube:32 StackCube:32 PegInsertionSide:16 PlaceSphere:16 PullCubeTool:16 StackPyramid:16
echo "task n run load ours_wall_s ours_cpu_s ours_per_core ms_wall_s ms_cpu_s ms_per_core ratio ours_len ms_len ours_tries ms_tries"
for tn in "$@"; do
  T=${tn%%:*} N=${tn##*:}
  for r in $(seq "$RUNS"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    /usr/bin/time -f "%e %U %S" -o "$OUT/ours.time" "$PY" -m demos.cli generate "$T" --n "$N" --num-envs 16 \
      --workers "$CORES" --out "$OUT/$T.h5" --overwrite >"$OUT/$T.$r.ours.log" 2>&1
    rm -rf "$OUT/ms"
    /usr/bin/time -f "%e %U %S" -o "$OUT/ms.time" "$MS_PYTHON" -m mani_skill.examples.motionplanning.panda.run \
      -e "$T-v1" -n "$N" --only-count-success -b cpu --num-procs "$CORES" --record-dir "$OUT/ms" --traj-name t >"$OUT/$T.$r.ms.log" 2>&1
    load="$load-$(cut -d' ' -f1 /proc/loadavg)"
    "$PY" - "$T" "$N" "$r" "$load" "$CORES" "$OUT" <<'EOF'
import json, re, sys
task, n, run, load, cores, out = sys.argv[1:]
n, cores = int(n), int(cores)

def timed(name):
    wall, user, system = map(float, open(f"{out}/{name}.time").read().split()[-3:])
    return wall, user + system

def mean_length(path):
    steps = [e["elapsed_steps"] for e in json.load(open(path))["episodes"]]
    return sum(steps) / len(steps)

def ours_tries():
    return int(re.search(r"(\d+) attempts", open(f"{out}/{task}.{run}.ours.log").read()).group(1))

def ms_tries(path):
    # run.py gives each of its P processes n // P demos and the seeds from p * (n // P) on; the merged
    # file keeps their episodes in process order, so a process's tries end at its last kept seed
    seeds = [e["episode_seed"] for e in json.load(open(path))["episodes"]]
    share = n // cores if 1 < cores < n else n
    return sum(seeds[p + share - 1] - p + 1 for p in range(0, len(seeds), share))

(ow, oc), (mw, mc) = timed("ours"), timed("ms")
ours, ms = n / ow / cores, n / mw / cores
print(f"{task} {n} {run} {load} {ow:.1f} {oc:.1f} {ours:.3f} {mw:.1f} {mc:.1f} {ms:.3f} {ours / ms:.2f} "
      f"{mean_length(f'{out}/{task}.json'):.1f} {mean_length(f'{out}/ms/{task}-v1/motionplanning/t.json'):.1f} "
      f"{ours_tries()} {ms_tries(f'{out}/ms/{task}-v1/motionplanning/t.json')}")
EOF
  done
done

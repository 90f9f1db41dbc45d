#!/usr/bin/env bash
# Train and evaluate the policy targets on one GPU host within a time budget, then collect the
# results (results.json + rows of docs/RESULTS.md).
#
#   bash policies/run_targets.sh                 # demos are generated into $DEMOS when missing
#   PICK=a.h5 PUSH=b.h5 STACK=c.h5 PICK_RGB=d.h5 bash policies/run_targets.sh
#
# Runs: diffusion state on PickCube, PushCube, StackCube; BC state on PickCube; diffusion rgb
# (128 x 128) on PickCube when an rgb file is given or `replay convert` exists. All run at once
# (CONCURRENT=1, the default: one GPU holds them easily; the CPU cores go to the eval simulators)
# or one after another (CONCURRENT=0). Each trains for at most MINUTES (RGB_MINUTES for images),
# then evaluates its best checkpoint on 100 fresh seeds.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python
DEMOS=${DEMOS:-out/demos}
OUT=${OUT:-runs/targets}
MINUTES=${MINUTES:-6}
RGB_MINUTES=${RGB_MINUTES:-7}
CONCURRENT=${CONCURRENT:-1}
EVAL_WORKERS=${EVAL_WORKERS:-3}
N=${N:-100}
mkdir -p "$DEMOS" "$OUT"

demo() {  # demo TASK VAR: the file in $VAR, else generate N state demos of TASK
  local file=${!2:-$DEMOS/$1.h5}
  if [ ! -f "$file" ]; then
    "$PY" -m demos.cli generate "$1" --n "$N" --num-envs 16 --workers 4 --obs-mode state --out "$file" >"$OUT/gen_$1.log" 2>&1 \
      || { echo "no demos for $1 (see $OUT/gen_$1.log)" >&2; return 1; }
  fi
  echo "$file"
}

train() {  # train NAME KIND CONFIG DATA MINUTES [extra args]
  local name=$1 kind=$2 config=$3 data=$4 minutes=$5; shift 5
  echo "start $name ($(date +%T))"
  "$PY" -m policies.cli train "$kind" --config "configs/$config.yaml" --data "$data" --train.out "$OUT" \
    --train.name "$name" --train.max-minutes "$minutes" --train.no-progress-bar \
    --eval.num-workers "$EVAL_WORKERS" "$@" >"$OUT/$name.log" 2>&1
  echo "done $name: exit $? ($(date +%T)); $(grep -h '^final' "$OUT/$name.log" || echo 'no final eval')"
}

jobs_=()
launch() { if [ "$CONCURRENT" = 1 ]; then train "$@" & jobs_+=($!); else train "$@"; fi; }

PICK=$(demo PickCube PICK) && launch diffusion_state_PickCube diffusion diffusion_state "$PICK" "$MINUTES"
[ -n "${PICK:-}" ] && launch bc_state_PickCube bc bc_state "$PICK" "$MINUTES"
PUSH_F=$(demo PushCube PUSH) && launch diffusion_state_PushCube diffusion diffusion_state "$PUSH_F" "$MINUTES"
STACK_F=$(demo StackCube STACK) && launch diffusion_state_StackCube diffusion diffusion_state "$STACK_F" "$MINUTES"

RGB=${PICK_RGB:-}
if [ -z "$RGB" ] && [ -n "${PICK:-}" ] && "$PY" -m replay.cli convert --help >/dev/null 2>&1; then
  RGB=$DEMOS/PickCube.rgb.h5
  [ -f "$RGB" ] || "$PY" -m replay.cli convert "$PICK" --obs rgb --out "$RGB" >"$OUT/convert_rgb.log" 2>&1 || RGB=""
fi
if [ -n "$RGB" ]; then
  launch diffusion_rgb_PickCube diffusion diffusion_rgb "$RGB" "$RGB_MINUTES"
else
  echo "skipping diffusion rgb: give PICK_RGB=FILE (replay convert FILE --obs rgb)" >&2
fi
for j in "${jobs_[@]}"; do wait "$j"; done

"$PY" -m policies.report "$OUT"/*/ --json "$OUT/results.json" --markdown docs/RESULTS.md \
  --note "$(date +%F): \`bash policies/run_targets.sh\` (MINUTES=$MINUTES, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"

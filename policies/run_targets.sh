#!/usr/bin/env bash
# Train and evaluate the policy targets on one GPU host within a time budget, then collect the
# results into $OUT/report.md and $OUT/results.json (python -m policies.report).
#
#   bash policies/run_targets.sh                 # demos are generated and converted into $DEMOS when missing
#   PICK=a.h5 PUSH=b.h5 STACK=c.h5 PICK_RGB=d.h5 bash policies/run_targets.sh
#
# On the offline H200 host: build the carry kit here (`bash ../shared/device/build-site.sh &&
# bash scripts/device_extras.sh`), carry .device, and run `source .device/prelude.sh && bash
# policies/run_targets.sh` there, with the raw demos made here carried in $DEMOS (motion planning
# there needs `prelude.sh plan`, under which lightning does not import).
#
# Demos are made once in pd_joint_pos (`demos generate --obs-mode state`), then converted with
# `replay convert --control-mode pd_ee_delta_pos` (state obs; rgb obs for the image policy): TCP-space
# actions generalise over goals where absolute joint targets make the policy learn the arm's inverse
# kinematics from 100 examples (PickCube 0.45 against 0.30 at the end on the H200). StackCube's go to pd_ee_delta_pose
# (STACK_CONTROL): its planner turns the wrist after the grasp, which the position-only controller
# cannot follow (13 of 100 demos lost, and half its perturbed copies; with the pose controller
# none, and 0.84 against 0.63 success on the H200). The demos end after HOLD successful
# steps of holding still (25: a policy that has seen 10 drifts off PickCube's goal while holding the
# cube; 25 took CPU-trained PickCube policies from 0.67-0.74 to 0.81-0.84 at the end) and move at half
# the planner's speed (SPEED); the policies train on them merged with perturbed copies of the same
# demos (`replay convert --action-noise NOISE --noise-seed S` for S in NOISE_SEEDS: DART-style
# corrective labels, which took diffusion state PickCube from 0.55 to 0.86, PushCube from 0.69 to
# 0.94 and StackCube from 0.36 to 0.80 success once with six copies; twelve copies and 7,000 steps
# (configs/diffusion_state.yaml) took PickCube to 0.91 and 0.93 at the end in two seeds, where six or
# twelve copies at 5,000 steps gave 0.86-0.87). File names
# in $DEMOS say the recipe (TASK.holdH-speedS...); given files (PICK=...) are
# used as they are.
#
# Runs: diffusion state on PickCube, PushCube, StackCube; BC state on PickCube; diffusion rgb
# (128 x 128) on PickCube; RUNS picks some of them (names: pick bc push stack rgb). All run
# at once (CONCURRENT=1, the default: one GPU holds them; three
# runs at once get 1.9x the samples/s of one alone: a run alone is bound by kernel launches) or one after another
# (CONCURRENT=0). Each trains for at most the minutes of its config (MINUTES overrides the state
# runs', RGB_MINUTES the image run's), then evaluates its best checkpoint on 100 fresh seeds.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python
DEMOS=${DEMOS:-out/demos}
OUT=${OUT:-runs/targets}
MINUTES=${MINUTES:-7}
RGB_MINUTES=${RGB_MINUTES:-6}
CONTROL=${CONTROL:-pd_ee_delta_pos}
STACK_CONTROL=${STACK_CONTROL:-pd_ee_delta_pose}  # StackCube's: the wrist turns after the grasp (see above)
CONCURRENT=${CONCURRENT:-1}
EVAL_WORKERS=${EVAL_WORKERS:-3}
N=${N:-100}
RUNS=${RUNS:-pick bc push stack rgb}
WORKERS=${WORKERS:-4}  # replay convert --workers
read -ra STATE_ARGS <<<"${STATE_ARGS:-}"  # more `policies train` arguments for the diffusion state runs, e.g. "--train.max-steps 8000"
read -ra RGB_ARGS <<<"${RGB_ARGS:-}"      # ... for the rgb run
HOLD=${HOLD:-25}    # demos end after this many successful steps in a row, the robot holding still
SPEED=${SPEED:-0.5}  # the planner's joint speed, as a share of the robot's limits
NOISE=${NOISE:-0.1}  # perturbed copies: replay convert --action-noise
NOISE_SEEDS=${NOISE_SEEDS-1 2 3 4 5 6 7 8 9 10 11 12}  # one perturbed copy per seed (PickCube, PushCube); empty: the clean demos alone
STACK_NOISE_SEEDS=${STACK_NOISE_SEEDS-1 2 3 4 5 6}  # StackCube's copies (six: 0.84 and 0.78 at 5,000 steps on the H200, 0.73 at 7,000; twelve 0.77)
RGB_NOISE_SEEDS=${RGB_NOISE_SEEDS-1 2 3 4 5 6}      # the rgb run's copies (six measured; each rgb copy is rendered)
mkdir -p "$DEMOS" "$OUT"

demo() {  # demo TASK VAR [OBS [CTRL [SEEDS]]]: the file in $VAR, else N demos of TASK generated and converted to CTRL ($CONTROL), OBS (state), with a perturbed copy per seed in SEEDS ($NOISE_SEEDS)
  local given=${!2:-} obs=${3:-state} ctrl=${4:-$CONTROL} noise_seeds=${5-$NOISE_SEEDS}
  [ -n "$given" ] && { echo "$given"; return; }
  local base=$DEMOS/$1.hold$HOLD-speed$SPEED seeds=($noise_seeds)  # file names say the recipe
  local raw=$base.h5 clean=$base.$obs.$ctrl.h5 file=$base.$obs.$ctrl.noise$NOISE-x${#seeds[@]}.h5
  [ -z "$noise_seeds" ] && file=$clean
  if [ ! -f "$raw" ]; then
    "$PY" -m demos.cli generate "$1" --n "$N" --num-envs 16 --workers 4 --obs-mode state --hold "$HOLD" --speed "$SPEED" \
      --out "$raw" >"$OUT/gen_$1.log" 2>&1 || { echo "no demos for $1 (see $OUT/gen_$1.log)" >&2; return 1; }
  fi
  [ -f "$file" ] && { echo "$file"; return; }
  # the clean conversion and the perturbed copies (DART, one per seed, merged with the clean one) run at once
  local parts=("$clean") pids=() s log=$OUT/convert_$1_$obs
  [ -f "$clean" ] || { "$PY" -m replay.cli convert "$raw" --obs-mode "$obs" --control-mode "$ctrl" --out "$clean" --workers "$WORKERS" \
    --no-progress >"$log.log" 2>&1 & pids+=($!); }
  for s in $noise_seeds; do
    parts+=("$base.$obs.$ctrl.noise$NOISE-$s.h5")
    [ -f "${parts[-1]}" ] || { "$PY" -m replay.cli convert "$raw" --obs-mode "$obs" --control-mode "$ctrl" --action-noise "$NOISE" \
      --noise-seed "$s" --out "${parts[-1]}" --workers "$WORKERS" --no-progress >"$log.noise-$s.log" 2>&1 & pids+=($!); }
  done
  for s in "${pids[@]}"; do wait "$s" || { echo "a $obs/$ctrl conversion of $1 failed (see $log*.log)" >&2; return 1; }; done
  [ -z "$noise_seeds" ] && { echo "$clean"; return; }
  "$PY" -m replay.cli merge "$file" "${parts[@]}" >>"$log.log" 2>&1 || { echo "merge failed for $1" >&2; return 1; }
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
wants() { [[ " $RUNS " == *" $1 "* ]]; }
launch() { if [ "$CONCURRENT" = 1 ]; then train "$@" & jobs_+=($!); else train "$@"; fi; }

if wants pick || wants bc; then
  PICK=$(demo PickCube PICK) && { wants pick && launch diffusion_state_PickCube diffusion diffusion_state "$PICK" "$MINUTES" "${STATE_ARGS[@]}"
                                 wants bc && launch bc_state_PickCube bc bc_state "$PICK" "$MINUTES"; }
fi
wants push && PUSH_F=$(demo PushCube PUSH) && launch diffusion_state_PushCube diffusion diffusion_state "$PUSH_F" "$MINUTES" "${STATE_ARGS[@]}"
wants stack && STACK_F=$(demo StackCube STACK state "$STACK_CONTROL" "$STACK_NOISE_SEEDS") && launch diffusion_state_StackCube diffusion diffusion_state "$STACK_F" "$MINUTES" "${STATE_ARGS[@]}"
wants rgb && RGB_F=$(demo PickCube PICK_RGB rgb "$CONTROL" "$RGB_NOISE_SEEDS") && launch diffusion_rgb_PickCube diffusion diffusion_rgb "$RGB_F" "$RGB_MINUTES" "${RGB_ARGS[@]}"
for j in "${jobs_[@]}"; do wait "$j"; done

"$PY" -m policies.report "$OUT"/*/ --out "$OUT" \
  --note "$(date +%F): \`bash policies/run_targets.sh\` (RUNS=\"$RUNS\", MINUTES=$MINUTES, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"

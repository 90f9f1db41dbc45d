#!/usr/bin/env bash
# Run training recipes on one GPU host and collect their results into $OUT/report.md and
# $OUT/results.json (python -m policies.report).
#
#   bash policies/run_targets.sh                                        # every recipe in configs/recipes/
#   RECIPES="configs/recipes/diffusion_state_PickCube.yaml" bash policies/run_targets.sh
#
# Each recipe (`policies recipe run FILE`) builds its dataset in out/demos, reusing the files that
# exist, then trains and evaluates its policy in $OUT/<recipe name>. Datasets are built one recipe
# after another (recipes share files); the training runs go at once (CONCURRENT=1, the default: one
# GPU holds them, and a run alone is bound by kernel launches) or one after another (CONCURRENT=0).
#
# On the offline H200 host: build the carry kit here (`bash ../shared/device/build-site.sh &&
# bash scripts/device_extras.sh`), carry .device, and run `source .device/prelude.sh && bash
# policies/run_targets.sh` there, with out/demos carried; motion planning there needs `prelude.sh
# plan`, under which lightning does not import, so plan here first (`policies recipe build FILE
# --demos-only`, or a whole build for the state recipes).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python
OUT=${OUT:-runs/recipes}
CONCURRENT=${CONCURRENT:-1}
read -ra RECIPES <<<"${RECIPES:-$(ls configs/recipes/*.yaml)}"
read -ra ARGS <<<"${ARGS:-}"  # more run settings for every recipe, e.g. "--eval.num-workers 3"
mkdir -p "$OUT"

for r in "${RECIPES[@]}"; do  # build first: the datasets' steps use every CPU
  "$PY" -m policies.cli recipe build "$r" || echo "build failed: $r" >&2
done
jobs_=()
for r in "${RECIPES[@]}"; do
  name=$(basename "$r" .yaml)
  run() { "$PY" -m policies.cli recipe run "$r" --train.out "$OUT" --train.no-progress-bar "${ARGS[@]}" >"$OUT/$name.log" 2>&1
          echo "done $name: exit $? ($(date +%T)); $(grep -h '^final' "$OUT/$name.log" || echo 'no final eval')"; }
  echo "start $name ($(date +%T))"
  if [ "$CONCURRENT" = 1 ]; then run & jobs_+=($!); else run; fi
done
for j in "${jobs_[@]}"; do wait "$j"; done

"$PY" -m policies.report "$OUT"/*/ --out "$OUT" \
  --note "\`bash policies/run_targets.sh\` ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"

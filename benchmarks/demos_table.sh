#!/usr/bin/env bash
# The demos table of docs/PERFORMANCE.md: per task, `demos generate TASK --n N` with 16 envs per
# worker and one worker per core, the file's summary (`demos info`: lengths) and `demos verify`
# shuffled in batches of 24. Run from the project root (on the H200 host after
# `source .device/prelude.sh plan`); results in $OUT (default out/demos_table).
#   TASKS="PickCube PushCube" N=1000 bash benchmarks/demos_table.sh
set -u
OUT=${OUT:-out/demos_table}; mkdir -p "$OUT"; export PYTHONWARNINGS=ignore
N=${N:-1000}; W=${WORKERS:-$(nproc)}; TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
for T in ${TASKS:-PickCube PushCube PullCube StackCube LiftPegUpright PegInsertionSide PlugCharger PlaceSphere StackPyramid PullCubeTool}; do
  s=$SECONDS
  timeout "${TMAX:-300}" python -m demos.cli generate "$T" --n "$N" --num-envs 16 --workers "$W" --out "$TMP/$T.h5" ${GEN_ARGS:-} > "$OUT/$T.gen.txt" 2>&1
  echo "$T generate rc=$? $((SECONDS - s)) s: $(tr '\r' '\n' < "$OUT/$T.gen.txt" | grep attempts | tail -1)"
  python -m demos.cli info "$TMP/$T.h5" > "$OUT/$T.info.txt" 2>&1; grep -E "^(length|episodes)" "$OUT/$T.info.txt"
  [ "${VERIFY:-1}" = 1 ] || continue
  s=$SECONDS
  timeout "${VMAX:-300}" python -m demos.cli verify "$TMP/$T.h5" --num-envs 24 --shuffle 1 > "$OUT/$T.verify.txt" 2>&1
  echo "$T verify rc=$? $((SECONDS - s)) s: $(tr '\r' '\n' < "$OUT/$T.verify.txt" | tail -1)"
done

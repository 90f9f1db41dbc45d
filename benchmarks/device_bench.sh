#!/usr/bin/env bash
# Environment and demo-generation measurements on a many-core GPU host (the H200 machine), written
# to $OUT (default ./out/device). Run from the project root, after `source .device/prelude.sh plan`
# (see ../shared/device/build-site.sh) or in a virtualenv made by setup.sh.
set -u
OUT=${OUT:-out/device}; mkdir -p "$OUT"
PY=${PY:-python}
nproc > "$OUT/nproc.txt"; nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
lscpu > "$OUT/lscpu.txt" 2>&1
step() { echo "== $*"; local t=$SECONDS; "$@"; echo "== rc=$? in $((SECONDS - t)) s"; }
step timeout 60 $PY -m envs.doctor > "$OUT/doctor.txt" 2>&1
step timeout 120 $PY -m benchmarks.throughput -e PickCube-v1 --num-envs 64 --steps 300 --obs-mode rgbd --torch-threads 1 --json > "$OUT/rgbd64.json" 2> "$OUT/rgbd64.err"
step timeout 120 $PY -m benchmarks.throughput -e PickCube-v1 --num-envs 64 --steps 200 --obs-mode rgbd --torch-threads 1 --num-workers 8 > "$OUT/rgbd64_w8.txt" 2>&1
step timeout 120 $PY -m benchmarks.render_probe --num-envs 64 --steps 100 > "$OUT/render_probe.txt" 2>&1
step timeout 280 $PY -m benchmarks.scaling --workers 1 2 4 8 16 --steps 100 --independent > "$OUT/scaling.txt" 2>&1
step timeout 150 $PY -m demos.cli generate PickCube --n 2000 --num-envs 16 --workers 16 --out "$OUT/demos/pick.h5" > "$OUT/demos16.txt" 2>&1
timeout 60 $PY -m demos.cli info "$OUT/demos/pick.h5" > "$OUT/demos16_info.txt" 2>&1; rm -rf "$OUT/demos"
step timeout 60 $PY -m benchmarks.throughput -e PickCube-v1 --num-envs 64 --steps 300 --obs-mode rgb --torch-threads 1 --json > "$OUT/rgb64.json" 2> "$OUT/rgb64.err"
tail -c 2000 "$OUT"/*.txt "$OUT"/*.json "$OUT"/*.err 2>/dev/null | tail -n 80

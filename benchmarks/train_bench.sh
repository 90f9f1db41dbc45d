#!/usr/bin/env bash
# Training throughput of a policy config on one data file: optimiser steps with evaluation off,
# for each variant given (one: a single run, or xK: K runs at once on the one device), with the
# GPU's utilisation sampled every second. Prints one line per run:
#   variant  run  samples/s (median of the logged windows)  steps  GPU util % (mean, busy samples)
#
#   bash benchmarks/train_bench.sh DATA.h5 [CONFIG=configs/diffusion_state.yaml] [SECONDS=60] [VARIANTS="one x3"]
set -u
DATA=${1:?usage: train_bench.sh DATA.h5 [CONFIG] [SECONDS] [VARIANTS]}
CONFIG=${2:-configs/diffusion_state.yaml}
SECS=${3:-60}
VARIANTS=${4:-one x3}
PY=${PY:-python}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
kind=$(sed -n 's/^kind: *//p' "$CONFIG")

one() {  # one NAME: a training run of SECS seconds (start-up included)
  local name=$1
  "$PY" -m policies.cli train "$kind" --config "$CONFIG" --data "$DATA" --train.out "$WORK" --train.name "$name" \
    --train.max-minutes "$(awk "BEGIN {print $SECS / 60}")" --train.max-steps 1000000 --train.val-every 1000000 \
    --eval.episodes 0 --eval.final-episodes 0 --train.no-progress-bar >"$WORK/$name.log" 2>&1
}

report() {  # report VARIANT NAME SMI
  "$PY" - "$WORK/$2/metrics.csv" "$1" "$2" "$3" <<'EOF'
import csv, statistics, sys
path, variant, name, smi = sys.argv[1:]
try:
    rows = list(csv.DictReader(open(path)))
except OSError:
    print(f"{variant:8s} {name:10s} no metrics (see the run's log)"); sys.exit()
rates = [float(r["train/samples_per_s"]) for r in rows if r.get("train/samples_per_s")]
steps = max(int(r["step"]) for r in rows) if rows else 0
util = [float(l.split(",")[0]) for l in open(smi) if l.strip() and l.split(",")[0].strip().isdigit()]
busy = [u for u in util if u > 0]
print(f"{variant:8s} {name:10s} {statistics.median(rates) if rates else 0:10,.0f} samples/s  {steps:6d} steps  "
      f"GPU util {statistics.mean(busy) if busy else 0:.0f} % ({len(busy)} busy samples)")
EOF
}

for v in $VARIANTS; do
  smi=$WORK/smi_$v.csv
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -l 1 >"$smi" 2>/dev/null &
  smi_pid=$!
  case $v in
    one) one "$v" ;;
    x*) pids=(); for k in $(seq 1 "${v#x}"); do one "${v}_$k" & pids+=($!); done; wait "${pids[@]}" ;;
    *) echo "unknown variant $v (one, xK)" >&2; kill "$smi_pid"; exit 2 ;;
  esac
  kill "$smi_pid" 2>/dev/null; wait "$smi_pid" 2>/dev/null
  for run in "$WORK"/"$v"*/; do report "$v" "$(basename "$run")" "$smi"; done
done

#!/usr/bin/env bash
# Where a generation run's time goes on each executor (benchmarks/pool_phases.py), on one machine:
# the local pool, a Ray started for the run, a running `ray start` cluster, and the same cluster
# with the workers' imports preloaded (RAY_preload_python_modules). Run from the project root in an
# environment with Ray (`pip install -e ".[ray]"`).
set -u
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled} PYTHONWARNINGS=ignore
PY=${PY:-python}; RAY=${RAY:-ray}; W=${WORKERS:-$(nproc)}
P="$PY -m benchmarks.pool_phases --batches ${BATCHES:-128} --num-envs 16 --workers $W"
head() { $RAY start --head --port 6399 --num-cpus "$W" --resources "{\"render\": $W}" --include-dashboard false --disable-usage-stats >/dev/null; }
echo "local:";   $P --only local | grep ready
echo "ray started for the run:"; $P --only ray | grep ready
head; sleep 3
echo "running cluster:"; $P --only ray --address 127.0.0.1:6399 | grep ready
$RAY stop --force >/dev/null
RAY_preload_python_modules=torch,sapien,gymnasium,envs,demos.workers,demos.runner head; sleep 8
echo "running cluster, imports preloaded:"; $P --only ray --address 127.0.0.1:6399 | grep ready
$RAY stop --force >/dev/null
echo "local:";   $P --only local | grep ready

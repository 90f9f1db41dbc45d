#!/usr/bin/env bash
# Where a Ray pool's start-up goes (benchmarks/ray_startup.py), on one machine: the workers'
# imports in one process alone and in WORKERS processes at once, then actors on a Ray started for
# the run and on a running `ray start` cluster (its workers' imports preloaded, as the README
# starts one). Run from the project root in an environment with Ray (`pip install -e ".[ray]"`).
set -u
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled} PYTHONWARNINGS=ignore
PY=${PY:-python}; RAY=${RAY:-ray}; W=${WORKERS:-$(nproc)}
IMPORTS=$($PY -c "from envs.executor import WORKER_IMPORTS as w; print(','.join(w))")
imp="import time, importlib; t = time.time(); [importlib.import_module(m) for m in '$IMPORTS'.split(',')]; print(f'{time.time() - t:.2f}')"
echo "imports, one process: $($PY -c "$imp") s"
echo "imports, $W processes at once: $(for i in $(seq "$W"); do $PY -c "$imp" & done | sort -n | tr '\n' ' ')s"
for what in bare imports handler node; do
  echo "--- ray started for the run, $what:"; $PY -m benchmarks.ray_startup --workers "$W" --what $what
done
RAY_preload_python_modules=$IMPORTS $RAY start --head --port 6399 --num-cpus "$W" --resources "{\"render\": $W}" \
  --include-dashboard false --disable-usage-stats >/dev/null; sleep 8
for what in handler node; do
  echo "--- running cluster, imports preloaded, $what:"; $PY -m benchmarks.ray_startup --workers "$W" --what $what --address 127.0.0.1:6399
done
$RAY stop --force >/dev/null

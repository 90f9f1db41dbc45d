"""Local processes against Ray actors, on one machine: demos/s of `demos generate` and episodes/s of
`replay convert` (to rgbd), run interleaved (local, ray, ray on two nodes, local, ...) so drift in
the machine's speed falls on all alike. "ray" starts a local Ray for each run (its start-up is in
the time, as are the workers'); "ray2" joins a two-node cluster on this machine (`ray start --head`
plus a second `ray start --address`, half the CPUs each, with the workers' imports preloaded as the
README starts a cluster), started once before the runs. "kept" joins a one-node cluster of all the
CPUs with `--keep-workers`: its workers, started by an untimed warm-up command, stay up between
commands, so its runs are those of a cluster that already holds our workers (a cluster of its own:
another pool on that cluster would take its workers over).

    python -m benchmarks.executors [--task PickCube] [--n 2000] [--convert 500] [--rounds 2] [--workers 16] [--stages convert]

Prints one line per run and, per stage, the median of each executor and its share of local.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--task", default="PickCube")
    p.add_argument("--n", type=int, default=2000, help="demonstrations per generation run")
    p.add_argument("--convert", type=int, default=500, help="episodes per conversion run (to rgbd)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--source", help="the file conversion reads (default: the first generation run's)")
    p.add_argument("--stages", default="generate,convert", help="generate, convert or both; convert alone makes "
                   "its source with one local generation run, not timed")
    args = p.parse_args()
    args.stages = set(args.stages.split(","))
    py = sys.executable
    rates: dict[tuple[str, str], list[float]] = {}
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # one machine, loopback only: no cluster token to hand round
    ray_cli = [py, "-m", "ray.scripts.scripts"]  # the `ray` command, wherever Ray is importable
    port = "6399"
    half = str(max(1, args.workers // 2))
    env_cpus = ["--num-cpus", half, "--resources", '{"render": %s}' % half, "--disable-usage-stats"]
    # the cluster as the README starts one: its idle workers import what ours need beforehand
    from envs.executor import WORKER_IMPORTS

    node_env = {**os.environ, "RAY_preload_python_modules": ",".join(WORKER_IMPORTS)}
    subprocess.run([*ray_cli, "start", "--head", "--port", port, "--include-dashboard", "false", *env_cpus], check=True,
                   capture_output=True, env=node_env)
    try:
        subprocess.run([*ray_cli, "start", "--address", f"127.0.0.1:{port}", *env_cpus], check=True, capture_output=True,
                       env=node_env)
        all_cpus = ["--num-cpus", str(args.workers), "--resources", '{"render": %d}' % args.workers, "--disable-usage-stats"]
        subprocess.run([*ray_cli, "start", "--head", "--port", KEPT_PORT, "--include-dashboard", "false", *all_cpus],
                       check=True, capture_output=True, env=node_env)
        _measure(args, py, rates, f"127.0.0.1:{port}")
    finally:
        subprocess.run([*ray_cli, "stop", "--force"], capture_output=True)
    for stage in [s for s in ("generate", "convert rgbd") if s.split()[0] in args.stages]:
        local = statistics.median(rates[(stage, "local")])
        for ex in ("ray", "ray2", "kept"):
            other = statistics.median(rates[(stage, ex)])
            print(f"{stage:13s} median: local {local:.2f}/s, {ex} {other:.2f}/s ({other / local:.0%} of local)")


KEPT_PORT = "6400"
EXECUTORS = {"local": [], "ray": ["--executor", "ray"], "ray2": ["--executor", "ray", "--address"],
             "kept": ["--executor", "ray", "--address", f"127.0.0.1:{KEPT_PORT}", "--keep-workers", "30"]}


def _measure(args, py: str, rates: dict, address: str) -> None:
    def executor(ex: str) -> list[str]:
        return EXECUTORS[ex] + ([address] if ex == "ray2" else [])

    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.h5"  # the kept workers started, holding the generation handler (untimed)
        _run([py, "-m", "demos.cli", "generate", args.task, "--n", str(args.num_envs), "--num-envs", str(args.num_envs),
              "--workers", str(args.workers), "--out", str(warm), *executor("kept")])
        source = Path(args.source) if args.source else Path(tmp) / "source.h5"
        timed = "generate" in args.stages
        for r in range(args.rounds if timed else 0 if args.source else 1):
            for ex in EXECUTORS if timed else ["local"]:
                out = Path(tmp) / f"gen_{ex}_{r}.h5"
                cmd = [py, "-m", "demos.cli", "generate", args.task, "--n", str(args.n), "--num-envs", str(args.num_envs),
                       "--workers", str(args.workers), "--out", str(out), *executor(ex)]
                seconds, stdout = _run(cmd)
                rate = float(re.search(r"([\d.]+) demos/s", stdout).group(1))  # from the workers' start to the last commit
                if timed:
                    rates.setdefault(("generate", ex), []).append(rate)
                print(f"generate {ex:5s} round {r}: {rate:.2f} demos/s ({seconds:.0f} s in all)", flush=True)
                if not source.exists():
                    out.rename(source)
                    Path(str(out)[:-3] + ".json").rename(source.with_suffix(".json"))
        for r in range(args.rounds if "convert" in args.stages else 0):
            for ex in EXECUTORS:
                out = Path(tmp) / f"conv_{ex}_{r}.h5"
                cmd = [py, "-m", "replay.cli", "convert", str(source), "--obs-mode", "rgbd", "--count", str(args.convert),
                       "--workers", str(args.workers), "--out", str(out), "--no-progress", *executor(ex)]
                seconds, _ = _run(cmd)
                rate = args.convert / seconds
                rates.setdefault(("convert rgbd", ex), []).append(rate)
                print(f"convert  {ex:5s} round {r}: {rate:.2f} episodes/s ({seconds:.0f} s)", flush=True)
                out.unlink()
                Path(str(out)[:-3] + ".json").unlink(missing_ok=True)


if __name__ == "__main__":
    main()

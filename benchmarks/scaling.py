"""Scaling over worker processes: `benchmarks.throughput` for each number of workers, one table.

    python -m benchmarks.scaling --workers 1 2 4 8 16 [--num-envs N | --envs-per-worker n]
        [--steps 200] [-e PickCube-v1] [--obs-mode state] [--control-mode pd_joint_delta_pos]

Fixed N (strong scaling) by default, N = 64 x the largest worker count, so that the largest run
still holds 64 envs per worker; `--envs-per-worker n` gives every run n envs per worker instead
(weak scaling). Speed-up and efficiency are against the first worker count given; W = 1 runs
in-process. The machine's load average is printed before and after: other processes on the
machine take cores from the runs.

`--independent` adds, for each W, the machine's ceiling: W separate single-process envs of N / W
envs each, started together and never synchronised (no parent, no shared memory), their
env-steps summed over the longest one's wall time. What W workers lose against that line is the
cost of stepping in lock-step behind one parent; what the line itself loses against W x the
first one is the machine's (shared caches, memory bandwidth, clock under load, the hypervisor).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import sys

import torch

import envs
from benchmarks.throughput import _Timed, run
from envs.modes import ControlMode, ObsMode


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _independent_one(args: tuple, barrier, results) -> None:
    env_id, n, steps, obs_mode, control_mode, core = args
    try:
        torch.set_num_threads(1)
        if core is not None:
            os.sched_setaffinity(0, {core})
        timed = _Timed(env_id, n, obs_mode, control_mode, None, warmup=20)
        barrier.wait()
        timed.timed_step(steps)
        results.put((n * steps, timed.wall))
        timed.env.close()
    except BaseException as e:
        barrier.abort()  # the others stop waiting for this one
        results.put(repr(e))


def run_independent(env_id: str, num_envs: int, procs: int, steps: int, obs_mode: str, control_mode: str,
                    pin: bool = False) -> dict:
    """`procs` single-process envs sharing `num_envs` envs, stepped at once without any coupling."""
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(procs), ctx.Queue()
    cores = sorted(os.sched_getaffinity(0))
    sizes = [num_envs // procs + (k < num_envs % procs) for k in range(procs)]
    ps = [
        ctx.Process(target=_independent_one, args=((env_id, n, steps, obs_mode, control_mode, cores[k % len(cores)] if pin else None), barrier, results))
        for k, n in enumerate(sizes)
    ]
    for p in ps:
        p.start()
    out = [results.get() for _ in ps]
    for p in ps:
        p.join()
    errors = [o for o in out if isinstance(o, str)]  # a failed child's own error; the others report the broken barrier
    if errors:
        cause = next((e for e in errors if "BrokenBarrierError" not in e), errors[0])
        raise RuntimeError(f"an uncoupled benchmark process failed: {cause}")
    wall = max(w for _, w in out)
    return {"fps": sum(s for s, _ in out) / wall, "psps": steps / wall}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__.split("\n\n")[0])
    p.add_argument("-e", "--env-id", default="PickCube-v1", help=f"one of: {', '.join(envs.env_ids())}")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to run, in order")
    size = p.add_mutually_exclusive_group()
    size.add_argument("-n", "--num-envs", type=int, help="N for every run (default: 64 x the largest worker count)")
    size.add_argument("--envs-per-worker", type=int, help="N = this x workers for each run")
    p.add_argument("--steps", type=int, default=200, help="timed env.step calls per run")
    p.add_argument("-o", "--obs-mode", default="state", help=f"one of: {', '.join(m.value for m in ObsMode)}")
    p.add_argument("-c", "--control-mode", default="pd_joint_delta_pos", help=f"one of: {', '.join(m.value for m in ControlMode)}")
    p.add_argument(
        "--torch-threads", type=int, default=1,
        help="torch threads of this (parent) process; its idle OpenMP threads would spin on the workers' cores",
    )
    p.add_argument("--pin", action="store_true", help="pin worker k to core k (the parent stays unpinned)")
    p.add_argument(
        "--independent", action="store_true",
        help="also run, for each W, W uncoupled single-process envs of N / W envs: the machine's ceiling for W workers",
    )
    args = p.parse_args(argv)
    torch.set_num_threads(args.torch_threads)
    try:
        env_id = envs.check_env_id(args.env_id)
        if min(args.workers) < 1 or args.steps < 1 or min(args.num_envs or 1, args.envs_per_worker or 1) < 1:
            raise ValueError("--workers, --num-envs, --envs-per-worker and --steps must be >= 1")
        sizes = [
            args.num_envs or 64 * max(args.workers) if args.envs_per_worker is None else args.envs_per_worker * w
            for w in args.workers
        ]
        for w, n in zip(args.workers, sizes):
            if w > n:
                raise ValueError(f"{w} workers need at least {w} envs, got --num-envs {n}")
        print(f"machine: {os.cpu_count()} cores, {cpu_model()}; load average {load_average()}")
        pin = "  workers pinned to cores" if args.pin else ""
        print(f"{env_id}  obs={args.obs_mode}  control={args.control_mode}  steps={args.steps}  parent torch threads={args.torch_threads}{pin}")
        print(f"{'workers':>7} {'N':>6} {'FPS':>9} {'PSPS':>8} {'speed-up':>9} {'efficiency':>10} {'RSS MB':>8}")
        first = None
        for w, n in zip(args.workers, sizes):
            r = run(env_id, n, args.steps, args.obs_mode, args.control_mode, num_workers=w, pin_workers=args.pin)
            first = first or (w, r["fps"])
            speedup = r["fps"] / first[1]
            efficiency = speedup / (w / first[0])
            print(f"{w:>7} {n:>6} {r['fps']:>9.0f} {r['psps']:>8.1f} {speedup:>8.2f}x {efficiency:>9.0%} {r['rss_mb']:>8.0f}", flush=True)
            if args.independent and w > 1:
                c = run_independent(env_id, n, w, args.steps, args.obs_mode, args.control_mode, args.pin)
                speedup = c["fps"] / first[1]
                print(f"{'  ' + str(w) + ' ind.':>7} {n:>6} {c['fps']:>9.0f} {c['psps']:>8.1f} {speedup:>8.2f}x {speedup / (w / first[0]):>9.0%} {'':>8}"
                      f"  ({w} uncoupled processes; workers reach {r['fps'] / c['fps']:.0%} of this)", flush=True)
        print(f"load average after: {load_average()}")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

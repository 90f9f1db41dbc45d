"""Where a run's time goes, per executor: building the pool, then each batch's arrival, for the
generation workers (each with its env and planner) or the conversion workers (an env per batch,
rendering). Prints pool start, first result, the rate over the steady middle (results 25 %..75 %)
and overall, and from inside the workers: the mean seconds a batch's handler ran and whether the
worker saw CUDA (the GPU-batched cameras need it), for local processes and for Ray.

    python -m benchmarks.pool_phases [--task PickCube-v1] [--batches 64] [--num-envs 16] [--workers 16] [--address ADDR]
    python -m benchmarks.pool_phases --convert FILE [--obs-mode rgbd] [--batches 64] ...
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timed:
    """A job whose handler also reports how long it ran, and the worker's CUDA view."""

    job: Any

    @property
    def render(self) -> bool:
        return self.job.render

    def setup(self):
        import torch

        handler = self.job.setup()
        seen = {"cuda": torch.cuda.is_available(), "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}

        def run(task):
            start = time.perf_counter()
            out = handler(task)
            return out, time.perf_counter() - start, seen

        return run


def measure(kind, job, tasks: list, per_task: int, workers: int, address: str | None) -> dict:
    from envs.executor import make_pool

    t0 = time.perf_counter()
    pool = make_pool(kind, Timed(job), workers, address=address, start="fork")  # as both commands start theirs
    t_ready = time.perf_counter() - t0
    times, busy, seen = [], [], set()
    try:
        submitted = 0
        while submitted < len(tasks) and pool.idle:
            pool.submit(submitted, tasks[submitted])
            submitted += 1
        for _ in range(len(tasks)):
            _, (_, seconds, where) = pool.next_result()
            times.append(time.perf_counter() - t0)
            busy.append(seconds)
            seen.add(tuple(sorted(where.items())))
            while submitted < len(tasks) and pool.idle:
                pool.submit(submitted, tasks[submitted])
                submitted += 1
    finally:
        pool.close()
    q1, q3 = times[len(times) // 4], times[3 * len(times) // 4]
    mid = (3 * len(times) // 4 - len(times) // 4) * per_task / (q3 - q1)
    print("  workers saw:", sorted(seen), flush=True)
    return {"ready_s": t_ready, "first_s": times[0], "total_s": times[-1], "mid_rate": mid,
            "rate": len(tasks) * per_task / times[-1], "handler_mean_s": statistics.mean(busy),
            "handler_median_s": statistics.median(busy)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--task", default="PickCube-v1")
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--address", default=None)
    p.add_argument("--only", choices=["local", "ray"], default=None)
    p.add_argument("--convert", metavar="FILE", help="time conversion of FILE's episodes instead of generation")
    p.add_argument("--obs-mode", default="rgbd", help="the conversion's target obs mode")
    args = p.parse_args()
    from envs.executor import Executor

    if args.convert:
        from replay.convert import ConvertConfig, ConvertJob

        out = os.path.join(tempfile.mkdtemp(), "unused.h5")  # the job writes nothing; the config wants a path
        cfg = ConvertConfig(file=args.convert, obs=args.obs_mode, out=out, num_envs=args.num_envs, workers=args.workers)
        ids = cfg.episode_ids
        tasks = [ids[(b * args.num_envs) % len(ids):][: args.num_envs] for b in range(args.batches)]
        tasks = [t if len(t) == args.num_envs else ids[: args.num_envs] for t in tasks]
        job = ConvertJob(cfg)
    else:
        from demos.generate import GenerateConfig
        from demos.workers import GenerationJob

        cfg = GenerateConfig(task=args.task, n=1, num_envs=args.num_envs)
        job = GenerationJob(cfg.env_id, cfg.env_kwargs, cfg.num_envs, cfg.robot_uids, cfg.obs_mode == "state")
        tasks = [[1000 + b * args.num_envs + k for k in range(args.num_envs)] for b in range(args.batches)]
    for r in range(args.rounds):
        for kind in (Executor.LOCAL, Executor.RAY):
            if args.only and kind.value != args.only:
                continue
            out = measure(kind, job, tasks, args.num_envs, args.workers, args.address if kind is Executor.RAY else None)
            print(kind.value, " ".join(f"{k}={v:.2f}" for k, v in out.items()), flush=True)


if __name__ == "__main__":
    main()

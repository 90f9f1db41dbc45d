"""Where a generation run's time goes, per executor: building the pool (processes or actors, each
with its env and planner), then each batch's arrival. Prints pool start, first result, and the rate
over the steady middle (results 25 %..75 %) and overall, for local processes and for Ray.

    python -m benchmarks.pool_phases [--task PickCube-v1] [--batches 64] [--num-envs 16] [--workers 16] [--address ADDR]
"""

from __future__ import annotations

import argparse
import os
import time


def measure(kind, job, workers: int, batches: int, num_envs: int, address: str | None) -> dict:
    from envs.executor import make_pool

    t0 = time.perf_counter()
    pool = make_pool(kind, job, workers, address=address)
    t_ready = time.perf_counter() - t0
    times = []
    try:
        submitted = 0
        while submitted < batches and pool.idle:
            pool.submit(submitted, [1000 + submitted * num_envs + b for b in range(num_envs)])
            submitted += 1
        for _ in range(batches):
            pool.next_result()
            times.append(time.perf_counter() - t0)
            while submitted < batches and pool.idle:
                pool.submit(submitted, [1000 + submitted * num_envs + b for b in range(num_envs)])
                submitted += 1
    finally:
        pool.close()
    q1, q3 = times[len(times) // 4], times[3 * len(times) // 4]
    mid = (3 * len(times) // 4 - len(times) // 4) * num_envs / (q3 - q1)
    return {"ready_s": t_ready, "first_s": times[0], "total_s": times[-1], "mid_rate": mid,
            "rate": batches * num_envs / times[-1]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--task", default="PickCube-v1")
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--address", default=None)
    p.add_argument("--only", choices=["local", "ray"], default=None)
    args = p.parse_args()
    from demos.generate import GenerateConfig
    from demos.workers import GenerationJob
    from envs.executor import Executor

    cfg = GenerateConfig(task=args.task, n=1, num_envs=args.num_envs)
    job = GenerationJob(cfg.env_id, cfg.env_kwargs, cfg.num_envs, cfg.robot_uids, cfg.obs_mode == "state")
    for r in range(args.rounds):
        for kind in (Executor.LOCAL, Executor.RAY):
            if args.only and kind.value != args.only:
                continue
            out = measure(kind, job, args.workers, args.batches, args.num_envs, args.address if kind is Executor.RAY else None)
            print(kind.value, " ".join(f"{k}={v:.2f}" for k, v in out.items()), flush=True)


if __name__ == "__main__":
    main()

"""Throughput benchmark: random actions in a batched env.

    python -m envs.benchmark -e PickCube-v1 --num-envs 64 --steps 1000 [--obs-mode state]
        [--control-mode pd_joint_delta_pos] [--num-workers 1]

Prints FPS (env steps per second, summed over envs), PSPS (parallel steps per second: calls of
env.step), CPU RSS (total, and the increase per env from building the env; with worker processes
the sum over this process and its workers, each counting the shared libraries it maps), and GPU
memory when CUDA is present. Episodes that end are reset inside the timed loop, as in
training; random actions keep every robot moving.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import gymnasium as gym
import torch

import envs
from envs.modes import ControlMode, ObsMode


def rss_mb(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run(
    env_id: str, num_envs: int, steps: int, obs_mode: str, control_mode: str, num_workers: int = 1, warmup: int = 20
) -> dict:
    rss0 = rss_mb()
    env = gym.make(env_id, num_envs=num_envs, obs_mode=obs_mode, control_mode=control_mode, num_workers=num_workers)
    base = env.unwrapped
    env.reset(seed=0)
    with torch.inference_mode():
        for _ in range(warmup):
            env.step(env.action_space.sample())
        t0 = time.perf_counter()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated | truncated
            if done.any():
                env.reset(options={"env_idx": torch.nonzero(done).flatten()})
        dt = time.perf_counter() - t0
    rss1 = rss_mb() + sum(rss_mb(pid) for pid in getattr(base, "worker_pids", []))
    result = {
        "env_id": env_id,
        "num_envs": num_envs,
        "num_workers": num_workers,
        "obs_mode": obs_mode,
        "control_mode": control_mode,
        "steps": steps,
        "fps": steps * num_envs / dt,
        "psps": steps / dt,
        "rss_mb": rss1,
        "rss_per_env_mb": (rss1 - rss0) / num_envs,
    }
    if torch.cuda.is_available():
        result["gpu_mem_mb"] = torch.cuda.max_memory_allocated() / 2**20
    env.close()
    del base
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m envs.benchmark", description=__doc__.split("\n\n")[0])
    p.add_argument("-e", "--env-id", default="PickCube-v1", help=f"one of: {', '.join(envs.env_ids())}")
    p.add_argument("-n", "--num-envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=1000, help="timed env.step calls")
    p.add_argument("-o", "--obs-mode", default="state", help=f"one of: {', '.join(m.value for m in ObsMode)}")
    p.add_argument("-c", "--control-mode", default="pd_joint_delta_pos", help=f"one of: {', '.join(m.value for m in ControlMode)}")
    p.add_argument("-w", "--num-workers", type=int, default=1, help="worker processes (1: everything in this process)")
    p.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    args = p.parse_args(argv)
    try:
        env_id = envs.check_env_id(args.env_id)
        if args.num_envs < 1 or args.steps < 1:
            raise ValueError("--num-envs and --steps must be >= 1")
        r = run(env_id, args.num_envs, args.steps, args.obs_mode, args.control_mode, args.num_workers)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(r))
    else:
        workers = f"  workers={r['num_workers']}" if r["num_workers"] > 1 else ""
        print(f"{r['env_id']}  N={r['num_envs']}  obs={r['obs_mode']}  control={r['control_mode']}  steps={r['steps']}{workers}")
        print(f"FPS  {r['fps']:.0f} env-steps/s")
        print(f"PSPS {r['psps']:.1f} parallel steps/s")
        print(f"RSS  {r['rss_mb']:.0f} MB ({r['rss_per_env_mb']:.2f} MB per env)")
        if "gpu_mem_mb" in r:
            print(f"GPU  {r['gpu_mem_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

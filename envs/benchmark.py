"""Throughput benchmark: random actions in a batched env.

    python -m envs.benchmark -e PickCube-v1 --num-envs 64 --steps 1000 [--obs-mode state]
        [--control-mode pd_joint_delta_pos] [--robot-uids panda ur5e]

Prints FPS (env steps per second, summed over envs), PSPS (parallel steps per second: calls of
env.step), CPU FPS (env steps per second of this process's CPU time: on a machine shared with
other work it moves far less than FPS with their load), the process's CPU RSS (total, and the increase per env from building the env), and
GPU memory when CUDA is present. Episodes that end are reset inside the timed loop, as in
training; random actions keep every robot moving. `--robot-uids` takes one entry per run, all
made in one process one after another (compare robots under the same load); an entry is a uid,
or comma-separated uids for a multi-robot task (`panda,ur5e`). RSS per env is exact for the
first run only: later runs reuse memory the earlier ones freed.
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


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run(
    env_id: str,
    num_envs: int,
    steps: int,
    obs_mode: str,
    control_mode: str,
    robot_uids: str | tuple[str, ...] | None = None,
    warmup: int = 20,
) -> dict:
    rss0 = rss_mb()
    robots = {} if robot_uids is None else {"robot_uids": robot_uids}
    env = gym.make(env_id, num_envs=num_envs, obs_mode=obs_mode, control_mode=control_mode, **robots)
    base = env.unwrapped
    env.reset(seed=0)
    with torch.inference_mode():
        for _ in range(warmup):
            env.step(env.action_space.sample())
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated | truncated
            if done.any():
                env.reset(options={"env_idx": torch.nonzero(done).flatten()})
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss1 = rss_mb()
    result = {
        "env_id": env_id,
        "num_envs": num_envs,
        "obs_mode": obs_mode,
        "control_mode": control_mode,
        "robot_uids": base.robot_uids,
        "steps": steps,
        "fps": steps * num_envs / dt,
        "psps": steps / dt,
        "cpu_fps": steps * num_envs / cpu,
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
    p.add_argument(
        "-r", "--robot-uids", nargs="+", default=[None], metavar="UIDS",
        help="one run per entry: a robot uid, or comma-separated uids for a multi-robot task "
        f"(robots: {', '.join(envs.robots.robot_uids())}; default: the task's own)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON line per run instead of text")
    args = p.parse_args(argv)
    try:
        env_id = envs.check_env_id(args.env_id)
        if args.num_envs < 1 or args.steps < 1:
            raise ValueError("--num-envs and --steps must be >= 1")
        for entry in args.robot_uids:
            uids = None if entry is None else (entry if "," not in entry else tuple(entry.split(",")))
            report(run(env_id, args.num_envs, args.steps, args.obs_mode, args.control_mode, uids), args.json)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def report(r: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(r))
        return
    robots = r["robot_uids"] if isinstance(r["robot_uids"], str) else ",".join(r["robot_uids"])
    print(f"{r['env_id']}  robots={robots}  N={r['num_envs']}  obs={r['obs_mode']}  control={r['control_mode']}  steps={r['steps']}")
    print(f"FPS  {r['fps']:.0f} env-steps/s")
    print(f"PSPS {r['psps']:.1f} parallel steps/s")
    print(f"CPU  {r['cpu_fps']:.0f} env-steps per CPU-second")
    print(f"RSS  {r['rss_mb']:.0f} MB ({r['rss_per_env_mb']:.2f} MB per env)")
    if "gpu_mem_mb" in r:
        print(f"GPU  {r['gpu_mem_mb']:.0f} MB")


if __name__ == "__main__":
    sys.exit(main())

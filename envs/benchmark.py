"""Throughput benchmark: random actions in a batched env.

    python -m envs.benchmark -e PickCube-v1 --num-envs 64 --steps 1000 [--obs-mode state]
        [--control-mode pd_joint_delta_pos] [--cam-width 128 --cam-height 128 --cam-fov 1.57]

Prints FPS (env steps per second, summed over envs), PSPS (parallel steps per second: calls of
env.step), the process's CPU RSS (total, and the increase per env from building the env), and
GPU memory when CUDA is present. Episodes that end are reset inside the timed loop, as in
training; random actions keep every robot moving.

Visual obs modes (rgb, depth, rgbd, pointcloud, segmentation) also print the Vulkan device, the
time per env.step spent making the camera observation, and, where `nvidia-smi` exists, the GPU
memory the benchmark's process added (rendering goes through Vulkan, not CUDA). --cam-* set
every observation camera (sensor_configs width / height / fov).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
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


def gpu_used_mb() -> float | None:
    """Memory in use on GPU 0 (all processes), from nvidia-smi; None without an NVIDIA GPU."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True, text=True, timeout=30,
        )
        return float(out.stdout.strip().splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def run(
    env_id: str,
    num_envs: int,
    steps: int,
    obs_mode: str,
    control_mode: str,
    warmup: int = 20,
    sensor_configs: dict | None = None,
) -> dict:
    rss0 = rss_mb()
    gpu0 = gpu_used_mb()
    env = gym.make(env_id, num_envs=num_envs, obs_mode=obs_mode, control_mode=control_mode, sensor_configs=sensor_configs)
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
        if base.sensors is not None and base.obs_mode.visual:
            info = base.evaluate()
            t1 = time.perf_counter()
            for _ in range(10):
                base.world.clock.tick()  # as after a step: poses go to the render systems again
                base.sensors.observe(base.obs_mode)
            obs_ms = (time.perf_counter() - t1) / 10 * 1e3
            del info
    rss1 = rss_mb()
    gpu1 = gpu_used_mb()
    result = {
        "env_id": env_id,
        "num_envs": num_envs,
        "obs_mode": obs_mode,
        "control_mode": control_mode,
        "steps": steps,
        "fps": steps * num_envs / dt,
        "psps": steps / dt,
        "rss_mb": rss1,
        "rss_per_env_mb": (rss1 - rss0) / num_envs,
        "torch_threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        result["gpu_mem_mb"] = torch.cuda.max_memory_allocated() / 2**20
    if base.sensors is not None:
        cams = base.sensor_settings.cameras
        result["cameras"] = {c.uid: [c.width, c.height] for c in cams}
        result["cam_width"], result["cam_height"] = (cams[0].width, cams[0].height) if cams else (None, None)
        result["render_device"] = base.world.scene.render_system.device.name
        if base.obs_mode.visual:
            result["obs_ms_per_step"] = obs_ms
        if gpu0 is not None and gpu1 is not None:
            result["gpu_vulkan_mb"] = gpu1 - gpu0
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
    p.add_argument("--cam-width", type=int, help="width of every observation camera (default: the task's, 128)")
    p.add_argument("--cam-height", type=int, help="height of every observation camera (default: the task's, 128)")
    p.add_argument("--cam-fov", type=float, help="vertical field of view of every observation camera (radians)")
    p.add_argument(
        "--torch-threads", type=int,
        help="torch intra-op threads (default: torch's own). On a shared 2-core machine 1 was up to 7x faster: docs/PERFORMANCE.md",
    )
    p.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    args = p.parse_args(argv)
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    cams = {"width": args.cam_width, "height": args.cam_height, "fov": args.cam_fov}
    sensor_configs = {k: v for k, v in cams.items() if v is not None} or None
    try:
        env_id = envs.check_env_id(args.env_id)
        if args.num_envs < 1 or args.steps < 1:
            raise ValueError("--num-envs and --steps must be >= 1")
        r = run(env_id, args.num_envs, args.steps, args.obs_mode, args.control_mode, sensor_configs=sensor_configs)
    except (ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(r))
    else:
        print(f"{r['env_id']}  N={r['num_envs']}  obs={r['obs_mode']}  control={r['control_mode']}  steps={r['steps']}  torch threads={r['torch_threads']}")
        print(f"FPS  {r['fps']:.0f} env-steps/s")
        print(f"PSPS {r['psps']:.1f} parallel steps/s")
        print(f"RSS  {r['rss_mb']:.0f} MB ({r['rss_per_env_mb']:.2f} MB per env)")
        if "gpu_mem_mb" in r:
            print(f"GPU  {r['gpu_mem_mb']:.0f} MB")
        if "render_device" in r:
            print(f"Vulkan device {r['render_device']}; cameras {r['cameras']}")
        if "obs_ms_per_step" in r:
            print(f"camera obs {r['obs_ms_per_step']:.1f} ms per env.step (all {r['num_envs']} envs)")
        if "gpu_vulkan_mb" in r:
            print(f"GPU memory added by this process (nvidia-smi) {r['gpu_vulkan_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

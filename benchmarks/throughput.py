"""Throughput benchmark: random actions in a batched env.

    python -m benchmarks.throughput -e PickCube-v1 --num-envs 64 --steps 1000 [--obs-mode state]
        [--control-mode pd_joint_delta_pos] [--robot-uids panda ur5e] [--num-workers 1]
        [--cam-width 128 --cam-height 128 --cam-fov 1.57] [--torch-threads 1]

Prints FPS (env steps per second, summed over envs), PSPS (parallel steps per second: calls of
env.step), CPU FPS (env steps per second of this process's CPU time), CPU RSS (total, and the
increase per env from building and warming up the env; with worker processes the sum over this
process and its workers, each counting the shared libraries it maps), and GPU memory when CUDA
is present. Episodes that end are reset inside the timed loop, as in training; random actions
keep every robot moving.

`--robot-uids` takes one entry per env to compare (a uid, or comma-separated uids for a
multi-robot task: `panda,ur5e`). All of them are built in one process and stepped in turn, ten
steps at a time, so that on a machine shared with other work each sees the same load.

Visual obs modes (rgb, depth, rgbd, pointcloud, segmentation) also print the Vulkan device, the
time per env.step spent making the camera observation, and, where `nvidia-smi` exists, the GPU
memory the benchmark's process added (rendering goes through Vulkan, not CUDA). --cam-* set
every observation camera (sensor_configs width / height / fov).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
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


class _Timed:
    """One env under test: built, warmed up, then stepped in blocks with its time accumulated."""

    def __init__(self, env_id: str, num_envs: int, obs_mode: str, control_mode: str, robot_uids, warmup: int,
                 num_workers: int = 1, sensor_configs: dict | None = None, pin_workers: bool = False):
        rss0 = rss_mb()
        self.gpu0 = gpu_used_mb()
        kwargs = {} if robot_uids is None else {"robot_uids": robot_uids}
        if sensor_configs:
            kwargs["sensor_configs"] = sensor_configs
        self.env = gym.make(
            env_id, num_envs=num_envs, obs_mode=obs_mode, control_mode=control_mode, num_workers=num_workers, **kwargs
        )
        self.num_workers = num_workers
        if pin_workers:  # worker k on core k (of this process's cores), the parent left unpinned
            cores = sorted(os.sched_getaffinity(0))
            for k, pid in enumerate(getattr(self.env.unwrapped, "worker_pids", [])):
                os.sched_setaffinity(pid, {cores[k % len(cores)]})
        self.env.reset(seed=0)
        self.step(warmup)
        self.rss_per_env = (self.rss() - rss0) / num_envs
        self.wall = self.cpu = 0.0

    def rss(self) -> float:
        """This process's RSS plus that of the env's worker processes (if any)."""
        return rss_mb() + sum(rss_mb(pid) for pid in getattr(self.env.unwrapped, "worker_pids", []))

    def step(self, steps: int) -> None:
        env = self.env
        with torch.inference_mode():
            for _ in range(steps):
                _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                done = terminated | truncated
                if done.any():
                    env.reset(options={"env_idx": torch.nonzero(done).flatten()})

    def timed_step(self, steps: int) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        self.step(steps)
        self.wall += time.perf_counter() - t0
        self.cpu += time.process_time() - c0

    def camera_report(self) -> dict:
        """Camera layout, Vulkan device and the time one camera observation takes (in-process envs)."""
        base = self.env.unwrapped
        if getattr(base, "sensors", None) is None:
            return {}
        cams = base.sensor_settings.cameras
        out = {
            "cameras": {c.uid: [c.width, c.height] for c in cams},
            "cam_width": cams[0].width if cams else None,
            "cam_height": cams[0].height if cams else None,
            "render_device": base.world.scene.render_system.device.name,
        }
        if base.obs_mode.visual:
            with torch.inference_mode():
                t1 = time.perf_counter()
                for _ in range(10):
                    base.world.clock.tick()  # as after a step: poses go to the render systems again
                    base.sensors.observe(base.obs_mode)
                out["obs_ms_per_step"] = (time.perf_counter() - t1) / 10 * 1e3
        gpu1 = gpu_used_mb()
        if self.gpu0 is not None and gpu1 is not None:
            out["gpu_vulkan_mb"] = gpu1 - self.gpu0
        return out


def run_all(
    env_id: str,
    num_envs: int,
    steps: int,
    obs_mode: str,
    control_mode: str,
    robot_uids: list[str | tuple[str, ...] | None],
    warmup: int = 20,
    block: int = 10,
    num_workers: int = 1,
    sensor_configs: dict | None = None,
    pin_workers: bool = False,
) -> list[dict]:
    """One result per entry of robot_uids (None: the task's default). All envs are built first,
    then stepped in turn, `block` steps each, so that every one sees the same machine load."""
    runs = [
        _Timed(env_id, num_envs, obs_mode, control_mode, uids, warmup, num_workers, sensor_configs, pin_workers)
        for uids in robot_uids
    ]
    done = 0
    while done < steps:
        n = min(block, steps - done)
        for r in runs:
            r.timed_step(n)
        done += n
    results = []
    for r in runs:
        result = {
            "env_id": env_id,
            "num_envs": num_envs,
            "num_workers": num_workers,
            "obs_mode": obs_mode,
            "control_mode": control_mode,
            "robot_uids": r.env.unwrapped.robot_uids,
            "steps": steps,
            "fps": steps * num_envs / r.wall,
            "psps": steps / r.wall,
            "cpu_fps": steps * num_envs / r.cpu,
            "rss_mb": r.rss(),
            "rss_per_env_mb": r.rss_per_env,
            "torch_threads": torch.get_num_threads(),
        }
        if torch.cuda.is_available():
            result["gpu_mem_mb"] = torch.cuda.max_memory_allocated() / 2**20
        result.update(r.camera_report())
        results.append(result)
        r.env.close()
    return results


def run(
    env_id: str, num_envs: int, steps: int, obs_mode: str, control_mode: str, num_workers: int = 1, robot_uids=None,
    warmup: int = 20, sensor_configs: dict | None = None, pin_workers: bool = False,
) -> dict:
    return run_all(
        env_id, num_envs, steps, obs_mode, control_mode, [robot_uids], warmup,
        num_workers=num_workers, sensor_configs=sensor_configs, pin_workers=pin_workers,
    )[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-e", "--env-id", default="PickCube-v1", help=f"one of: {', '.join(envs.env_ids())}")
    p.add_argument("-n", "--num-envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=1000, help="timed env.step calls")
    p.add_argument("-o", "--obs-mode", default="state", help=f"one of: {', '.join(m.value for m in ObsMode)}")
    p.add_argument("-c", "--control-mode", default="pd_joint_delta_pos", help=f"one of: {', '.join(m.value for m in ControlMode)}")
    p.add_argument(
        "-r", "--robot-uids", nargs="+", default=[None], metavar="UIDS",
        help="one env per entry, compared under the same load: a robot uid, or comma-separated uids "
        "for a multi-robot task "
        f"(robots: {', '.join(envs.robots.robot_uids())}; default: the task's own)",
    )
    p.add_argument("-w", "--num-workers", type=int, default=1, help="worker processes (1: everything in this process)")
    p.add_argument("--cam-width", type=int, help="width of every observation camera (default: the task's, 128)")
    p.add_argument("--cam-height", type=int, help="height of every observation camera (default: the task's, 128)")
    p.add_argument("--cam-fov", type=float, help="vertical field of view of every observation camera (radians)")
    p.add_argument(
        "--torch-threads", type=int, default=1,
        help="torch intra-op threads (default: %(default)s). The env's tensors are small: more threads only spin, "
        "and on a loaded machine torch's own default (one per core) halved the numbers",
    )
    p.add_argument("--json", action="store_true", help="print one JSON line per env instead of text")
    args = p.parse_args(argv)
    torch.set_num_threads(args.torch_threads)
    cams = {"width": args.cam_width, "height": args.cam_height, "fov": args.cam_fov}
    sensor_configs = {k: v for k, v in cams.items() if v is not None} or None
    try:
        env_id = envs.check_env_id(args.env_id)
        if args.num_envs < 1 or args.steps < 1:
            raise ValueError("--num-envs and --steps must be >= 1")
        uids = [None if e is None else (e if "," not in e else tuple(e.split(","))) for e in args.robot_uids]
        for r in run_all(
            env_id, args.num_envs, args.steps, args.obs_mode, args.control_mode, uids,
            num_workers=args.num_workers, sensor_configs=sensor_configs,
        ):
            report(r, args.json)
    except (ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def report(r: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(r))
        return
    robots = r["robot_uids"] if isinstance(r["robot_uids"], str) else ",".join(r["robot_uids"])
    workers = f"  workers={r['num_workers']}" if r["num_workers"] > 1 else ""
    print(
        f"{r['env_id']}  robots={robots}  N={r['num_envs']}  obs={r['obs_mode']}  control={r['control_mode']}"
        f"  steps={r['steps']}{workers}  torch threads={r['torch_threads']}"
    )
    print(f"FPS  {r['fps']:.0f} env-steps/s")
    print(f"PSPS {r['psps']:.1f} parallel steps/s")
    print(f"CPU  {r['cpu_fps']:.0f} env-steps per CPU-second of this process")
    print(f"RSS  {r['rss_mb']:.0f} MB ({r['rss_per_env_mb']:.2f} MB per env)")
    if "gpu_mem_mb" in r:
        print(f"GPU  {r['gpu_mem_mb']:.0f} MB")
    if "render_device" in r:
        print(f"Vulkan device {r['render_device']}; cameras {r['cameras']}")
    if "obs_ms_per_step" in r:
        print(f"camera obs {r['obs_ms_per_step']:.1f} ms per env.step (all {r['num_envs']} envs)")
    if "gpu_vulkan_mb" in r:
        print(f"GPU memory added by this process (nvidia-smi) {r['gpu_vulkan_mb']:.0f} MB")


if __name__ == "__main__":
    sys.exit(main())

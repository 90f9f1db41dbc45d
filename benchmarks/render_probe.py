"""GPU-batched cameras against per-camera pictures, on a machine with CUDA and a GPU Vulkan device.

    python -m benchmarks.render_probe [-e PickCube-v1] [--num-envs 64] [--steps 100]

Builds the same env twice, once rendering through `envs.sensors.gpu_batch` and once picture by
picture, drives both with the same random actions and compares their images at reset and after
each of 10 steps (largest difference and share of differing pixels, per camera), then times each
path's env.step and the batched path's phases (pose upload, pictures, read-back).
"""

from __future__ import annotations

import argparse
import sys
import time

import gymnasium as gym
import numpy as np
import torch

import envs
import envs.sensors.suite as suite
from envs.sensors.camera import cut_on_device


def _make(env_id: str, n: int, batched: bool):
    real = suite.gpu_batch_available
    suite.gpu_batch_available = lambda world: batched and real(world)
    try:
        env = gym.make(env_id, num_envs=n, obs_mode="rgbd", control_mode="pd_joint_delta_pos")
    finally:
        suite.gpu_batch_available = real
    assert (env.unwrapped.sensors.gpu is not None) == batched, "the batched path is not available here"
    return env


def _compare(a: dict, b: dict, label: str) -> None:
    for uid in a["sensor_data"]:
        for key in ("rgb", "depth"):
            x, y = a["sensor_data"][uid][key].numpy().astype(np.int32), b["sensor_data"][uid][key].numpy().astype(np.int32)
            diff = np.abs(x - y)
            print(f"{label:>8} {uid:>12} {key:>5}: max diff {diff.max():>5}, pixels differing {np.mean(diff.max(-1) > 0):.4%}, "
                  f"mean {x.mean():.1f} vs {y.mean():.1f}")


def _fps(env, steps: int) -> float:
    env.reset(seed=1)
    for _ in range(5):
        env.step(env.action_space.sample())
    t = time.perf_counter()
    for _ in range(steps):
        env.step(env.action_space.sample())
    return steps * env.unwrapped.num_envs / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.render_probe", description=__doc__.split("\n\n")[0])
    p.add_argument("-e", "--env-id", default="PickCube-v1")
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=100)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    env_id = envs.check_env_id(args.env_id)
    fast, slow = _make(env_id, args.num_envs, True), _make(env_id, args.num_envs, False)
    print(f"render device: {fast.unwrapped.world.scene.render_system.device.name}; "
          f"{len(fast.unwrapped.sensors.gpu.entities)} moving entities")
    a, _ = fast.reset(seed=0)
    b, _ = slow.reset(seed=0)
    _compare(a, b, "reset")
    rng = np.random.default_rng(0)
    for t in range(10):
        action = torch.from_numpy(rng.uniform(-1, 1, fast.action_space.shape).astype(np.float32))
        a = fast.step(action)[0]
        b = slow.step(action)[0]
        if t in (0, 9):
            _compare(a, b, f"step {t + 1}")
    view = fast.unwrapped.sensors.render()  # the human-view camera, picture by picture beside the group
    print(f"render(): {tuple(view.shape)}, mean {view.float().mean():.1f}, std {view.float().std():.1f}")
    for name, env in (("batched", fast), ("per-camera", slow)):
        print(f"{name:>10}: {_fps(env, args.steps):,.0f} env-steps/s (N = {args.num_envs}, rgbd, 2 cameras)", flush=True)
    gpu, world = fast.unwrapped.sensors.gpu, fast.unwrapped.world
    times = {"update": 0.0, "pictures": 0.0, "cut and copy rgb + depth": 0.0}
    for _ in range(50):
        world.clock.tick()
        t0 = time.perf_counter()
        gpu.update()
        t1 = time.perf_counter()
        gpu.take_pictures()
        t2 = time.perf_counter()
        for uid in gpu.cameras:
            raw = gpu.read(uid)
            for key in ("rgb", "depth"):
                cut_on_device(raw, key).cpu()
        t3 = time.perf_counter()
        times["update"] += t1 - t0
        times["pictures"] += t2 - t1
        times["cut and copy rgb + depth"] += t3 - t2
    print("batched phases per step: " + ", ".join(f"{k} {v / 50 * 1e3:.2f} ms" for k, v in times.items()))
    fast.close()
    slow.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

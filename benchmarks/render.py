"""How each env's cameras should see that env alone: measured.

    python -m benchmarks.render --num-envs 16 --steps 50 [--obs-mode rgbd]

Runs PickCube-v1 with camera observations two ways and prints env-steps/s and the time per
env.step spent on the camera observation:
  per-env   (what envs uses) one SAPIEN scene and render system per env, all sharing the one
            PhysX system: a camera renders its own env's objects only.
  shared    one render system holding every env (they sit 5 m apart on the grid): each camera
            draws all N envs' objects, and sees neighbours wherever it looks past its own floor.
"""

from __future__ import annotations

import argparse
import sys
import time

import gymnasium as gym
import sapien
import torch

import envs  # noqa: F401  (registers)
import envs.core.env as core_env
from envs.core.world import BatchedWorld
from envs.sensors.vulkan import render_system


class SharedRenderWorld(BatchedWorld):
    """Every env in one SAPIEN scene with one render system (the alternative to per-env scenes)."""

    def __init__(self, num_envs: int, sim_freq: int, visual: bool = False):
        super().__init__(num_envs, sim_freq, visual=False)
        self.scenes = [sapien.Scene([self.physx, render_system()])] * num_envs
        self.scene = self.scenes[0]
        self.visual = True


def run(layout: str, num_envs: int, steps: int, obs_mode: str) -> dict:
    core_env.BatchedWorld = SharedRenderWorld if layout == "shared" else BatchedWorld
    try:
        env = gym.make("PickCube-v1", num_envs=num_envs, obs_mode=obs_mode)
    finally:
        core_env.BatchedWorld = BatchedWorld
    base = env.unwrapped
    env.reset(seed=0)
    with torch.inference_mode():
        for _ in range(5):
            env.step(env.action_space.sample())
        t0 = time.perf_counter()
        for _ in range(steps):
            env.step(env.action_space.sample())
        dt = time.perf_counter() - t0
        t1 = time.perf_counter()
        for _ in range(10):
            base.world.clock.tick()
            base.sensors.observe(base.obs_mode)
        obs_ms = (time.perf_counter() - t1) / 10 * 1e3
    env.close()
    return {"layout": layout, "fps": steps * num_envs / dt, "obs_ms": obs_ms}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.render", description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--num-envs", type=int, default=16)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("-o", "--obs-mode", default="rgbd")
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # small per-step tensors: torch's default (one thread per core) only spins under load
    for layout in ("per-env", "shared"):
        r = run(layout, args.num_envs, args.steps, args.obs_mode)
        print(f"{r['layout']:8s} N={args.num_envs} {args.obs_mode}: {r['fps']:7.1f} env-steps/s, camera obs {r['obs_ms']:6.1f} ms per env.step")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compares two ways of batching N envs on SAPIEN's CPU PhysX, physics and state IO only:

    python -m benchmarks.batching --num-envs 64 --steps 300

* shared: one PhysX scene holding N envs spaced apart (what envs/ uses);
* separate: one SAPIEN scene per env.

Each env is PickCube's content (table, 4 cm cube, Panda with its drives); every control step
sets new random joint targets (robots keep moving), runs 5 substeps and reads qpos, qvel and
the cube pose, as env.step does.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import sapien

from envs.core.build import build_articulation
from envs.core.world import ROW, SPACING
from envs.robots import get_robot


def _populate(scene: sapien.Scene, offset: np.ndarray, spec, i: int):
    a = build_articulation(scene, spec.model, sapien.Pose(offset + [-0.615, 0, 0]), f"robot_{i}")
    for j in a.active_joints:
        j.set_drive_property(spec.arm_drive.stiffness, spec.arm_drive.damping, spec.arm_drive.force_limit)
    b = scene.create_actor_builder()
    b.add_box_collision(half_size=[0.6, 0.6, 0.02])
    b.build_static().set_pose(sapien.Pose(offset + [0, 0, -0.02]))
    b = scene.create_actor_builder()
    b.add_box_collision(half_size=[0.02] * 3)
    cube = b.build()
    cube.set_pose(sapien.Pose(offset + [0.05, 0, 0.02]))
    q = np.array(spec.rest_qpos, dtype=np.float32)
    a.set_qpos(q)
    for j, v in zip(a.active_joints, q):
        j.set_drive_target(float(v))
    return a, cube


def run(layout: str, num_envs: int, steps: int, seed: int = 0) -> float:
    spec = get_robot("panda")
    if layout == "shared":
        scenes = [sapien.Scene([sapien.physx.PhysxCpuSystem()])]
        items = [
            _populate(scenes[0], np.array([(i % ROW) * SPACING, (i // ROW) * SPACING, 0.0]), spec, i)
            for i in range(num_envs)
        ]
    else:
        scenes = [sapien.Scene([sapien.physx.PhysxCpuSystem()]) for _ in range(num_envs)]
        items = [_populate(s, np.zeros(3), spec, i) for i, s in enumerate(scenes)]
    for s in scenes:
        s.set_timestep(0.01)
    rest = np.array(spec.rest_qpos)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    for _ in range(steps):
        for a, _ in items:
            for j, v in zip(a.active_joints, rest + rng.uniform(-0.5, 0.5, len(rest))):
                j.set_drive_target(float(v))
        for _ in range(5):
            for s in scenes:
                s.step()
        for a, cube in items:
            a.get_qpos(), a.get_qvel(), cube.get_pose()
    return steps * num_envs / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.batching", description=__doc__.split("\n\n")[0])
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=300)
    args = p.parse_args()
    shared = run("shared", args.num_envs, args.steps)
    separate = run("separate", args.num_envs, args.steps)
    print(f"N={args.num_envs}: shared scene {shared:.0f} env-steps/s, separate scenes {separate:.0f} env-steps/s, "
          f"shared/separate = {shared / separate:.2f}x")


if __name__ == "__main__":
    main()

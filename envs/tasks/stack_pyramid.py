"""StackPyramid-v1, as ManiSkill 3.0.1 defines it (mani_skill/envs/tasks/tabletop/stack_pyramid.py).

Task: three 4 cm cubes, red "cubeA", green "cubeB" and blue "cubeC": set cubeA beside cubeB and
cubeC on top of both, and let go of them.

Randomisation: the cubes' xy are drawn one after the other, each uniform in [-0.1, 0.1] x
[-0.2, 0.2] and redrawn (up to 100 times) until it lies more than 2 x 2 cm x sqrt 2 from every
cube drawn before it (else the origin); all rest on the table, each with a uniform yaw. The
robot (default `panda_wristcam`) starts at the table scene's keyframe with N(0, 0.02) rad noise
on every arm joint.

Success: cubeA's centre is within 4 cm x sqrt 2 + 5 mm of cubeB's in the table plane; cubeC's is
within that of both cubeA's and cubeB's and more than 2 cm above or below each; cubeA and cubeC
move slower than 1 cm/s and turn slower than 0.5 rad/s, and the robot grasps neither. The
reward is sparse (ManiSkill defines no dense one). Episodes last 250 control steps.

For a motion planner: `self.cubeA`, `self.cubeB`, `self.cubeC` (ActorGroups),
`self.cube_half_sizes` (N, 3).
"""

from __future__ import annotations

import math

import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig
from envs.tasks.common import ROBOT_ROOT, build_box, build_table, place, reset_robot, spawn_apart
from envs.tasks.pick_cube import base_camera, render_camera

CUBE_HALF = 0.02
REGION_HALF = (0.1, 0.2)  # each cube's xy: uniform in [-0.1, 0.1] x [-0.2, 0.2]
SPAWN_TRIALS = 100
XY_TOLERANCE = math.hypot(2 * CUBE_HALF, 2 * CUBE_HALF) + 0.005
Z_GAP = 0.02  # cubeC lies more than this above (or below) cubeA and cubeB
LIN_STATIC, ANG_STATIC = 1e-2, 0.5  # m/s, rad/s
COLORS = {"cubeA": (1.0, 0.0, 0.0, 1.0), "cubeB": (0.0, 1.0, 0.0, 1.0), "cubeC": (0.0, 0.0, 1.0, 1.0)}


@register_env("StackPyramid-v1", max_episode_steps=250, robot_uids="panda_wristcam")
class StackPyramidEnv(BaseEnv):
    supported_robots = ("panda",)

    def _load_scene(self) -> None:
        build_table(self.world)
        for name, color in COLORS.items():
            setattr(self, name, build_box(self.world, name, (CUBE_HALF,) * 3, color))
        self.cube_half_sizes = torch.full((self.num_envs, 3), CUBE_HALF)
        self._load_agent(ROBOT_ROOT)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        return [base_camera((0.3, 0.0, 0.4), (-0.05, 0.0, 0.1)), *self.agent.spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        return [render_camera()]

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        reset_robot(self.agent, env_idx, rng)
        radius = torch.tensor([CUBE_HALF, CUBE_HALF]).norm()
        placed = spawn_apart(rng, [-h for h in REGION_HALF], REGION_HALF, radius, len(COLORS), SPAWN_TRIALS)
        z = torch.full((n, 1), CUBE_HALF)
        for name, xy in zip(COLORS, placed):
            place(getattr(self, name), env_idx, torch.cat((xy, z), 1), rng.euler_quat(0, 2 * math.pi))

    def _on(self, offset: torch.Tensor, top: bool) -> torch.Tensor:
        near = offset[:, :2].norm(dim=1) <= XY_TOLERANCE
        return near & (offset[:, 2].abs() > Z_GAP) if top else near

    def _settled(self, cube) -> torch.Tensor:
        vel = cube.velocity()
        static = (vel[:, :3].norm(dim=1) <= LIN_STATIC) & (vel[:, 3:].norm(dim=1) <= ANG_STATIC)
        return static & ~self.agent.is_grasping_actor(cube)

    def evaluate(self) -> dict[str, torch.Tensor]:
        a, b, c = (g.pose()[:, :3] for g in (self.cubeA, self.cubeB, self.cubeC))
        a_settled, c_settled = self._settled(self.cubeA), self._settled(self.cubeC)
        a_by_b = self._on(a - b, top=False) & a_settled
        c_on_b = self._on(b - c, top=True) & c_settled
        c_on_a = self._on(a - c, top=True) & c_settled
        return {"success": a_by_b & c_on_b & c_on_a, "fail": torch.zeros(self.num_envs, dtype=torch.bool)}

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tcp = self.agent.tcp_pose
        obs = {"tcp_pose": tcp}
        if self.obs_mode.include_state:
            a, b, c = (g.pose() for g in (self.cubeA, self.cubeB, self.cubeC))
            obs.update(
                cubeA_pose=a,
                cubeB_pose=b,
                cubeC_pose=c,
                tcp_to_cubeA_pos=a[:, :3] - tcp[:, :3],
                tcp_to_cubeB_pos=b[:, :3] - tcp[:, :3],
                tcp_to_cubeC_pos=c[:, :3] - tcp[:, :3],
                cubeA_to_cubeB_pos=b[:, :3] - a[:, :3],
                cubeB_to_cubeC_pos=c[:, :3] - b[:, :3],
                cubeA_to_cubeC_pos=c[:, :3] - a[:, :3],
            )
        return obs

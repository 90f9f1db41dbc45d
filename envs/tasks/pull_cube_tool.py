"""PullCubeTool-v1, as ManiSkill 3.0.1 defines it (mani_skill/envs/tasks/tabletop/pull_cube_tool.py).

Task: the blue 4 cm "cube" lies beyond the arm's reach; pull it back with the red L-shaped
"l_shape_tool": a 20 x 5 x 5 cm handle along the tool's x (density 500) ending in a hook, 5 cm
along x and 10 cm along +y (density 1000).

Randomisation: the tool's origin (the handle's near end) is uniform in [-0.3, -0.1]^2, resting
on the table, unturned; the cube's centre is uniform in [0.05, 0.25] x [-0.25, 0.05], let go
5 mm above the table, with a yaw uniform in [-pi/6, pi/6]. The robot (default `panda`) starts at
the table scene's keyframe with N(0, 0.02) rad noise on every arm joint.

Success: the cube's centre is less than 0.6 m from the robot's base in the table plane. No fail
condition. Episodes last 100 control steps. ManiSkill's normalised dense reward is its dense
reward over 5, success adding 5 to the staged terms, so it exceeds 1 on success (as ManiSkill's
does); it also reports the cube's progress towards, and distance from, a point 3.5 cm in front
of the base (per env here; ManiSkill gives their batch mean).

For a motion planner: `self.tool_parts` (the tool's boxes in its frame), `self.cube_half_size`
(3,), `self.tool_half_size` (3,) (the handle's), `base_xy()` (N, 2) and `REACH_RADIUS`.
"""

from __future__ import annotations

import math

import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig
from envs.tasks.common import ROBOT_ROOT, Part, build_box, build_parts, build_table, place, reset_robot
from envs.tasks.pick_cube import base_camera, render_camera

CUBE_HALF = 0.02
CUBE_DROP_Z = 0.02 / 2 + 0.015  # ManiSkill lets the cube go at "cube_size / 2 + 0.015" with cube_size 0.02
HANDLE, HOOK, WIDTH, HEIGHT = 0.2, 0.05, 0.05, 0.05  # lengths (m)
ARM_REACH = 0.35
TOOL_XY = (-0.3, -0.1)
CUBE_X = (ARM_REACH - 0.3, ARM_REACH - 0.3 + HANDLE)
CUBE_Y = (-0.25, 0.05)
CUBE_YAW = math.pi / 6
REACH_RADIUS = 0.6  # success: the cube this close to the base in the table plane
RED = (1.0, 0.0, 0.0, 1.0)
BLUE = (12 / 255, 42 / 255, 160 / 255, 1.0)
MAX_REWARD = 5.0


def tool_parts() -> list[Part]:
    """The L-shaped tool in its frame: the handle from the origin along +x, the hook at its far
    end reaching out along +y."""
    return [
        Part((HANDLE / 2, WIDTH / 2, HEIGHT / 2), sapien.Pose([HANDLE / 2, 0.0, 0.0]), RED, density=500.0),
        Part((HOOK / 2, WIDTH, HEIGHT / 2), sapien.Pose([HANDLE - HOOK / 2, WIDTH, 0.0]), RED),
    ]


@register_env("PullCubeTool-v1", max_episode_steps=100)
class PullCubeToolEnv(BaseEnv):
    supported_robots = ("panda",)

    def _load_scene(self) -> None:
        build_table(self.world)
        self.cube = build_box(self.world, "cube", (CUBE_HALF,) * 3, BLUE)
        self.tool_parts = tool_parts()
        self.l_shape_tool = build_parts(self.world, "l_shape_tool", lambda i: self.tool_parts, local_pose=sapien.Pose([0, 0, HEIGHT / 2]))
        self.cube_half_size = torch.full((3,), CUBE_HALF)
        self.tool_half_size = torch.tensor([HANDLE / 2, WIDTH / 2, HEIGHT / 2])
        self._load_agent(ROBOT_ROOT)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        return [base_camera((0.3, 0.0, 0.5), (-0.1, 0.0, 0.1)), *self.agent.spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        return [render_camera()]

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        reset_robot(self.agent, env_idx, rng)
        tool_xy = rng.uniform(TOOL_XY[1], TOOL_XY[0], (2,))  # ManiSkill's map: -0.1 - 0.2 u
        place(self.l_shape_tool, env_idx, torch.cat((tool_xy, torch.full((n, 1), HEIGHT / 2)), 1),
              torch.tensor([[1.0, 0.0, 0.0, 0.0]]).expand(n, 4))
        cube = torch.cat((rng.uniform(*CUBE_X, (1,)), rng.uniform(*CUBE_Y, (1,)), torch.full((n, 1), CUBE_DROP_Z)), 1)
        place(self.cube, env_idx, cube, rng.euler_quat(-CUBE_YAW, CUBE_YAW))

    def base_xy(self) -> torch.Tensor:  # (N, 2): the robot's base (its root link) in the table plane
        return self.agent.root_pose[:, :2]

    def evaluate(self) -> dict[str, torch.Tensor]:
        cube = self.cube.pose()[:, :3]
        close = (cube[:, :2] - self.base_xy()).norm(dim=1) < REACH_RADIUS
        centre = self.agent.root_pose[:, :3] + torch.tensor([ARM_REACH * 0.1, 0.0, 0.0])
        distance = (cube - centre).norm(dim=1)
        info = {
            "success": close,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "success_once": close,
            "success_at_end": close,
            "cube_progress": 1 - torch.tanh(3.0 * distance),
            "cube_distance": distance,
        }
        info["reward"] = self.compute_dense_reward(info)
        return info

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = {"tcp_pose": self.agent.tcp_pose}
        if self.obs_mode.include_state:
            obs["cube_pose"] = self.cube.pose()
            obs["tool_pose"] = self.l_shape_tool.pose()
        return obs

    def raw_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's dense reward: 2 x reaching a point 2 cm along the handle, 2 for grasping
        the tool (forces within 20 degrees of the fingers' opening); while grasped, 1.5 x the
        tool's closeness to its place beside the cube and, once within 5 cm of it, 3 x the cube's
        progress towards a point 5 cm in front of the base; -2 when the cube lies past x = 0.5;
        +5 on success."""
        tcp, cube, tool = self.agent.tcp_pose[:, :3], self.cube.pose()[:, :3], self.l_shape_tool.pose()[:, :3]
        base = self.agent.root_pose[:, :3]
        reach = 2.0 * (1 - torch.tanh(5.0 * (tcp - tool - torch.tensor([0.02, 0.0, 0.0])).norm(dim=1)))
        grasped = self.agent.is_grasping_actor(self.l_shape_tool, max_angle=20.0).float()
        hook_place = cube + torch.tensor([-(HOOK + CUBE_HALF), -0.067, 0.0])
        off = (tool - hook_place).norm(dim=1)
        positioning = 1.5 * (1 - torch.tanh(3.0 * off))
        target = base + torch.tensor([0.05, 0.0, 0.0])
        initial = (torch.tensor([ARM_REACH + 0.1, 0.0, 0.02 / 2]) - target).norm(dim=1)
        progress = (initial - (cube - target).norm(dim=1)) / initial
        pulling = 3.0 * progress * (off < 0.05).float()
        reward = reach + 2.0 * grasped + (positioning + pulling) * grasped
        reward = reward - 2.0 * (cube[:, 0] > ARM_REACH + 0.15).float()
        return reward + MAX_REWARD * info["success"].float()

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's normalised dense reward: the dense reward over 5."""
        return self.raw_dense_reward(info) / MAX_REWARD

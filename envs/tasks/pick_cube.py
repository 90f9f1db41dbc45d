"""PickCube-v1, as ManiSkill 3.0.1 defines it (mani_skill/envs/tasks/tabletop/pick_cube.py).

Task: pick up the red 4 cm "cube" from the table and bring its centre to the "goal_site" (a
green sphere of the goal threshold's radius, hidden from observation cameras), then hold still.

Randomisation: the cube's centre is uniform in a 20 x 20 cm square at the table's centre,
resting on the table with a uniform yaw; the goal's xy is uniform over the same square and its
height uniform in 0-30 cm above the cube's resting centre; the robot starts at the table scene's
keyframe with N(0, 0.02) rad noise on every arm joint.

Success: the cube's centre is within 2.5 cm of the goal and no arm joint moves faster than
0.2 rad/s. Episodes last 50 control steps.
"""

from __future__ import annotations

import math

import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig, look_at
from envs.tasks.common import ROBOT_ROOT, build_box, build_goal_site, build_table, place, reset_robot

CUBE_HALF = 0.02
GOAL_THRESHOLD = 0.025
SPAWN_HALF = 0.1  # the cube's and the goal's xy: uniform in [-0.1, 0.1]^2
MAX_GOAL_HEIGHT = 0.3
STATIC_THRESHOLD = 0.2  # rad/s
MAX_REWARD = 5.0


def base_camera(eye=(0.3, 0.0, 0.6), target=(-0.1, 0.0, 0.1)) -> CameraConfig:
    """ManiSkill's tabletop observation camera: 128 x 128, fov pi/2, looking at the robot."""
    return CameraConfig("base_camera", 128, 128, fov=math.pi / 2, near=0.01, far=100.0, pose=look_at(eye, target))


def render_camera(eye=(0.6, 0.7, 0.6), target=(0.0, 0.0, 0.35)) -> CameraConfig:
    """ManiSkill's tabletop human-view camera: 512 x 512, fov 1 rad."""
    return CameraConfig("render_camera", 512, 512, fov=1.0, near=0.01, far=100.0, pose=look_at(eye, target))


@register_env("PickCube-v1", max_episode_steps=50)
class PickCubeEnv(BaseEnv):
    supported_robots = ("panda", "ur5e")

    def _load_scene(self) -> None:
        build_table(self.world)
        self.cube = build_box(self.world, "cube", (CUBE_HALF,) * 3, (1.0, 0.0, 0.0, 1.0))
        self.goal_site = build_goal_site(self.world, "goal_site", GOAL_THRESHOLD, (0.0, 1.0, 0.0, 1.0))
        self.cube_half_size = torch.full((3,), CUBE_HALF)
        self._load_agent(ROBOT_ROOT)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        return [base_camera(), *self.agent.spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        return [render_camera()]

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        reset_robot(self.agent, env_idx, rng)
        xy = rng.uniform(-SPAWN_HALF, SPAWN_HALF, (2,))
        place(self.cube, env_idx, torch.cat((xy, torch.full((n, 1), CUBE_HALF)), 1), rng.euler_quat(0, 2 * math.pi))
        goal_xy = rng.uniform(-SPAWN_HALF, SPAWN_HALF, (2,))
        goal_z = rng.uniform(0.0, MAX_GOAL_HEIGHT, (1,)) + CUBE_HALF
        place(self.goal_site, env_idx, torch.cat((goal_xy, goal_z), 1), torch.tensor([[1.0, 0, 0, 0]]).expand(n, 4))

    @property
    def goal_pos(self) -> torch.Tensor:  # (N, 3)
        return self.goal_site.pose()[:, :3]

    def evaluate(self) -> dict[str, torch.Tensor]:
        placed = (self.goal_pos - self.cube.pose()[:, :3]).norm(dim=1) <= GOAL_THRESHOLD
        grasped = self.agent.is_grasping_actor(self.cube)
        static = self.agent.is_static(STATIC_THRESHOLD)
        return {
            "success": placed & static,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "is_obj_placed": placed,
            "is_robot_static": static,
            "is_grasped": grasped,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tcp, cube = self.agent.tcp_pose, self.cube.pose()
        obs = {"is_grasped": info["is_grasped"], "tcp_pose": tcp, "goal_pos": self.goal_pos}
        if self.obs_mode.include_state:
            obs["obj_pose"] = cube
            obs["tcp_to_obj_pos"] = cube[:, :3] - tcp[:, :3]
            obs["obj_to_goal_pos"] = self.goal_pos - cube[:, :3]
        return obs

    def raw_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's dense reward (0 to 5): reaching the cube, grasping it, the cube's closeness
        to the goal while grasped, and a still arm once placed; success scores 5."""
        tcp, cube = self.agent.tcp_pose[:, :3], self.cube.pose()[:, :3]
        grasped = info["is_grasped"].float()
        reward = 1 - torch.tanh(5 * (cube - tcp).norm(dim=1))
        reward = reward + grasped
        reward = reward + (1 - torch.tanh(5 * (self.goal_pos - cube).norm(dim=1))) * grasped
        still = 1 - torch.tanh(5 * self.agent.qvel[:, self.agent.arm].norm(dim=1))
        reward = reward + still * info["is_obj_placed"].float()
        return torch.where(info["success"], torch.full_like(reward, MAX_REWARD), reward)

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's normalised dense reward: the dense reward over 5."""
        return self.raw_dense_reward(info) / MAX_REWARD

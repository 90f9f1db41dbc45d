"""PushCube-v1.

Task: push a 4 cm cube along the table, away from the robot, into a goal region: a disc of
5 cm radius drawn on the table (drawn only in visual worlds; the goal is a tensor).

Randomisation: the cube's centre is uniform in x in [-0.2, 0.0], y in [-0.1, 0.1] (m, table
frame), resting on the table with a uniform yaw; the goal's centre is the cube's plus
(U(0.12, 0.2), U(-0.05, 0.05)); the arm starts at its rest keyframe with N(0, 0.02) rad noise.

Success: the cube's centre is within 5 cm (in the table plane) of the goal's centre and the
cube rests on the table (its centre at most 1 cm above resting height).

For a motion planner: `self.cube` (ActorGroup), `self.cube_half_sizes` (N, 3), `self.goal_pos`
(N, 3, on the table top), `GOAL_RADIUS`. Close the gripper, put the fingers against the cube's
side facing away from the goal (`push_point`) and move along `goal_pos - cube`.
"""

from __future__ import annotations

import math

import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.tasks.common import ROBOT_ROOT, build_box, build_goal_marker, build_table, object_goal_obs, place, reset_robot, yaw_quat

CUBE_HALF = 0.02
GOAL_RADIUS = 0.05


@register_env("PushCube-v1", max_episode_steps=100)
class PushCubeEnv(BaseEnv):
    supported_robots = ("panda", "ur5e")
    task_state = ("goal_pos",)
    cube_x = (-0.2, 0.0)  # range of the cube's x at reset
    goal_dx = (0.12, 0.2)  # range of the goal's x offset from the cube

    def _load_scene(self) -> None:
        build_table(self.world)
        self.cube = build_box(self.world, "cube", (CUBE_HALF,) * 3, (0.1, 0.4, 0.85, 1))
        self.cube_half_sizes = torch.full((self.num_envs, 3), CUBE_HALF)
        self.goal_marker = build_goal_marker(self.world, "goal_marker", GOAL_RADIUS, (0.9, 0.9, 0.9, 1))
        self._load_agent(ROBOT_ROOT)
        self.goal_pos = torch.zeros(self.num_envs, 3)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        x = rng.uniform(*self.cube_x, (1,))
        y = rng.uniform(-0.1, 0.1, (1,))
        yaw = rng.uniform(0, 2 * math.pi, (1,))
        place(self.cube, env_idx, torch.cat((x, y, torch.full((n, 1), CUBE_HALF)), 1), yaw_quat(yaw))
        offset = torch.cat((rng.uniform(*self.goal_dx, (1,)), rng.uniform(-0.05, 0.05, (1,)), torch.zeros(n, 1)), 1)
        self.goal_pos[env_idx] = torch.cat((x, y, torch.zeros(n, 1)), 1) + offset
        if self.goal_marker is not None:
            place(self.goal_marker, env_idx, self.goal_pos[env_idx], torch.tensor([[1.0, 0, 0, 0]]).expand(n, 4))
        reset_robot(self.agent, env_idx, rng)

    def push_point(self) -> torch.Tensor:  # (N, 3)
        """Where the closed fingers' centre should be to push the cube towards the goal."""
        cube = self.cube.pose()[:, :3]
        direction = self.goal_pos[:, :2] - cube[:, :2]
        direction = direction / direction.norm(dim=1, keepdim=True).clamp_min(1e-6)
        behind = cube[:, :2] - direction * (CUBE_HALF + 0.02)
        return torch.cat((behind, cube[:, 2:]), 1)

    def evaluate(self) -> dict[str, torch.Tensor]:
        cube = self.cube.pose()[:, :3]
        in_region = (cube[:, :2] - self.goal_pos[:, :2]).norm(dim=1) <= GOAL_RADIUS
        on_table = cube[:, 2] <= CUBE_HALF + 0.01
        return {
            "success": in_region & on_table,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "is_obj_placed": in_region & on_table,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = object_goal_obs(self.agent.tcp_pose, self.cube.pose(), self.goal_pos)
        # where the fingers must go before pushing: the point behind the cube on the goal's line
        obs["tcp_to_push_pos"] = self.push_point() - self.agent.tcp_pose[:, :3]
        return obs

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """Reaching the push point (weight 1) plus the cube's closeness to the goal (weight 2),
        scaled to at most 0.75; success scores 1."""
        tcp = self.agent.tcp_pose[:, :3]
        cube = self.cube.pose()[:, :3]
        reach = 1 - torch.tanh(5 * (self.push_point() - tcp).norm(dim=1))
        place_ = 1 - torch.tanh(5 * (self.goal_pos[:, :2] - cube[:, :2]).norm(dim=1))
        reward = (reach + 2 * place_) / 4
        return torch.where(info["success"], torch.ones_like(reward), reward)

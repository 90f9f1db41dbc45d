"""PickCube-v1.

Task: pick up a 4 cm cube from the table and hold it at a goal point in the air.

Randomisation: the cube's centre is uniform in a 20 x 20 cm square at the table's centre,
resting on the table with a uniform yaw; the goal is uniform over the same square at 0-30 cm
above the cube's resting height; the arm starts at its rest keyframe with N(0, 0.02) rad noise.

Success: the cube's centre is within 2.5 cm of the goal and every arm joint moves slower than
0.2 rad/s.
"""

from __future__ import annotations

import math

import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.pose import axis_angle_to_quat
from envs.core.registry import register_env
from envs.tasks.common import ROBOT_ROOT, build_box, build_table, object_goal_obs

CUBE_HALF = 0.02
GOAL_THRESHOLD = 0.025


@register_env("PickCube-v1", max_episode_steps=100)
class PickCubeEnv(BaseEnv):
    supported_robots = ("panda", "ur5e")
    task_state = ("goal_pos",)

    def _load_scene(self) -> None:
        build_table(self.world)
        self.cube = build_box(self.world, "cube", (CUBE_HALF,) * 3, (0.85, 0.15, 0.1, 1))
        self.cube_half_size = torch.full((3,), CUBE_HALF)
        self._load_agent(ROBOT_ROOT)
        self.goal_pos = torch.zeros(self.num_envs, 3)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        xy = rng.uniform(-0.1, 0.1, (2,))
        yaw = rng.uniform(0, 2 * math.pi, (1,))
        pose = torch.cat((xy, torch.full((n, 1), CUBE_HALF), axis_angle_to_quat(yaw * torch.tensor([0.0, 0.0, 1.0]))), 1)
        self.cube.set_pose(pose, env_idx)
        self.cube.set_velocity(torch.zeros(n, 6), env_idx)
        goal_xy = rng.uniform(-0.1, 0.1, (2,))
        goal_z = rng.uniform(0.0, 0.3, (1,)) + CUBE_HALF
        self.goal_pos[env_idx] = torch.cat((goal_xy, goal_z), 1)
        qpos = torch.tensor(self.agent.spec.rest_qpos).repeat(n, 1)
        qpos[:, self.agent.arm] += rng.normal(0.02, (len(self.agent.arm),))
        self.agent.reset_to(qpos, env_idx)

    def evaluate(self) -> dict[str, torch.Tensor]:
        cube = self.cube.pose()
        placed = (cube[:, :3] - self.goal_pos).norm(dim=1) <= GOAL_THRESHOLD
        static = self.agent.is_static(0.2)
        grasped = self.agent.is_grasping(cube[:, :3], 2 * CUBE_HALF)
        return {
            "success": placed & static,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "is_obj_placed": placed,
            "is_robot_static": static,
            "is_grasped": grasped,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = object_goal_obs(self.agent.tcp_pose, self.cube.pose(), self.goal_pos)
        obs["is_grasped"] = info["is_grasped"].float()[:, None]
        # where the TCP must carry the cube, from the agent's own pose and the given goal: no object
        # state, so image policies may take it (their state_keys) beside tcp_pose and goal_pos
        obs["tcp_to_goal_pos"] = self.goal_pos - self.agent.tcp_pose[:, :3]
        return obs

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """Stages, each worth at most 1, summed and divided by 5: reach the cube, grasp it, carry
        it to the goal, hold still there; success scores the full 5."""
        tcp = self.agent.tcp_pose[:, :3]
        cube = self.cube.pose()[:, :3]
        grasped = info["is_grasped"].float()
        reach = 1 - torch.tanh(5 * (cube - tcp).norm(dim=1))
        place = 1 - torch.tanh(5 * (self.goal_pos - cube).norm(dim=1))
        still = 1 - torch.tanh(5 * self.agent.qvel[:, self.agent.arm].norm(dim=1))
        reward = reach + grasped + place * grasped + still * info["is_obj_placed"].float()
        reward = torch.where(info["success"], torch.full_like(reward, 5.0), reward + grasped)
        return reward / 5.0

"""StackCube-v1.

Task: pick up the red 4 cm cube A and place it on the green 4 cm cube B, let go, and leave it
resting there.

Randomisation: the midpoint of the two cubes is uniform in a 20 x 20 cm square at the table's
centre; A and B sit on either side of it along a uniform direction, 6-12 cm apart (centre to
centre, so they never touch); each has a uniform yaw; the arm starts at its rest keyframe with
N(0, 0.02) rad noise.

Success: A's centre is within 2 cm of the point 4 cm above B's centre in the table plane and
within 5 mm of it in height, A moves slower than 2 cm/s, A is not grasped, and every arm joint
moves slower than 0.2 rad/s.

For a motion planner: `self.cube_a`, `self.cube_b` (ActorGroups), `self.cube_half_sizes`
(N, 3), `goal_pos()` (N, 3): where A's centre belongs. Grasp A from above across a pair of faces
(its yaw modulo 90 degrees), place it at goal_pos, open the gripper, retreat.
"""

from __future__ import annotations

import math

import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.registry import register_env
from envs.tasks.common import ROBOT_ROOT, build_box, build_table, place, reset_robot, yaw_quat

CUBE_HALF = 0.02
XY_TOLERANCE = 0.02
Z_TOLERANCE = 0.005


@register_env("StackCube-v1", max_episode_steps=150)
class StackCubeEnv(BaseEnv):
    supported_robots = ("panda", "ur5e")

    def _load_scene(self) -> None:
        build_table(self.world)
        self.cube_a = build_box(self.world, "cube_a", (CUBE_HALF,) * 3, (0.85, 0.15, 0.1, 1))
        self.cube_b = build_box(self.world, "cube_b", (CUBE_HALF,) * 3, (0.15, 0.7, 0.2, 1))
        self.cube_half_sizes = torch.full((self.num_envs, 3), CUBE_HALF)
        self._load_agent(ROBOT_ROOT)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        centre = rng.uniform(-0.1, 0.1, (2,))
        angle = rng.uniform(0, 2 * math.pi, (1,))
        half_gap = rng.uniform(0.03, 0.06, (1,))
        offset = half_gap * torch.cat((torch.cos(angle), torch.sin(angle)), 1)
        yaws = rng.uniform(0, 2 * math.pi, (2,))
        z = torch.full((n, 1), CUBE_HALF)
        place(self.cube_a, env_idx, torch.cat((centre + offset, z), 1), yaw_quat(yaws[:, :1]))
        place(self.cube_b, env_idx, torch.cat((centre - offset, z), 1), yaw_quat(yaws[:, 1:]))
        reset_robot(self.agent, env_idx, rng)

    def goal_pos(self) -> torch.Tensor:  # (N, 3): A's centre when resting on B
        return self.cube_b.pose()[:, :3] + torch.tensor([0.0, 0.0, 2 * CUBE_HALF])

    def evaluate(self) -> dict[str, torch.Tensor]:
        a = self.cube_a.pose()[:, :3]
        error = a - self.goal_pos()
        on_b = (error[:, :2].norm(dim=1) <= XY_TOLERANCE) & (error[:, 2].abs() <= Z_TOLERANCE)
        a_still = self.cube_a.velocity()[:, :3].norm(dim=1) <= 0.02
        grasped = self.agent.is_grasping(a, 2 * CUBE_HALF)
        static = self.agent.is_static(0.2)
        return {
            "success": on_b & a_still & ~grasped & static,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "is_cube_a_on_b": on_b,
            "is_cube_a_grasped": grasped,
            "is_robot_static": static,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tcp = self.agent.tcp_pose
        a, b = self.cube_a.pose(), self.cube_b.pose()
        return {
            "tcp_pose": tcp,
            "cube_a_pose": a,
            "cube_b_pose": b,
            "tcp_to_cube_a_pos": a[:, :3] - tcp[:, :3],
            "cube_a_to_goal_pos": self.goal_pos() - a[:, :3],
            "is_cube_a_grasped": info["is_cube_a_grasped"].float()[:, None],
        }

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """Stages, each worth at most 1, summed and divided by 6: reach A, grasp it, carry it
        above B, then (once on B) let go and hold the arm still; success scores 6."""
        tcp = self.agent.tcp_pose[:, :3]
        a = self.cube_a.pose()[:, :3]
        grasped = info["is_cube_a_grasped"].float()
        on_b = info["is_cube_a_on_b"].float()
        reach = 1 - torch.tanh(5 * (a - tcp).norm(dim=1))
        carry = 1 - torch.tanh(5 * (self.goal_pos() - a).norm(dim=1))
        still = 1 - torch.tanh(5 * self.agent.qvel[:, self.agent.arm].norm(dim=1))
        held_or_on_b = torch.maximum(grasped, on_b)
        reward = reach + held_or_on_b + carry * held_or_on_b + on_b * ((1 - grasped) + still)
        reward = torch.where(info["success"], torch.full_like(reward, 6.0), reward)
        return reward / 6.0

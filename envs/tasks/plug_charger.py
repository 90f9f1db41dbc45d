"""PlugCharger-v1.

Task: pick up a two-prong charger lying on the table and plug it into the receptacle in a
wall standing on the table: both prongs into their slots, the charger's face against the wall.
The charger is a 6 x 4 x 3 cm base with two 2.4 cm long, 4 x 12 mm prongs 2 cm apart; each slot
is 1.5 mm wider than its prong on every side.

Randomisation: the charger rests on the table with its centre uniform in x in [-0.15, -0.05],
y in [-0.15, 0.15] and its prongs pointing along +x turned by U(-60, 60) degrees; the wall's
receptacle is 10 cm above the table, with the plugged-in charger's centre at x in [0.05, 0.1],
y in [-0.1, 0.1] and the plugging direction along +x turned by U(-22.5, 22.5) degrees; the arm
starts at its rest keyframe with N(0, 0.02) rad noise.

Success: the charger's centre is within 5 mm of its plugged-in position and its orientation
within 0.2 rad of the plugged-in orientation (or of that turned half a turn about the prongs'
direction, which looks and fits the same).

For a motion planner: `self.charger` (ActorGroup; frame at the base's centre, x along the
prongs), `self.charger_parts`, `self.receptacle` (kinematic ActorGroup whose frame is the
plugged-in charger pose, i.e. the goal: `goal_pose()`), `self.receptacle_parts` (the wall as
`Part`s in that frame), `charger_grasp_pose()`. Grasp the base from above at
`charger_grasp_pose()` (behind its centre so the hand stays clear of the wall) with the fingers
across its width, lift, hold the prongs on the slots' axis a few cm out, and push along x.
"""

from __future__ import annotations

import math

import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.pose import pose_mul, quat_angle, quat_mul
from envs.core.registry import register_env
from envs.tasks.common import (
    ROBOT_ROOT,
    Part,
    build_parts,
    build_table,
    place,
    plate_with_slots,
    reset_robot,
    yaw_quat,
)

BASE_HALF = (0.03, 0.02, 0.015)
PRONG_HALF = (0.012, 0.002, 0.006)
PRONG_Y = 0.01  # prong centres at y = +-PRONG_Y
SLOT_CLEARANCE = 0.0015
RECEPTACLE_Z = 0.1  # height of the plugged-in charger's centre above the table
WALL = (0.03, 0.08, 0.06)  # thickness, half width, height above the receptacle's centre
GRASP_X = -0.015  # grasp point on the base's axis, behind its centre
POS_TOLERANCE = 0.005
ROT_TOLERANCE = 0.2

CHARGER_PARTS = [
    Part(BASE_HALF, color=(0.9, 0.9, 0.88, 1)),
    *(
        Part(PRONG_HALF, sapien.Pose([BASE_HALF[0] + PRONG_HALF[0], y, 0]), (0.75, 0.6, 0.2, 1))
        for y in (-PRONG_Y, PRONG_Y)
    ),
]
RECEPTACLE_PARTS = plate_with_slots(
    (BASE_HALF[0], BASE_HALF[0] + WALL[0]),
    (-WALL[1], WALL[1]),
    (-RECEPTACLE_Z, WALL[2]),
    [(y, PRONG_HALF[1] + SLOT_CLEARANCE) for y in (-PRONG_Y, PRONG_Y)],
    PRONG_HALF[2] + SLOT_CLEARANCE,
    (0.85, 0.82, 0.75, 1),
)
FLIP_X = torch.tensor([0.0, 1.0, 0.0, 0.0])  # half a turn about x: the charger's symmetry


@register_env("PlugCharger-v1", max_episode_steps=200)
class PlugChargerEnv(BaseEnv):
    supported_robots = ("panda",)

    def _load_scene(self) -> None:
        build_table(self.world)
        self.charger_parts = CHARGER_PARTS
        self.receptacle_parts = RECEPTACLE_PARTS
        self.charger = build_parts(self.world, "charger", lambda i: CHARGER_PARTS)
        self.receptacle = build_parts(self.world, "receptacle", lambda i: RECEPTACLE_PARTS, body="kinematic")
        self._load_agent(ROBOT_ROOT)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        xy = torch.cat((rng.uniform(-0.15, -0.05, (1,)), rng.uniform(-0.15, 0.15, (1,))), 1)
        yaw = rng.uniform(-math.pi / 3, math.pi / 3, (1,))
        place(self.charger, env_idx, torch.cat((xy, torch.full((n, 1), BASE_HALF[2])), 1), yaw_quat(yaw))
        goal_xy = torch.cat((rng.uniform(0.05, 0.1, (1,)), rng.uniform(-0.1, 0.1, (1,))), 1)
        goal_yaw = rng.uniform(-math.pi / 8, math.pi / 8, (1,))
        place(self.receptacle, env_idx, torch.cat((goal_xy, torch.full((n, 1), RECEPTACLE_Z)), 1), yaw_quat(goal_yaw))
        reset_robot(self.agent, env_idx, rng)

    def goal_pose(self) -> torch.Tensor:  # (N, 7): the charger's pose when plugged in
        return self.receptacle.pose()

    def charger_grasp_pose(self) -> torch.Tensor:  # (N, 7)
        offset = torch.tensor([[GRASP_X, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]).expand(self.num_envs, 7)
        return pose_mul(self.charger.pose(), offset)

    def evaluate(self) -> dict[str, torch.Tensor]:
        charger, goal = self.charger.pose(), self.goal_pose()
        distance = (charger[:, :3] - goal[:, :3]).norm(dim=1)
        flipped = quat_mul(goal[:, 3:], FLIP_X.expand(len(goal), 4))
        angle = torch.minimum(quat_angle(charger[:, 3:], goal[:, 3:]), quat_angle(charger[:, 3:], flipped))
        grasp_point = self.charger_grasp_pose()[:, :3]
        grasped = self.agent.is_grasping(grasp_point, 2 * BASE_HALF[1])
        return {
            "success": (distance <= POS_TOLERANCE) & (angle <= ROT_TOLERANCE),
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "is_charger_grasped": grasped,
            "distance_to_goal": distance,
            "angle_to_goal": angle,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tcp = self.agent.tcp_pose
        charger, goal = self.charger.pose(), self.goal_pose()
        return {
            "tcp_pose": tcp,
            "charger_pose": charger,
            "goal_pose": goal,
            "tcp_to_charger_pos": charger[:, :3] - tcp[:, :3],
            "charger_to_goal_pos": goal[:, :3] - charger[:, :3],
        }

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """Stages, each worth at most 1, summed and divided by 5: reach the grasp point, grasp,
        turn the charger to the plugged-in orientation, bring it to the plugged-in position;
        success scores 5."""
        tcp = self.agent.tcp_pose[:, :3]
        grasped = info["is_charger_grasped"].float()
        reach = 1 - torch.tanh(5 * (self.charger_grasp_pose()[:, :3] - tcp).norm(dim=1))
        turned = 1 - info["angle_to_goal"] / math.pi
        closer = 1 - torch.tanh(10 * info["distance_to_goal"])
        reward = reach + grasped + (turned + closer) * grasped
        reward = torch.where(info["success"], torch.full_like(reward, 5.0), reward)
        return reward / 5.0

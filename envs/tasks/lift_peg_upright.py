"""LiftPegUpright-v1.

Task: a 24 cm long box peg with a 5 cm square cross-section lies on its side on the table;
stand it upright on one of its ends.

Randomisation: the peg's centre is uniform in a 20 x 20 cm square at the table's centre, the
peg lying on a side face (centre 2.5 cm above the table) with its long axis at a uniform yaw;
the arm starts at its rest keyframe with N(0, 0.02) rad noise.

Success: the peg's long axis is within 0.1 rad of vertical, its lower end is on the table (its
centre within 5 mm of half its length above the table) and it moves slower than 2 cm/s.

For a motion planner: `self.peg` (ActorGroup; the long axis is the peg's local x, the head end
+x is drawn in a second colour), `self.peg_half_sizes` (N, 3). Grasp it from above at its centre
with the fingers across its width, lift it, turn the gripper 90 degrees about the fingers'
closing axis so the peg hangs vertically, lower it until its end touches the table, let go.
"""

from __future__ import annotations

import math

import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.pose import quat_apply
from envs.core.registry import register_env
from envs.tasks.common import (
    ROBOT_ROOT,
    build_parts,
    build_table,
    nearest_axis_point,
    peg_parts,
    place,
    reset_robot,
    yaw_quat,
)

PEG_HALF = (0.12, 0.025, 0.025)
UPRIGHT_TOLERANCE = 0.1  # rad
HEIGHT_TOLERANCE = 0.005  # m


@register_env("LiftPegUpright-v1", max_episode_steps=150)
class LiftPegUprightEnv(BaseEnv):
    supported_robots = ("panda",)

    def _load_scene(self) -> None:
        build_table(self.world)
        parts = peg_parts(PEG_HALF, (0.9, 0.55, 0.1, 1), (0.15, 0.3, 0.75, 1))
        self.peg = build_parts(self.world, "peg", lambda i: parts)
        self.peg_half_sizes = torch.tensor([PEG_HALF]).repeat(self.num_envs, 1)
        self._load_agent(ROBOT_ROOT)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        xy = rng.uniform(-0.1, 0.1, (2,))
        yaw = rng.uniform(0, 2 * math.pi, (1,))
        place(self.peg, env_idx, torch.cat((xy, torch.full((n, 1), PEG_HALF[2])), 1), yaw_quat(yaw))
        reset_robot(self.agent, env_idx, rng)

    def _axis(self) -> torch.Tensor:  # (N, 3): the peg's long axis in the env frame
        q = self.peg.pose()[:, 3:]
        return quat_apply(q, torch.tensor([1.0, 0.0, 0.0]).expand(len(q), 3))

    def evaluate(self) -> dict[str, torch.Tensor]:
        peg = self.peg.pose()
        tilt = torch.acos(self._axis()[:, 2].abs().clamp(max=1.0))
        upright = tilt <= UPRIGHT_TOLERANCE
        on_table = (peg[:, 2] - self.peg_half_sizes[:, 0]).abs() <= HEIGHT_TOLERANCE
        still = self.peg.velocity()[:, :3].norm(dim=1) <= 0.02
        held_at = nearest_axis_point(peg, self.peg_half_sizes[:, 0], self.agent.tcp_pose[:, :3])
        grasped = self.agent.is_grasping(held_at, 2 * PEG_HALF[1])
        return {
            "success": upright & on_table & still,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "is_peg_upright": upright,
            "is_peg_on_table": on_table,
            "is_peg_grasped": grasped,
            "peg_tilt": tilt,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tcp = self.agent.tcp_pose
        peg = self.peg.pose()
        return {
            "tcp_pose": tcp,
            "peg_pose": peg,
            "tcp_to_peg_pos": peg[:, :3] - tcp[:, :3],
            "is_peg_grasped": info["is_peg_grasped"].float()[:, None],
        }

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """Stages, each worth at most 1, summed and divided by 5: reach the peg's centre, grasp
        it, turn it upright, bring its lower end to the table while upright; success scores 5."""
        tcp = self.agent.tcp_pose[:, :3]
        peg = self.peg.pose()
        grasped = info["is_peg_grasped"].float()
        reach = 1 - torch.tanh(5 * (peg[:, :3] - tcp).norm(dim=1))
        upright = 1 - info["peg_tilt"] / (math.pi / 2)
        lowered = 1 - torch.tanh(10 * (peg[:, 2] - self.peg_half_sizes[:, 0]).abs())
        stood = torch.maximum(grasped, info["is_peg_upright"].float())
        reward = reach + grasped + upright * stood + lowered * info["is_peg_upright"].float()
        reward = torch.where(info["success"], torch.full_like(reward, 5.0), reward)
        return reward / 5.0

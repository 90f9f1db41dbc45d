"""PegInsertionSide-v1.

Task: pick up a box peg lying on the table and insert it sideways (horizontally) into a square
hole through a box fixed on the table. The hole is 3 mm wider than the peg on every side.

Randomisation: every env has its own peg, drawn once when the env is built, from the env's
geometry seed alone: half length U(0.085, 0.125) m, half width ("radius") U(0.015, 0.025) m;
the hole is built to fit. `geometry_seed=s` (default 0) gives env k the seed s + k, as
`reset(seed=s)` does, or a list gives one per env: env k's peg is the same whatever N is, and
`geometry_seed=[s + k]` rebuilds it in a one-env instance. Per episode: the peg lies on the
table with its centre uniform in x in [-0.1, 0.1], y in [-0.2, -0.05] and its head pointing
along +y turned by U(-45, 45) degrees; the hole's opening is centred 10 cm above the table at x
in [-0.05, 0.1], y in [0.15, 0.25], its axis along +y turned by U(-22.5, 22.5) degrees; the arm
starts at its rest keyframe with N(0, 0.02) rad noise.

Success: the centre of the peg's head end is at least 4 cm deep in the hole, inside the hole's
cross-section, and the peg's axis is within 0.2 rad of the hole's.

For a motion planner: `self.peg` (ActorGroup; the peg's local x runs from tail to head),
`self.peg_half_sizes` (N, 3), `self.box` (kinematic ActorGroup whose frame is the hole's: origin
at the centre of the opening, x into the hole), `self.box_parts[i]` (env i's box as `Part`s in
that frame, for collision checking), `self.hole_half_width` (N,), `INSERT_DEPTH`,
`peg_head_pos()`, `peg_grasp_pose()`. Grasp the peg from above at its centre with the fingers
across its width (off the centre of mass it turns between the box fingers), lift, hold its axis
on the hole's x axis with the head 1-5 cm in front of the opening, correct the remaining offset
from the measured head position (a held peg sags a few mm), and push along x.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.pose import pose_inv, pose_mul, quat_apply
from envs.core.registry import register_env
from envs.tasks.common import (
    ROBOT_ROOT,
    Part,
    build_parts,
    build_table,
    local_point,
    nearest_axis_point,
    peg_parts,
    place,
    plate_with_slots,
    reset_robot,
    yaw_quat,
)

PEG_HALF_LENGTH = (0.085, 0.125)
PEG_RADIUS = (0.015, 0.025)
CLEARANCE = 0.003  # gap between the centred peg and each side of the hole
HOLE_Z = 0.1  # height of the hole's axis above the table
BOX_DEPTH = 0.08  # length of the hole along its axis
BOX_WALL = 0.02  # wall thickness above and beside the hole
INSERT_DEPTH = 0.04
ALIGN_TOLERANCE = 0.2  # rad


def box_parts(hole_half: float) -> list[Part]:
    """The box around a square hole of half width hole_half, in the hole's frame."""
    outer = hole_half + BOX_WALL
    color = (0.55, 0.55, 0.6, 1)
    return plate_with_slots((0.0, BOX_DEPTH), (-outer, outer), (-HOLE_Z, outer), [(0.0, hole_half)], hole_half, color)


@register_env("PegInsertionSide-v1", max_episode_steps=200)
class PegInsertionSideEnv(BaseEnv):
    supported_robots = ("panda",)

    def __init__(self, *args, geometry_seed: int | Sequence[int] = 0, **kwargs):
        self.geometry_seed = geometry_seed
        super().__init__(*args, **kwargs)

    def _load_scene(self) -> None:
        build_table(self.world)
        s, n, first = self.geometry_seed, self.num_envs, self.world.first_index
        self.geometry_seeds = [int(s) + first + k for k in range(n)] if np.isscalar(s) else [int(x) for x in s]
        if len(self.geometry_seeds) != n:
            raise ValueError(f"geometry_seed has {len(self.geometry_seeds)} seeds for {n} envs")
        sizes = []
        for seed in self.geometry_seeds:
            g = np.random.default_rng(seed)
            half_length, radius = g.uniform(*PEG_HALF_LENGTH), g.uniform(*PEG_RADIUS)
            sizes.append((half_length, radius, radius))
        self.peg_half_sizes = torch.tensor(sizes, dtype=torch.float32)  # (N, 3)
        self.hole_half_width = self.peg_half_sizes[:, 1] + CLEARANCE  # (N,)
        self.box_parts = [box_parts(float(h)) for h in self.hole_half_width]
        pegs = [peg_parts(s, (0.9, 0.55, 0.1, 1), (0.15, 0.3, 0.75, 1)) for s in sizes]
        self.peg = build_parts(self.world, "peg", lambda i: pegs[i])
        self.box = build_parts(self.world, "box", lambda i: self.box_parts[i], body="kinematic")
        self._load_agent(ROBOT_ROOT)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        peg_xy = torch.cat((rng.uniform(-0.1, 0.1, (1,)), rng.uniform(-0.2, -0.05, (1,))), 1)
        peg_yaw = math.pi / 2 + rng.uniform(-math.pi / 4, math.pi / 4, (1,))
        peg_z = self.peg_half_sizes[env_idx, 2:3]
        place(self.peg, env_idx, torch.cat((peg_xy, peg_z), 1), yaw_quat(peg_yaw))
        hole_xy = torch.cat((rng.uniform(-0.05, 0.1, (1,)), rng.uniform(0.15, 0.25, (1,))), 1)
        hole_yaw = math.pi / 2 + rng.uniform(-math.pi / 8, math.pi / 8, (1,))
        place(self.box, env_idx, torch.cat((hole_xy, torch.full((n, 1), HOLE_Z)), 1), yaw_quat(hole_yaw))
        reset_robot(self.agent, env_idx, rng)

    def peg_head_pos(self) -> torch.Tensor:  # (N, 3): centre of the peg's head end face
        offset = torch.zeros(self.num_envs, 3)
        offset[:, 0] = self.peg_half_sizes[:, 0]
        return local_point(self.peg.pose(), offset)

    def peg_grasp_pose(self) -> torch.Tensor:  # (N, 7)
        """Where to grasp: the peg's centre. Box fingers hold little torque, so a grasp away from
        the centre of mass lets the peg turn; from the centre even the shortest peg reaches 6 cm
        ahead of the hand, past the insertion depth."""
        return self.peg.pose()

    def evaluate(self) -> dict[str, torch.Tensor]:
        hole = self.box.pose()
        hole_inv = pose_inv(hole)
        head = pose_mul(hole_inv, torch.cat((self.peg_head_pos(), hole[:, 3:]), 1))[:, :3]  # in the hole frame
        peg = self.peg.pose()
        axis = quat_apply(pose_mul(hole_inv, peg)[:, 3:], torch.tensor([1.0, 0.0, 0.0]).expand(len(peg), 3))
        misalignment = torch.acos(axis[:, 0].clamp(-1.0, 1.0))
        in_section = head[:, 1:].abs().max(1).values <= self.hole_half_width
        inserted = (head[:, 0] >= INSERT_DEPTH) & in_section & (misalignment <= ALIGN_TOLERANCE)
        held_at = nearest_axis_point(peg, self.peg_half_sizes[:, 0], self.agent.tcp_pose[:, :3])
        grasped = self.agent.is_grasping(held_at, 2 * self.peg_half_sizes[:, 1])
        return {
            "success": inserted,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "is_peg_grasped": grasped,
            "head_in_hole_frame": head,
            "misalignment": misalignment,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tcp = self.agent.tcp_pose
        peg = self.peg.pose()
        return {
            "tcp_pose": tcp,
            "peg_pose": peg,
            "peg_half_size": self.peg_half_sizes,
            "hole_pose": self.box.pose(),
            "hole_half_width": self.hole_half_width[:, None],
            "tcp_to_peg_pos": peg[:, :3] - tcp[:, :3],
        }

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """Stages, each worth at most 1, summed and divided by 5: reach the grasp point, grasp,
        bring the head onto the hole's axis with the peg aligned, push it in; success scores 5."""
        tcp = self.agent.tcp_pose[:, :3]
        grasped = info["is_peg_grasped"].float()
        head = info["head_in_hole_frame"]
        reach = 1 - torch.tanh(5 * (self.peg_grasp_pose()[:, :3] - tcp).norm(dim=1))
        off_axis = head[:, 1:].norm(dim=1) + 0.1 * info["misalignment"]
        aligned = 1 - torch.tanh(10 * off_axis)
        depth = (head[:, 0] / INSERT_DEPTH).clamp(0.0, 1.0) * (off_axis <= self.hole_half_width).float()
        reward = reach + grasped + (aligned + depth) * grasped
        reward = torch.where(info["success"], torch.full_like(reward, 5.0), reward)
        return reward / 5.0

"""PegInsertionSide-v1.

Task: pick up a box peg lying on the table (its head, +x, orange; its tail white) and insert the
head sideways into the square hole through a box standing on the table.

Randomisation: every env has its own peg and box, drawn when the env is built from the env's
geometry seed alone, as ManiSkill draws them from a legacy numpy `RandomState(seed)`: the peg's
half length L ~ U(0.085, 0.125) m, its half width ("radius") r ~ U(0.015, 0.025) m, then the
hole's offset from the box's centre across its axis, 0.5 (L - r) U(-1, 1) in each of y and z.
The box is a cube of half size L with a square hole of half width r + 3 mm along its x axis.
`geometry_seed=s` (default 2022, the seeds ManiSkill builds a new env with) gives env k the seed
s + k, or a list gives one per env: env k's geometry is the same whatever N is, and
`geometry_seed=[s + k]` rebuilds it in a one-env instance. Per episode: the peg lies on the
table with its centre uniform in x in [-0.1, 0.1], y in [-0.3, 0], its head along +y turned by
U(-60, 60) degrees; the box stands on the table with its centre uniform in x in [-0.05, 0.05],
y in [0.2, 0.4], its hole's axis along +y turned by U(-22.5, 22.5) degrees; the arm starts at
the rest keyframe with the hand turned half a turn less (joint 7 at -45 degrees), with N(0, 0.02)
rad noise on every arm joint.

Success: the centre of the peg's head end, in the hole's frame (the box's centre moved to the
hole's offset, x along the hole), has x >= -1.5 cm (it is L - 1.5 cm or more past the opening)
and |y|, |z| within the hole's half width.

For a motion planner: `self.peg` (ActorGroup; the peg's local x runs from tail to head),
`self.peg_half_sizes` (N, 3), `self.box` (the kinematic box; its local x is the hole's axis,
the opening facing -x at x = -L), `self.box_parts[i]` (env i's box as `Part`s in the box's
frame, for collision checking), `self.box_hole_radii` (N,), `box_hole_pose()`, `goal_pose()`
(the peg's pose with its head at the hole's centre), `peg_head_pose()`, `peg_grasp_pose()`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import sapien
import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.pose import pose_inv, pose_mul
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig, look_at
from envs.tasks.common import (
    ROBOT_ROOT,
    Part,
    build_parts,
    build_table,
    nearest_axis_point,
    peg_parts,
    place,
    reset_robot,
    table_scene_qpos,
)

PEG_HALF_LENGTH = (0.085, 0.125)
PEG_RADIUS = (0.015, 0.025)
CLEARANCE = 0.003  # gap between the centred peg and each side of the hole
SUCCESS_X = -0.015  # the head's least x in the hole frame (the box's centre is x = 0)
DEFAULT_GEOMETRY_SEED = 2022
# the arm's start: the rest keyframe with joint 7 at -pi/4 (the hand a quarter turn from rest)
START_QPOS = (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, -math.pi / 4, 0.04, 0.04)
HEAD_COLOR = (0xEC / 255, 0x73 / 255, 0x57 / 255, 1.0)
TAIL_COLOR = (0xED / 255, 0xF6 / 255, 0xF9 / 255, 1.0)
BOX_COLOR = (1.0, 0xD2 / 255, 0x89 / 255, 1.0)


def draw_geometry(seed: int) -> tuple[float, float, tuple[float, float]]:
    """(half length, radius, hole offset (y, z)) of the peg and box of geometry seed `seed`."""
    g = np.random.RandomState(seed)
    length, radius = g.uniform(*PEG_HALF_LENGTH), g.uniform(*PEG_RADIUS)
    offset = 0.5 * (length - radius) * g.uniform(-1, 1, size=(2,))
    return float(length), float(radius), (float(offset[0]), float(offset[1]))


def box_with_hole_parts(inner: float, outer: float, depth: float, offset: tuple[float, float]) -> list[Part]:
    """A block of half size depth along x and outer along y and z, with a square hole of half
    width inner along x, centred at (y, z) = offset: four slabs around the hole."""
    cy, cz = offset

    def slab(y0, y1, z0, z1) -> Part:
        return Part((depth, (y1 - y0) / 2, (z1 - z0) / 2), sapien.Pose([0, (y0 + y1) / 2, (z0 + z1) / 2]), BOX_COLOR)

    return [
        slab(cy + inner, outer, -outer, outer),
        slab(-outer, cy - inner, -outer, outer),
        slab(-outer, outer, cz + inner, outer),
        slab(-outer, outer, -outer, cz - inner),
    ]


@register_env("PegInsertionSide-v1", max_episode_steps=100, robot_uids="panda_wristcam")
class PegInsertionSideEnv(BaseEnv):
    supported_robots = ("panda",)

    def __init__(self, *args, geometry_seed: int | Sequence[int] = DEFAULT_GEOMETRY_SEED, **kwargs):
        self.geometry_seed = geometry_seed
        super().__init__(*args, **kwargs)

    @classmethod
    def seeded_scene_kwargs(cls, seeds: Sequence[int]) -> dict:
        # ManiSkill's one env rebuilds its scene at every reset, the geometry drawn from the reset's seed
        return {"geometry_seed": [int(s) for s in seeds]}

    def _default_sensor_configs(self) -> list[CameraConfig]:
        base = CameraConfig("base_camera", 128, 128, math.pi / 2, 0.01, 100.0, look_at((0, -0.3, 0.2), (0, 0, 0.1)))
        return [base, *self.agent.spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        return [CameraConfig("render_camera", 512, 512, 1.0, 0.01, 100.0, look_at((0.5, -0.5, 0.8), (0.05, -0.1, 0.4)))]

    def _load_scene(self) -> None:
        build_table(self.world)
        s, n, first = self.geometry_seed, self.num_envs, self.world.first_index
        self.geometry_seeds = [int(s) + first + k for k in range(n)] if np.isscalar(s) else [int(x) for x in s]
        if len(self.geometry_seeds) != n:
            raise ValueError(f"geometry_seed has {len(self.geometry_seeds)} seeds for {n} envs")
        drawn = [draw_geometry(seed) for seed in self.geometry_seeds]
        self.peg_half_sizes = torch.tensor([(l, r, r) for l, r, _ in drawn], dtype=torch.float32)  # (N, 3)
        self.box_hole_offsets = torch.tensor([(0.0, *o) for _, _, o in drawn], dtype=torch.float32)  # (N, 3)
        self.box_hole_radii = self.peg_half_sizes[:, 1] + CLEARANCE  # (N,)
        self.box_parts = [box_with_hole_parts(r + CLEARANCE, l, l, o) for l, r, o in drawn]
        pegs = [peg_parts((l, r, r), HEAD_COLOR, TAIL_COLOR) for l, r, _ in drawn]
        self.peg = build_parts(self.world, "peg", lambda i: pegs[i])
        self.box = build_parts(self.world, "box_with_hole", lambda i: self.box_parts[i], body="kinematic")
        self._load_agent(ROBOT_ROOT)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        peg_xy = rng.uniform((-0.1, -0.3), (0.1, 0.0), (2,))
        peg_q = rng.euler_quat(math.pi / 2 - math.pi / 3, math.pi / 2 + math.pi / 3)
        place(self.peg, env_idx, torch.cat((peg_xy, self.peg_half_sizes[env_idx, 2:3]), 1), peg_q)
        box_xy = rng.uniform((-0.05, 0.2), (0.05, 0.4), (2,))
        box_q = rng.euler_quat(math.pi / 2 - math.pi / 8, math.pi / 2 + math.pi / 8)
        place(self.box, env_idx, torch.cat((box_xy, self.peg_half_sizes[env_idx, 0:1]), 1), box_q)
        table_scene_qpos(self.agent, rng)  # ManiSkill's table scene draws a start first, which the task replaces
        reset_robot(self.agent, env_idx, rng, qpos=START_QPOS)

    # ---- frames ------------------------------------------------------------------------------
    def _offset(self, x: torch.Tensor) -> torch.Tensor:  # (N, 3) translations -> (N, 7) poses
        return torch.cat((x, torch.tensor([1.0, 0.0, 0.0, 0.0]).expand(len(x), 4)), 1)

    def peg_head_pose(self) -> torch.Tensor:  # (N, 7): the peg's frame moved to its head end
        head = torch.nn.functional.pad(self.peg_half_sizes[:, :1], (0, 2))
        return pose_mul(self.peg.pose(), self._offset(head))

    def box_hole_pose(self) -> torch.Tensor:  # (N, 7): the box's frame moved to the hole's centre
        return pose_mul(self.box.pose(), self._offset(self.box_hole_offsets))

    def goal_pose(self) -> torch.Tensor:  # (N, 7): the peg's pose with its head at the hole's centre
        head = torch.nn.functional.pad(-self.peg_half_sizes[:, :1], (0, 2))
        return pose_mul(self.box_hole_pose(), self._offset(head))

    def peg_grasp_pose(self) -> torch.Tensor:  # (N, 7)
        """Where the planner grasps: the peg's centre. Box fingers hold little torque, so a grasp
        away from the centre of mass lets the peg turn."""
        return self.peg.pose()

    def is_peg_grasped(self) -> torch.Tensor:  # (N,)
        peg = self.peg.pose()
        held_at = nearest_axis_point(peg, self.peg_half_sizes[:, 0], self.agent.tcp_pose[:, :3])
        return self.agent.is_grasping(held_at, 2 * self.peg_half_sizes[:, 1])

    # ---- hooks -------------------------------------------------------------------------------
    def evaluate(self) -> dict[str, torch.Tensor]:
        head = pose_mul(pose_inv(self.box_hole_pose()), self.peg_head_pose())[:, :3]  # (N, 3)
        r = self.box_hole_radii
        inside = (head[:, 1].abs() <= r) & (head[:, 2].abs() <= r)
        return {
            "success": (head[:, 0] >= SUCCESS_X) & inside,
            "fail": torch.zeros(self.num_envs, dtype=torch.bool),
            "peg_head_pos_at_hole": head,
        }

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = {"tcp_pose": self.agent.tcp_pose}
        if self.obs_mode.include_state:
            obs.update(
                peg_pose=self.peg.pose(),
                peg_half_size=self.peg_half_sizes,
                box_hole_pose=self.box_hole_pose(),
                box_hole_radius=self.box_hole_radii,
            )
        return obs

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's dense reward (at most 10) over 10: reach a point 6 cm behind the peg's
        centre (1), grasp (1), line the peg's head and centre up with the hole's axis (3), push
        the head to the hole's centre once both are within 1 cm of the axis (5); success 10."""
        tcp = self.agent.tcp_pose[:, :3]
        behind = pose_mul(self.peg.pose(), self._offset(torch.tensor([[-0.06, 0.0, 0.0]]).expand(self.num_envs, 3)))
        reward = 1 - torch.tanh(4.0 * (tcp - behind[:, :3]).norm(dim=1))
        grasped = self.is_peg_grasped()
        reward = reward + grasped.float()
        goal_inv = pose_inv(self.goal_pose())
        head_yz = pose_mul(goal_inv, self.peg_head_pose())[:, 1:3].norm(dim=1)
        centre_yz = pose_mul(goal_inv, self.peg.pose())[:, 1:3].norm(dim=1)
        pre_insertion = 3 * (1 - torch.tanh(0.5 * (head_yz + centre_yz) + 4.5 * torch.maximum(head_yz, centre_yz)))
        reward = reward + pre_insertion * grasped.float()
        lined_up = (head_yz < 0.01) & (centre_yz < 0.01)
        insertion = 5 * (1 - torch.tanh(5.0 * info["peg_head_pos_at_hole"].norm(dim=1)))
        reward = reward + insertion * (grasped & lined_up).float()
        reward = torch.where(info["success"], torch.full_like(reward, 10.0), reward)
        return reward / 10.0

"""LiftPegUpright-v1.

Task: a 24 cm long box peg with a 5 cm square cross-section (its -x half red, its +x half blue)
lies on its side on the table; stand it upright on the table.

Randomisation: the peg's centre is uniform in a 20 x 20 cm square at the table's centre, 2.5 cm
above the table, its long axis along x (pointing away from the robot) and rolled a quarter turn
about it (orientation (x, y, z) Euler angles (pi/2, 0, 0): fixed); the arm starts at its rest
keyframe with N(0, 0.02) rad noise on every arm joint.

Success: as ManiSkill judges it: the third angle of the peg orientation's XYZ Euler angles,
atan2(-R[0, 1], R[0, 0]), is within 0.08 rad of +-pi/2 in absolute value (the long axis has
almost no component along the table's x, for a peg whose local y then lies along the table's x)
and the peg's centre is within 5 mm of 12 cm (half its length) above the table.

For a motion planner: `self.peg` (ActorGroup; the long axis is the peg's local x),
`self.peg_half_sizes` (N, 3). Grasp it from above at its centre with the fingers across its
width, lift it, turn the gripper 90 degrees about the fingers' closing axis so the peg hangs
vertically, lower it until its end touches the table, let go.
"""

from __future__ import annotations

import math

import torch

from envs.core.env import BaseEnv, BatchRNG
from envs.core.pose import axis_angle_to_quat, quat_apply, quat_to_matrix
from envs.core.registry import register_env
from envs.sensors.config import CameraConfig, look_at
from envs.tasks.common import ROBOT_ROOT, build_parts, build_table, nearest_axis_point, peg_parts, place, reset_robot

PEG_HALF_LENGTH = 0.12
PEG_HALF_WIDTH = 0.025
PEG_HALF = (PEG_HALF_LENGTH, PEG_HALF_WIDTH, PEG_HALF_WIDTH)
UPRIGHT_TOLERANCE = 0.08  # rad, on the Euler angle
HEIGHT_TOLERANCE = 0.005  # m
TAIL_COLOR = (176 / 255, 14 / 255, 14 / 255, 1.0)  # the -x half
HEAD_COLOR = (12 / 255, 42 / 255, 160 / 255, 1.0)  # the +x half
START_Q = axis_angle_to_quat(torch.tensor([math.pi / 2, 0.0, 0.0]))  # Euler (pi/2, 0, 0)

PEG_PARTS = peg_parts(PEG_HALF, HEAD_COLOR, TAIL_COLOR)


def euler_xyz_z(q: torch.Tensor) -> torch.Tensor:
    """(N,) the third (z) angle of quaternions' (N, 4) XYZ Euler angles: atan2(-R01, R00)."""
    m = quat_to_matrix(q)
    return torch.atan2(-m[:, 0, 1], m[:, 0, 0])


@register_env("LiftPegUpright-v1", max_episode_steps=50)
class LiftPegUprightEnv(BaseEnv):
    supported_robots = ("panda",)

    def _default_sensor_configs(self) -> list[CameraConfig]:
        base = CameraConfig("base_camera", 128, 128, math.pi / 2, 0.01, 100.0, look_at((0.3, 0, 0.6), (-0.1, 0, 0.1)))
        return [base, *self.agent.spec.cameras]

    def _default_render_camera_configs(self) -> list[CameraConfig]:
        return [CameraConfig("render_camera", 512, 512, 1.0, 0.01, 100.0, look_at((0.6, 0.7, 0.6), (0.0, 0.0, 0.35)))]

    def _load_scene(self) -> None:
        build_table(self.world)
        self.peg = build_parts(self.world, "peg", lambda i: PEG_PARTS)
        self.peg_half_sizes = torch.tensor([PEG_HALF]).repeat(self.num_envs, 1)
        self._load_agent(ROBOT_ROOT)

    def _initialize_episode(self, env_idx: torch.Tensor, rng: BatchRNG) -> None:
        n = len(env_idx)
        xy = rng.uniform(-0.1, 0.1, (2,))
        place(self.peg, env_idx, torch.cat((xy, torch.full((n, 1), PEG_HALF_WIDTH)), 1), START_Q.expand(n, 4))
        reset_robot(self.agent, env_idx, rng)

    def is_peg_grasped(self) -> torch.Tensor:  # (N,)
        peg = self.peg.pose()
        held_at = nearest_axis_point(peg, self.peg_half_sizes[:, 0], self.agent.tcp_pose[:, :3])
        return self.agent.is_grasping(held_at, 2 * PEG_HALF_WIDTH)

    def evaluate(self) -> dict[str, torch.Tensor]:
        peg = self.peg.pose()
        upright = (euler_xyz_z(peg[:, 3:]).abs() - math.pi / 2).abs() < UPRIGHT_TOLERANCE
        on_table = (peg[:, 2] - PEG_HALF_LENGTH).abs() < HEIGHT_TOLERANCE
        return {"success": upright & on_table, "fail": torch.zeros(self.num_envs, dtype=torch.bool)}

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = {"tcp_pose": self.agent.tcp_pose}
        if self.obs_mode.include_state:
            obs["obj_pose"] = self.peg.pose()
        return obs

    def compute_dense_reward(self, info: dict[str, torch.Tensor]) -> torch.Tensor:
        """ManiSkill's dense reward (at most 3) over 3: |cos| of the long axis to vertical (1),
        the centre's height to half the length (1), a fifth for reaching the peg's centre (a full
        fifth while grasped); success 3."""
        peg = self.peg.pose()
        axis = quat_apply(peg[:, 3:], torch.tensor([1.0, 0.0, 0.0]).expand(len(peg), 3))
        reward = axis[:, 2].abs() + 1 - torch.tanh(5 * (peg[:, 2] - PEG_HALF_LENGTH).abs())
        reach = 1 - torch.tanh(5 * (peg[:, :3] - self.agent.tcp_pose[:, :3]).norm(dim=1))
        reach = torch.where(self.is_peg_grasped(), torch.ones_like(reach), reach)
        reward = reward + reach / 5
        reward = torch.where(info["success"], torch.full_like(reward, 3.0), reward)
        return reward / 3.0

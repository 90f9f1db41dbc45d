"""End-effector arm controllers (ManiSkill's PDEEPos/PDEEPose configs of the Panda).

A TCP target pose in the robot's root frame is computed from the action, then turned into arm
joint targets by inverse kinematics started from the measured qpos. The frame is ManiSkill's
default `root_translation:root_aligned_body_rotation`: a translation is added in root-frame
axes, a rotation (intrinsic X-Y-Z Euler angles, ManiSkill's "XYZ") is applied on the left of
the current orientation, about root-frame axes through the TCP. Position modes keep the
orientation of the pose they step from.

`pd_ee_delta_*` step from the measured TCP pose; `pd_ee_target_delta_*` from the previous
target pose (kept here; reset: the measured TCP pose, after a loaded state: the pose of the
drive targets). IK: ManiSkill's CPU path runs pinocchio's CLIK (tolerance 1e-4); ours is the
batched damped least squares of envs/robots/kinematics.py iterated to a tighter tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from envs.controllers.base import ArmController
from envs.core.agent import Agent
from envs.core.pose import euler_xyz_to_quat, quat_mul
from envs.modes import ControlMode


def _solve(agent: Agent, target: torch.Tensor) -> None:
    """Arm joint targets reaching the root-frame TCP pose `target` (N, 7)."""
    q = agent.kinematics.ik(target, agent.arm_qpos)
    agent.set_targets(agent.arm, q)


class PDEEDeltaPos(ArmController, mode=ControlMode.PD_EE_DELTA_POS):
    """pd_ee_delta_pos: [-1, 1]^3 -> [-ee_delta_pos, ee_delta_pos] m added to the measured TCP
    position; orientation held at the measured one."""

    def __init__(self, agent: Agent):
        super().__init__(agent)
        self.target_pose = agent.tcp_pose_root().clone()  # (N, 7) root frame: the last IK goal

    @property
    def raw_high(self) -> np.ndarray:
        return np.full(3, self.agent.spec.ee_delta_pos, dtype=np.float32)

    def _start(self) -> torch.Tensor:  # (N, 7) the pose a delta steps from
        return self.agent.tcp_pose_root()

    def _target(self, start: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return torch.cat((start[:, :3] + action, start[:, 3:]), 1)

    def _apply(self, action: torch.Tensor) -> None:
        self.target_pose = self._target(self._start(), action)
        _solve(self.agent, self.target_pose)

    def reset(self, env_idx: torch.Tensor) -> None:
        self.target_pose[env_idx] = self.agent.tcp_pose_root()[env_idx]

    def sync(self, env_idx: torch.Tensor) -> None:
        self.target_pose[env_idx] = self.agent.tcp_pose_root(self.agent.targets)[env_idx]


class _FromTargetPose:
    """`pd_ee_target_delta_*`: the step starts at the previous target pose, which is the
    controller's state."""

    target_pose: torch.Tensor

    def _start(self) -> torch.Tensor:
        return self.target_pose

    def state(self) -> dict[str, torch.Tensor]:
        return {"target_pose": self.target_pose.clone()}


class PDEETargetDeltaPos(_FromTargetPose, PDEEDeltaPos, mode=ControlMode.PD_EE_TARGET_DELTA_POS):
    """pd_ee_target_delta_pos: as pd_ee_delta_pos, stepping from the previous target pose."""


class PDEEDeltaPose(PDEEDeltaPos, mode=ControlMode.PD_EE_DELTA_POSE):
    """pd_ee_delta_pose: [-1, 1]^6. Translation as pd_ee_delta_pos; rotation: the 3 dims are
    scaled down to norm 1 when longer, then multiplied by the rotation *lower* bound
    (-ee_delta_rot), as ManiSkill 3.0.1's PDEEPoseController does, so +1 turns by -0.1 rad;
    the result is read as XYZ Euler angles."""

    @property
    def raw_high(self) -> np.ndarray:
        s = self.agent.spec
        return np.array([s.ee_delta_pos] * 3 + [s.ee_delta_rot] * 3, dtype=np.float32)

    def scale(self, action: torch.Tensor) -> torch.Tensor:
        pos = super().scale(action)[:, :3]
        rot = action[:, 3:]
        norm = rot.norm(dim=1, keepdim=True)
        rot = torch.where(norm > 1, rot / norm.clamp_min(1e-12), rot)
        return torch.cat((pos, rot * self._raw_low[3:]), 1)

    def _target(self, start: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        rot = quat_mul(euler_xyz_to_quat(action[:, 3:]), start[:, 3:])
        return torch.cat((start[:, :3] + action[:, :3], rot), 1)


class PDEETargetDeltaPose(_FromTargetPose, PDEEDeltaPose, mode=ControlMode.PD_EE_TARGET_DELTA_POSE):
    """pd_ee_target_delta_pose: as pd_ee_delta_pose, stepping from the previous target pose."""


class PDEEPose(PDEEDeltaPos, mode=ControlMode.PD_EE_POSE):
    """pd_ee_pose: absolute root-frame TCP pose, unnormalised and unclipped: position (bounds
    +-ee_pose_pos m) and XYZ Euler angles (bounds +-2 pi)."""


    @property
    def raw_high(self) -> np.ndarray:
        return np.array([self.agent.spec.ee_pose_pos] * 3 + [2 * math.pi] * 3, dtype=np.float32)

    def _target(self, start: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return torch.cat((action[:, :3], euler_xyz_to_quat(action[:, 3:])), 1)

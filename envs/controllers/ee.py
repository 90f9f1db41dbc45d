"""End-effector arm controllers: a TCP target in the robot's root frame, turned into joint
targets by batched damped least-squares IK (envs/robots/kinematics.py), started from the
current joint targets.

Frame conventions: positions and rotation vectors are expressed in the robot root frame.
Delta modes move from the TCP pose of the current joint *targets* (where the arm is heading,
not where it lags behind its PD drive), so consecutive steps add up exactly and a zero action
holds the arm still. The translation is added in the root frame; the rotation (axis-angle,
root-frame axes) turns the TCP about its own origin.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from envs.controllers.base import ArmController
from envs.core.pose import axis_angle_to_quat, quat_mul


class _EEController(ArmController):
    pos_only = False

    def _solve(self, target: torch.Tensor) -> None:
        a = self.agent
        q = a.kinematics.ik(target, a.targets[:, a.arm], pos_only=self.pos_only)
        a.set_targets(a.arm, q)

    def _target_tcp(self) -> torch.Tensor:  # (N, 7) root frame
        return self.agent.tcp_pose_root(self.agent.targets)


class PDEEDeltaPos(_EEController):
    """Normalised [-1, 1]^3 TCP translation per step (scale: spec.ee_delta_pos m); orientation free."""

    pos_only = True

    @property
    def low(self) -> np.ndarray:
        return -np.ones(3, dtype=np.float32)

    @property
    def high(self) -> np.ndarray:
        return np.ones(3, dtype=np.float32)

    def apply(self, action: torch.Tensor) -> None:
        target = self._target_tcp().clone()
        target[:, :3] += action * self.agent.spec.ee_delta_pos
        self._solve(target)


class PDEEDeltaPose(_EEController):
    """Normalised [-1, 1]^6: translation (spec.ee_delta_pos m) then rotation vector (spec.ee_delta_rot rad)."""

    @property
    def low(self) -> np.ndarray:
        return -np.ones(6, dtype=np.float32)

    @property
    def high(self) -> np.ndarray:
        return np.ones(6, dtype=np.float32)

    def apply(self, action: torch.Tensor) -> None:
        spec = self.agent.spec
        cur = self._target_tcp()
        pos = cur[:, :3] + action[:, :3] * spec.ee_delta_pos
        rot = quat_mul(axis_angle_to_quat(action[:, 3:] * spec.ee_delta_rot), cur[:, 3:])
        self._solve(torch.cat((pos, rot), 1))


class PDEEPose(_EEController):
    """Absolute TCP pose: position (m, within 1 m of the root) and rotation vector (rad)."""

    @property
    def low(self) -> np.ndarray:
        return np.array([-1.0, -1.0, -1.0, -math.pi, -math.pi, -math.pi], dtype=np.float32)

    @property
    def high(self) -> np.ndarray:
        return np.array([1.0, 1.0, 1.0, math.pi, math.pi, math.pi], dtype=np.float32)

    def apply(self, action: torch.Tensor) -> None:
        self._solve(torch.cat((action[:, :3], axis_angle_to_quat(action[:, 3:])), 1))

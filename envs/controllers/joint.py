"""Joint-space arm controllers."""

from __future__ import annotations

import numpy as np
import torch

from envs.controllers.base import ArmController


class PDJointPos(ArmController):
    """Absolute joint position targets (radians), bounded by the joint limits."""

    @property
    def low(self) -> np.ndarray:
        return self.agent.kinematics.lower.numpy().astype(np.float32)

    @property
    def high(self) -> np.ndarray:
        return self.agent.kinematics.upper.numpy().astype(np.float32)

    def apply(self, action: torch.Tensor) -> None:
        self.agent.set_targets(self.agent.arm, action)


class PDJointDeltaPos(ArmController):
    """Normalised [-1, 1] steps added to the previous joint targets (scale: spec.joint_delta rad)."""

    @property
    def low(self) -> np.ndarray:
        return -np.ones(len(self.agent.arm), dtype=np.float32)

    @property
    def high(self) -> np.ndarray:
        return np.ones(len(self.agent.arm), dtype=np.float32)

    def apply(self, action: torch.Tensor) -> None:
        a = self.agent
        k = a.kinematics
        target = a.targets[:, a.arm] + action * a.spec.joint_delta
        a.set_targets(a.arm, torch.minimum(torch.maximum(target, k.lower.float()), k.upper.float()))


class PDJointVel(ArmController):
    """Normalised [-1, 1] joint velocity targets (scale: spec.joint_vel rad/s); damping-only drives."""

    @property
    def low(self) -> np.ndarray:
        return -np.ones(len(self.agent.arm), dtype=np.float32)

    @property
    def high(self) -> np.ndarray:
        return np.ones(len(self.agent.arm), dtype=np.float32)

    def configure(self) -> None:
        self.agent.set_drives(0.0, self.agent.spec.arm_drive.damping)

    def apply(self, action: torch.Tensor) -> None:
        self.agent.set_velocity_targets(self.agent.arm, action * self.agent.spec.joint_vel)

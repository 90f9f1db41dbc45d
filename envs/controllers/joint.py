"""Joint-space arm controllers (ManiSkill's PDJointPos, PDJointVel and PDJointPosVel configs
of the Panda). Delta steps are not clipped to the joint limits: as in ManiSkill, the drive
target may lie past a limit and the joint stops there."""

from __future__ import annotations

import numpy as np
import torch

from envs.controllers.base import ArmController
from envs.modes import ControlMode


def _const(value: float, n: int) -> np.ndarray:
    return np.full(n, value, dtype=np.float32)


class PDJointPos(ArmController, mode=ControlMode.PD_JOINT_POS):
    """pd_joint_pos: absolute joint targets (rad), bounded by the joint limits, unnormalised."""


    @property
    def raw_low(self) -> np.ndarray:
        return self.agent.kinematics.lower.numpy().astype(np.float32)

    @property
    def raw_high(self) -> np.ndarray:
        return self.agent.kinematics.upper.numpy().astype(np.float32)

    def _apply(self, action: torch.Tensor) -> None:
        self.agent.set_targets(self.agent.arm, action)


class PDJointDeltaPos(ArmController, mode=ControlMode.PD_JOINT_DELTA_POS):
    """pd_joint_delta_pos: [-1, 1] -> [-joint_delta, joint_delta] rad added to the measured qpos."""

    @property
    def raw_high(self) -> np.ndarray:
        return _const(self.agent.spec.joint_delta, len(self.agent.arm))

    def _start(self) -> torch.Tensor:
        return self.agent.arm_qpos

    def _apply(self, action: torch.Tensor) -> None:
        self.agent.set_targets(self.agent.arm, self._start() + action)


class PDJointTargetDeltaPos(PDJointDeltaPos, mode=ControlMode.PD_JOINT_TARGET_DELTA_POS):
    """pd_joint_target_delta_pos: the step is added to the previous joint targets (reset: the
    qpos the episode starts at)."""

    def _start(self) -> torch.Tensor:
        return self.agent.targets[:, self.agent.arm]

    def state(self) -> dict[str, torch.Tensor]:
        return {"target_qpos": self.agent.targets[:, self.agent.arm].clone()}


class PDJointVel(ArmController, mode=ControlMode.PD_JOINT_VEL):
    """pd_joint_vel: [-1, 1] -> [-joint_vel, joint_vel] rad/s velocity targets; the arm's drives
    lose their stiffness (damping only)."""

    @property
    def raw_high(self) -> np.ndarray:
        return _const(self.agent.spec.joint_vel, len(self.agent.arm))

    def configure(self) -> None:
        self.agent.set_drives(0.0, self.agent.spec.arm_drive.damping)

    def _apply(self, action: torch.Tensor) -> None:
        self.agent.set_velocity_targets(self.agent.arm, action)


class PDJointPosVel(ArmController, mode=ControlMode.PD_JOINT_POS_VEL):
    """pd_joint_pos_vel: absolute joint targets (joint limits) then velocity targets
    ([-joint_vel, joint_vel] rad/s), unnormalised."""


    @property
    def raw_low(self) -> np.ndarray:
        n = len(self.agent.arm)
        return np.concatenate((self.agent.kinematics.lower.numpy(), _const(-self.agent.spec.joint_vel, n))).astype(np.float32)

    @property
    def raw_high(self) -> np.ndarray:
        n = len(self.agent.arm)
        return np.concatenate((self.agent.kinematics.upper.numpy(), _const(self.agent.spec.joint_vel, n))).astype(np.float32)

    def _position(self, action: torch.Tensor) -> torch.Tensor:
        return action

    def _apply(self, action: torch.Tensor) -> None:
        pos, vel = action.chunk(2, dim=1)
        self.agent.set_targets(self.agent.arm, self._position(pos))
        self.agent.set_velocity_targets(self.agent.arm, vel)


class PDJointDeltaPosVel(PDJointPosVel, mode=ControlMode.PD_JOINT_DELTA_POS_VEL):
    """pd_joint_delta_pos_vel: normalised; [-joint_delta, joint_delta] rad added to the measured
    qpos, then [-joint_vel, joint_vel] rad/s velocity targets."""


    @property
    def raw_low(self) -> np.ndarray:  # symmetric, where pd_joint_pos_vel's are the joint limits
        return -self.raw_high

    @property
    def raw_high(self) -> np.ndarray:
        n = len(self.agent.arm)
        return np.concatenate((_const(self.agent.spec.joint_delta, n), _const(self.agent.spec.joint_vel, n)))

    def _position(self, action: torch.Tensor) -> torch.Tensor:
        return self.agent.arm_qpos + action

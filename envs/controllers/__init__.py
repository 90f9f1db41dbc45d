"""One arm controller class per control mode, each paired with the gripper controller."""

from __future__ import annotations

from typing import Sequence

from envs.controllers.base import ArmController, Controller, GripperController, MultiController
from envs.controllers.ee import PDEEDeltaPos, PDEEDeltaPose, PDEEPose, PDEETargetDeltaPos, PDEETargetDeltaPose
from envs.controllers.joint import (
    PDJointDeltaPos,
    PDJointDeltaPosVel,
    PDJointPos,
    PDJointPosVel,
    PDJointTargetDeltaPos,
    PDJointVel,
)
from envs.core.agent import Agent
from envs.modes import ControlMode
from envs.robots.base import get_robot
from envs.robots.base import robot_uids as robot_uids_registered

ARM_CONTROLLERS: dict[ControlMode, type[ArmController]] = {
    ControlMode.PD_JOINT_DELTA_POS: PDJointDeltaPos,
    ControlMode.PD_JOINT_POS: PDJointPos,
    ControlMode.PD_EE_DELTA_POS: PDEEDeltaPos,
    ControlMode.PD_EE_DELTA_POSE: PDEEDeltaPose,
    ControlMode.PD_EE_POSE: PDEEPose,
    ControlMode.PD_JOINT_TARGET_DELTA_POS: PDJointTargetDeltaPos,
    ControlMode.PD_EE_TARGET_DELTA_POS: PDEETargetDeltaPos,
    ControlMode.PD_EE_TARGET_DELTA_POSE: PDEETargetDeltaPose,
    ControlMode.PD_JOINT_VEL: PDJointVel,
    ControlMode.PD_JOINT_POS_VEL: PDJointPosVel,
    ControlMode.PD_JOINT_DELTA_POS_VEL: PDJointDeltaPosVel,
}


def make_controller(mode: ControlMode, agent: Agent) -> Controller:
    return Controller(ARM_CONTROLLERS[mode](agent), GripperController(agent) if agent.spec.has_gripper else None)


def gripper_action_dims(robot_uids: str | Sequence[str], mode: ControlMode, action_dim: int) -> list[int]:
    """Indices of the gripper dims in an action of `mode` for robots `robot_uids` (one uid, or
    several whose actions are concatenated in order), known without building an env: each
    robot's part is its arm's dims, then one gripper dim when it has a gripper. A uid that is not
    a robot (an actuated object such as the cart-pole) has no gripper dim. A ValueError when the
    layout does not add up to action_dim."""
    uids = [robot_uids] if isinstance(robot_uids, str) else list(robot_uids)
    if len(uids) == 1 and uids[0] not in robot_uids_registered():
        return []
    dims, at = [], 0
    for uid in uids:
        spec = get_robot(uid)
        at += ARM_CONTROLLERS[mode].width(spec)
        if spec.has_gripper:
            dims.append(at)
            at += 1
    if at != action_dim:
        raise ValueError(f"robots {uids} in {mode.value} act with {at} dims, not {action_dim}")
    return dims


__all__ = ["ARM_CONTROLLERS", "Controller", "GripperController", "MultiController", "gripper_action_dims", "make_controller"]

"""One arm controller class per control mode, each paired with the gripper controller."""

from __future__ import annotations

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


__all__ = ["ARM_CONTROLLERS", "Controller", "GripperController", "MultiController", "make_controller"]

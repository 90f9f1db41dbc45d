"""One arm controller class per control mode, each paired with the gripper controller. A class
registers itself for its mode (`mode=` in its class line, envs/controllers/base.py); importing
joint.py and ee.py here fills `ARM_CONTROLLERS`."""

from __future__ import annotations

from envs.controllers import ee, joint  # noqa: F401  (their classes register their modes)
from envs.controllers.base import ARM_CONTROLLERS, Controller, GripperController, MultiController
from envs.core.agent import Agent
from envs.modes import ControlMode


def make_controller(mode: ControlMode, agent: Agent) -> Controller:
    return Controller(ARM_CONTROLLERS[mode](agent), GripperController(agent) if agent.spec.has_gripper else None)


__all__ = ["ARM_CONTROLLERS", "Controller", "GripperController", "MultiController", "make_controller"]

"""One arm controller class per control mode, each paired with the gripper controller. A class
registers itself for its mode (`mode=` in its class line, envs/controllers/base.py); importing
joint.py and ee.py here fills `ARM_CONTROLLERS`."""

from __future__ import annotations

from typing import Sequence

from envs.controllers import ee, joint  # noqa: F401  (their classes register their modes)
from envs.controllers.base import ARM_CONTROLLERS, Controller, GripperController, MultiController
from envs.core.agent import Agent
from envs.modes import ControlMode
from envs.robots.base import get_robot
from envs.robots.base import robot_uids as robot_uids_registered


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

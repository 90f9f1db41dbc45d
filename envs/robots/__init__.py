"""Robots register on import; `get_robot(uid)` finds them."""

from envs.robots import panda, ur5e  # noqa: F401  (registers)
from envs.robots.base import RobotSpec, get_robot, register_robot, robot_family, robot_uids

__all__ = ["RobotSpec", "get_robot", "register_robot", "robot_family", "robot_uids"]

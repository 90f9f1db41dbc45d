"""Franka Emika Panda with its parallel gripper (assets/panda.urdf, assets/panda.srdf)."""

import math

from envs.robots.base import ASSETS, Drive, RobotSpec, register_robot
from envs.sensors.config import CameraConfig, look_at

PANDA = register_robot(
    RobotSpec(
        uid="panda",
        urdf=ASSETS / "panda.urdf",
        srdf=ASSETS / "panda.srdf",
        arm_joints=tuple(f"panda_joint{i}" for i in range(1, 8)),
        gripper_joints=("panda_finger_joint1", "panda_finger_joint2"),
        tcp_link="panda_hand_tcp",
        arm_drive=Drive(stiffness=1e3, damping=1e2, force_limit=100.0),
        gripper_drive=Drive(stiffness=1e3, damping=1e2, force_limit=100.0),
        # closed slightly past touching so a grasp keeps squeezing; open at the 4 cm stroke
        gripper_limits=(-0.01, 0.04),
        keyframes={
            "rest": (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, math.pi / 4, 0.04, 0.04),
        },
        # on the hand's side, looking along the fingers (hand +z); image up is the hand's +x
        cameras=(
            CameraConfig(
                "hand_camera", 128, 128, fov=math.radians(80), near=0.01, far=10.0,
                pose=look_at((0.06, 0.0, 0.03), (0.0, 0.0, 0.25), up=(1.0, 0.0, 0.0)), mount="panda_hand",
            ),
        ),
    )
)

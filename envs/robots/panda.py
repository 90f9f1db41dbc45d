"""Franka Emika Panda with its parallel gripper, as ManiSkill 3.0.1's `panda` (no camera) and
`panda_wristcam` (the same arm with a RealSense on the hand), and `panda_stick` (the arm with a
drawing stick in place of the gripper). Numbers from ManiSkill's agents/robots/panda/panda.py,
panda_wristcam.py and panda_stick.py; kinematics from its panda_v2/panda_v3/panda_stick URDFs
(our files use primitive collision shapes instead of its meshes)."""

import math

from envs.robots.base import ASSETS, Drive, LinkMaterial, RobotSpec, register_robot
from envs.sensors.config import CameraConfig

_PANDA = dict(
    arm_joints=tuple(f"panda_joint{i}" for i in range(1, 8)),
    gripper_joints=("panda_finger_joint1", "panda_finger_joint2"),
    tcp_link="panda_hand_tcp",
    arm_drive=Drive(stiffness=1e3, damping=1e2, force_limit=100.0),
    gripper_drive=Drive(stiffness=1e3, damping=1e2, force_limit=100.0),
    # closed slightly past touching so a thin object still feels force; open at the 4 cm stroke
    gripper_limits=(-0.01, 0.04),
    # ManiSkill's gripper material on both fingers
    link_materials={
        f"panda_{side}finger": LinkMaterial(2.0, 2.0, 0.0, patch_radius=0.1, min_patch_radius=0.1) for side in ("left", "right")
    },
    keyframes={
        "rest": (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, math.pi / 4, 0.04, 0.04),
    },
)

PANDA = register_robot(RobotSpec(uid="panda", urdf=ASSETS / "panda.urdf", srdf=ASSETS / "panda.srdf", **_PANDA))

PANDA_WRISTCAM = register_robot(
    RobotSpec(
        uid="panda_wristcam",
        family="panda",
        urdf=ASSETS / "panda_wristcam.urdf",
        srdf=ASSETS / "panda_wristcam.srdf",
        cameras=(
            CameraConfig("hand_camera", 128, 128, fov=math.pi / 2, near=0.01, far=100.0, mount="camera_link"),
        ),
        **_PANDA,
    )
)

# ManiSkill's PandaStick: the same arm, drives and rest joints, no gripper; its TCP is the tip of a
# 0.1 m stick on the hand (0.15 m from panda_hand). Its own robot (not a panda variant): the drawing
# tasks are its only tasks, and no gripper task can use it.
PANDA_STICK = register_robot(
    RobotSpec(
        uid="panda_stick",
        urdf=ASSETS / "panda_stick.urdf",
        srdf=ASSETS / "panda_stick.srdf",
        arm_joints=_PANDA["arm_joints"],
        gripper_joints=(),
        tcp_link="panda_hand_tcp",
        arm_drive=_PANDA["arm_drive"],
        keyframes={"rest": _PANDA["keyframes"]["rest"][:7]},
    )
)

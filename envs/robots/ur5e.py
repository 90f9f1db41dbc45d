"""Universal Robots UR5e with the project's parallel gripper (assets/ur5e.urdf, assets/ur5e.srdf)."""

from envs.robots.base import ASSETS, Drive, RobotSpec, register_robot

UR5E = register_robot(
    RobotSpec(
        uid="ur5e",
        urdf=ASSETS / "ur5e.urdf",
        srdf=ASSETS / "ur5e.srdf",
        arm_joints=("ur5e_shoulder_pan", "ur5e_shoulder_lift", "ur5e_elbow", "ur5e_wrist_1", "ur5e_wrist_2", "ur5e_wrist_3"),
        gripper_joints=("ur5e_left_finger_joint", "ur5e_right_finger_joint"),
        tcp_link="ur5e_tcp",
        arm_drive=Drive(stiffness=1e3, damping=1e2, force_limit=100.0),
        gripper_drive=Drive(stiffness=1e3, damping=1e2, force_limit=100.0),
        # closed slightly past touching so a grasp keeps squeezing; open at the 42.5 mm stroke per finger
        gripper_limits=(-0.01, 0.0425),
        keyframes={
            # elbow up, TCP 0.615 m in front of the base and 0.17 m up, pointing down, fingers
            # closing along the root's y axis (the base's pi turn and the wrist offset make it asymmetric)
            "rest": (-0.2185, -1.2440, 1.6238, -1.9506, -1.5708, -1.7893, 0.0425, 0.0425),
        },
    )
)

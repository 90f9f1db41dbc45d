"""What the core needs to know about a robot, and the registry `robot_uids` is looked up in.

A robot is one file that calls `register_robot(RobotSpec(...))`: its URDF/SRDF, which joints
form the arm and the gripper, its TCP link, drive gains, keyframes, gripper range and the
cameras it carries. Tasks and
controllers only use these accessors, never joint indices of their own.

Gripper convention (tests/test_robots.py checks it for every robot with a gripper): two prismatic finger
joints whose travel sums to the gap between the finger pads (the pads meet at zero); the TCP
link sits between the pads, z pointing out of the gripper, and the fingers close along its y
axis. The grasp detector (`Agent.is_grasping`) and scripted grasps rely on nothing else. A
robot without a gripper (a stick for drawing) has no gripper joints: its controllers are the arm's
alone, with no gripper dimension in the action.
The "rest" keyframe puts the TCP above the table pointing down when the base stands at the
tasks' ROBOT_ROOT, with PickCube's workspace reachable from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from envs.robots.urdf import RobotModel, load_urdf
from envs.sensors.config import CameraConfig

ASSETS = Path(__file__).parent / "assets"


@dataclass(frozen=True)
class Drive:
    stiffness: float
    damping: float
    force_limit: float


@dataclass(frozen=True)
class LinkMaterial:
    """A link's own contact material (ManiSkill's urdf_config: friction, restitution, and the
    torsional-friction patch radii of its collision shapes)."""

    static_friction: float
    dynamic_friction: float
    restitution: float
    patch_radius: float = 0.0
    min_patch_radius: float = 0.0

    def physx(self):
        import sapien

        return sapien.physx.PhysxMaterial(self.static_friction, self.dynamic_friction, self.restitution)


@dataclass(frozen=True)
class RobotSpec:
    uid: str
    urdf: Path
    srdf: Path
    arm_joints: tuple[str, ...]
    gripper_joints: tuple[str, ...]  # empty: no gripper
    tcp_link: str
    arm_drive: Drive
    gripper_drive: Drive | None = None
    gripper_limits: tuple[float, float] | None = None  # target of every gripper joint when closed / open
    keyframes: dict[str, tuple[float, ...]] = field(default_factory=dict)  # name -> full qpos
    # delta controllers: one unit of normalised action moves this far per control step
    joint_delta: float = 0.1  # rad
    ee_delta_pos: float = 0.1  # m
    ee_delta_rot: float = 0.1  # rad
    ee_pose_pos: float = 2.0  # m: pd_ee_pose's position bound
    joint_vel: float = 1.0  # rad/s for the velocity modes
    family: str = ""  # the robot this one is a variant of (same arm and controllers): tasks that
    # support the family support it; empty: the uid itself
    cameras: tuple[CameraConfig, ...] = ()  # observation cameras the robot carries (mount: a link name)
    link_materials: dict[str, LinkMaterial] = field(default_factory=dict)  # link name -> its contact material

    @property
    def has_gripper(self) -> bool:
        return bool(self.gripper_joints)

    @cached_property
    def model(self) -> RobotModel:
        return load_urdf(self.urdf)

    @property
    def rest_qpos(self) -> tuple[float, ...]:
        return self.keyframes["rest"]

    @property
    def active_joint_names(self) -> list[str]:
        return [j.name for j in self.model.active_joints]

    @property
    def arm_indices(self) -> list[int]:
        names = self.active_joint_names
        return [names.index(n) for n in self.arm_joints]

    @property
    def gripper_indices(self) -> list[int]:
        names = self.active_joint_names
        return [names.index(n) for n in self.gripper_joints]


_ROBOTS: dict[str, RobotSpec] = {}


def register_robot(spec: RobotSpec) -> RobotSpec:
    if spec.has_gripper and (spec.gripper_drive is None or spec.gripper_limits is None):
        raise ValueError(f"robot {spec.uid}: a gripper needs gripper_drive and gripper_limits")
    names = spec.active_joint_names
    missing = [j for j in spec.arm_joints + spec.gripper_joints if j not in names]
    if missing:
        raise ValueError(f"robot {spec.uid}: joints {missing} are not in {spec.urdf.name}")
    if len(spec.rest_qpos) != len(names):
        raise ValueError(f"robot {spec.uid}: rest keyframe has {len(spec.rest_qpos)} values, robot has {len(names)} joints")
    _ROBOTS[spec.uid] = spec
    return spec


def get_robot(uid: str) -> RobotSpec:
    if uid not in _ROBOTS:
        raise ValueError(f"unknown robot {uid!r}; allowed: {', '.join(sorted(_ROBOTS))}")
    return _ROBOTS[uid]


def robot_family(uid: str) -> str:
    """The uid tasks list a robot under: `panda` for `panda_wristcam`, else the uid itself."""
    return get_robot(uid).family or uid


def robot_uids() -> list[str]:
    return sorted(_ROBOTS)

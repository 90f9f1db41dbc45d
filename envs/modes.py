"""The modes a user picks by name. Strings are parsed once, at the boundary, into these Enums."""

from __future__ import annotations

import enum
from typing import TypeVar

E = TypeVar("E", bound=enum.Enum)


class ObsMode(enum.Enum):
    """ManiSkill 3.0.1's observation modes (the names its BaseEnv documents). Camera modes name
    the images each camera gives (`textures`); `sensor_data` gives them all, `pointcloud` fuses
    them into one cloud per env."""

    STATE = "state"
    STATE_DICT = "state_dict"
    NONE = "none"
    SENSOR_DATA = "sensor_data"
    RGB = "rgb"
    DEPTH = "depth"
    SEGMENTATION = "segmentation"
    RGBD = "rgbd"
    RGB_DEPTH = "rgb+depth"
    RGB_DEPTH_SEGMENTATION = "rgb+depth+segmentation"
    RGB_SEGMENTATION = "rgb+segmentation"
    DEPTH_SEGMENTATION = "depth+segmentation"
    POINTCLOUD = "pointcloud"

    @property
    def visual(self) -> bool:
        """Observations hold camera data, so the env renders (and needs a Vulkan device)."""
        return self not in (ObsMode.NONE, ObsMode.STATE, ObsMode.STATE_DICT)

    @property
    def include_state(self) -> bool:
        """Observations may carry object state (poses of the task's objects, offsets to them):
        the state modes only, as ManiSkill's `"state" in obs_mode`; camera modes see objects
        through their cameras alone."""
        return self in (ObsMode.STATE, ObsMode.STATE_DICT)

    @property
    def textures(self) -> tuple[str, ...]:
        """The images each camera renders in this mode, as ManiSkill's obs-mode parser names them
        ("position": camera-frame points, which `pointcloud` lifts to the env frame)."""
        if self is ObsMode.SENSOR_DATA:
            return ("rgb", "depth", "position", "segmentation")
        if self is ObsMode.POINTCLOUD:
            return ("rgb", "position", "segmentation")
        if self is ObsMode.RGBD:
            return ("rgb", "depth")
        if not self.visual:
            return ()
        return tuple(t for t in ("rgb", "depth", "segmentation") if t in self.value.split("+"))


class RenderMode(enum.Enum):
    """What env.render() gives: frames of a human-view camera, or a window."""

    RGB_ARRAY = "rgb_array"
    HUMAN = "human"


class ControlMode(enum.Enum):
    """ManiSkill 3.0.1's control modes of a single-arm robot (the Panda's `_controller_configs`).
    Every mode pairs its arm controller with the gripper's (one dim, [-1, 1] -> closed..open).
    What a mode means lives in the properties below; code asks them, never the name."""

    PD_JOINT_DELTA_POS = "pd_joint_delta_pos"
    PD_JOINT_POS = "pd_joint_pos"
    PD_EE_DELTA_POS = "pd_ee_delta_pos"
    PD_EE_DELTA_POSE = "pd_ee_delta_pose"
    PD_EE_POSE = "pd_ee_pose"
    PD_JOINT_TARGET_DELTA_POS = "pd_joint_target_delta_pos"
    PD_EE_TARGET_DELTA_POS = "pd_ee_target_delta_pos"
    PD_EE_TARGET_DELTA_POSE = "pd_ee_target_delta_pose"
    PD_JOINT_VEL = "pd_joint_vel"
    PD_JOINT_POS_VEL = "pd_joint_pos_vel"
    PD_JOINT_DELTA_POS_VEL = "pd_joint_delta_pos_vel"

    @property
    def delta(self) -> bool:
        """The arm action is a step added to a pose or joint positions (not an absolute target)."""
        return self in _DELTA

    @property
    def from_target(self) -> bool:
        """A delta steps from the controller's previous target (`*_target_*`); other delta
        modes step from the measured qpos / TCP pose."""
        return self in _FROM_TARGET

    @property
    def end_effector(self) -> bool:
        """The arm action is a TCP position or pose in the robot's root frame, solved by IK."""
        return self in _EE

    @property
    def position_only(self) -> bool:
        """An end-effector mode that moves the TCP position and holds its orientation."""
        return self in (ControlMode.PD_EE_DELTA_POS, ControlMode.PD_EE_TARGET_DELTA_POS)

    @property
    def velocity(self) -> bool:
        """The arm action carries joint velocity targets."""
        return self in (ControlMode.PD_JOINT_VEL, ControlMode.PD_JOINT_POS_VEL, ControlMode.PD_JOINT_DELTA_POS_VEL)

    @property
    def normalized(self) -> bool:
        """The arm action lies in [-1, 1] and is clipped there, then scaled to the controller's
        bounds (ManiSkill's normalize_action); otherwise it is taken as is, unclipped."""
        return self not in (ControlMode.PD_JOINT_POS, ControlMode.PD_EE_POSE, ControlMode.PD_JOINT_POS_VEL)

    @property
    def zero_holds_still(self) -> bool:
        """An all-zero arm action keeps the arm where it is (delta and pure velocity modes)."""
        return self.delta or self is ControlMode.PD_JOINT_VEL


_DELTA = frozenset(
    {
        ControlMode.PD_JOINT_DELTA_POS,
        ControlMode.PD_EE_DELTA_POS,
        ControlMode.PD_EE_DELTA_POSE,
        ControlMode.PD_JOINT_TARGET_DELTA_POS,
        ControlMode.PD_EE_TARGET_DELTA_POS,
        ControlMode.PD_EE_TARGET_DELTA_POSE,
        ControlMode.PD_JOINT_DELTA_POS_VEL,
    }
)
_FROM_TARGET = frozenset(
    {ControlMode.PD_JOINT_TARGET_DELTA_POS, ControlMode.PD_EE_TARGET_DELTA_POS, ControlMode.PD_EE_TARGET_DELTA_POSE}
)
_EE = frozenset(
    {
        ControlMode.PD_EE_DELTA_POS,
        ControlMode.PD_EE_DELTA_POSE,
        ControlMode.PD_EE_POSE,
        ControlMode.PD_EE_TARGET_DELTA_POS,
        ControlMode.PD_EE_TARGET_DELTA_POSE,
    }
)


class SimBackend(enum.Enum):
    """Only SAPIEN's CPU PhysX is built and tested; the batched API is backend-neutral."""

    PHYSX_CPU = "physx_cpu"


def parse_mode(kind: type[E], value: str | E, what: str) -> E:
    """`value` as a member of `kind`, or a ValueError naming the allowed values."""
    if isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        raise ValueError(f"unknown {what} {value!r}; allowed: {allowed}") from None

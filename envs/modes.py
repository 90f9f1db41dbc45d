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


class ArmSpace(enum.Enum):
    """What a control mode's arm action moves."""

    JOINT = "joint"  # the arm joints
    EE_POS = "ee_pos"  # the TCP's position in the robot's root frame (IK; orientation held)
    EE_POSE = "ee_pose"  # the TCP's position and orientation (XYZ Euler angles) in the root frame (IK)


class Position(enum.Enum):
    """Where a control mode's position targets come from."""

    ABSOLUTE = "absolute"  # the action is the target itself
    FROM_MEASURED = "from_measured"  # a step added to the measured qpos / TCP pose
    FROM_TARGET = "from_target"  # a step added to the controller's previous target (`*_target_*`)
    NONE = "none"  # no position targets (velocity targets only)


class ControlMode(enum.Enum):
    """ManiSkill 3.0.1's control modes of a single-arm robot (the Panda's `_controller_configs`).
    Every mode pairs its arm controller with the gripper's (one dim, [-1, 1] -> closed..open).
    A mode's meaning is written beside its name: what its arm action moves (`space`), where its
    position targets come from (`position`) and whether it carries joint velocity targets
    (`sets_velocity`, after the positions). The properties below derive from these three; code
    asks them, never the name. The mode's controller (envs/controllers/) names the mode it serves."""

    PD_JOINT_DELTA_POS = "pd_joint_delta_pos", ArmSpace.JOINT, Position.FROM_MEASURED
    PD_JOINT_POS = "pd_joint_pos", ArmSpace.JOINT, Position.ABSOLUTE
    PD_EE_DELTA_POS = "pd_ee_delta_pos", ArmSpace.EE_POS, Position.FROM_MEASURED
    PD_EE_DELTA_POSE = "pd_ee_delta_pose", ArmSpace.EE_POSE, Position.FROM_MEASURED
    PD_EE_POSE = "pd_ee_pose", ArmSpace.EE_POSE, Position.ABSOLUTE
    PD_JOINT_TARGET_DELTA_POS = "pd_joint_target_delta_pos", ArmSpace.JOINT, Position.FROM_TARGET
    PD_EE_TARGET_DELTA_POS = "pd_ee_target_delta_pos", ArmSpace.EE_POS, Position.FROM_TARGET
    PD_EE_TARGET_DELTA_POSE = "pd_ee_target_delta_pose", ArmSpace.EE_POSE, Position.FROM_TARGET
    PD_JOINT_VEL = "pd_joint_vel", ArmSpace.JOINT, Position.NONE, True
    PD_JOINT_POS_VEL = "pd_joint_pos_vel", ArmSpace.JOINT, Position.ABSOLUTE, True
    PD_JOINT_DELTA_POS_VEL = "pd_joint_delta_pos_vel", ArmSpace.JOINT, Position.FROM_MEASURED, True

    def __new__(cls, value: str, space: ArmSpace, position: Position, sets_velocity: bool = False) -> ControlMode:
        mode = object.__new__(cls)
        mode._value_ = value
        mode.space, mode.position, mode.sets_velocity = space, position, sets_velocity
        return mode

    @property
    def delta(self) -> bool:
        """The arm action is a step added to a pose or joint positions (not an absolute target)."""
        return self.position in (Position.FROM_MEASURED, Position.FROM_TARGET)

    @property
    def from_target(self) -> bool:
        """A delta steps from the controller's previous target (`*_target_*`); other delta
        modes step from the measured qpos / TCP pose."""
        return self.position is Position.FROM_TARGET

    @property
    def end_effector(self) -> bool:
        """The arm action is a TCP position or pose in the robot's root frame, solved by IK."""
        return self.space is not ArmSpace.JOINT

    @property
    def position_only(self) -> bool:
        """An end-effector mode that moves the TCP position and holds its orientation."""
        return self.space is ArmSpace.EE_POS

    @property
    def sets_position(self) -> bool:
        """The arm action sets position targets (all but the pure velocity modes): the drive
        targets it leaves are a position reference."""
        return self.position is not Position.NONE

    @property
    def normalized(self) -> bool:
        """The arm action lies in [-1, 1] and is clipped there, then scaled to the controller's
        bounds (ManiSkill's normalize_action): steps and velocities; an absolute target is taken
        as is, unclipped, within its raw bounds."""
        return self.position is not Position.ABSOLUTE

    @property
    def zero_holds_still(self) -> bool:
        """An all-zero arm action keeps the arm where it is (delta and pure velocity modes)."""
        return self.delta or self.position is Position.NONE


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

"""Controllers turn a batched action into drive targets of one robot, as ManiSkill 3.0.1's do.

An arm controller handles the arm joints; every control mode pairs one with the gripper
controller (none for a robot without a gripper: the action is the arm's alone). `Controller.apply` takes the whole (N, A) action. With several robots,
`MultiController` takes their actions concatenated.

Bounds and normalisation follow ManiSkill's `normalize_action`: a normalised controller's
action space is [-1, 1]^d, the action is clipped there and scaled linearly onto its raw bounds
(`raw_low`, `raw_high`); an unnormalised one (pd_joint_pos, pd_ee_pose, pd_joint_pos_vel) has
its raw bounds as action space and takes the action as given, unclipped.

`reset(env_idx)` runs after the task has placed its robots (ManiSkill resets controllers after
`_initialize_episode`): controllers with targets of their own take them from the new state.
`sync(env_idx)` runs after a state was loaded (set_state_dict).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from envs.core.agent import Agent
from envs.modes import ControlMode
from envs.robots.base import RobotSpec

ARM_CONTROLLERS: dict[ControlMode, type[ArmController]] = {}  # filled by the subclasses' `mode=`, in ControlMode's order


class ArmController:
    """One subclass per control mode, which names its mode in its class line and so registers
    itself (`class PDJointPos(ArmController, mode=ControlMode.PD_JOINT_POS)`); a subclass without
    `mode=` is a base for others. Subclasses give `raw_high` (and `raw_low` where the bounds are not
    -raw_high..raw_high) and `_apply(scaled action)`; whether the action is normalised is the mode's
    meaning."""

    mode: ClassVar[ControlMode]

    def __init_subclass__(cls, mode: ControlMode | None = None, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if mode is None:
            return
        if mode in ARM_CONTROLLERS:
            raise TypeError(f"{cls.__name__}: {mode.value} already has its controller, {ARM_CONTROLLERS[mode].__name__}")
        cls.mode = mode
        ARM_CONTROLLERS[mode] = cls
        # listed in ControlMode's order (ManiSkill's), whichever file registered first
        ordered = sorted(ARM_CONTROLLERS.items(), key=lambda kv: list(ControlMode).index(kv[0]))
        ARM_CONTROLLERS.clear()
        ARM_CONTROLLERS.update(ordered)

    def __init__(self, agent: Agent):
        self.agent = agent
        self._raw_low = torch.from_numpy(self.raw_low)
        self._raw_high = torch.from_numpy(self.raw_high)

    @classmethod
    def width(cls, spec: RobotSpec) -> int:
        """The arm part's action size for a robot, known without building one (the joint modes:
        one dim per arm joint)."""
        return len(spec.arm_joints)

    @property
    def raw_low(self) -> np.ndarray:
        return -self.raw_high

    @property
    def raw_high(self) -> np.ndarray:
        raise NotImplementedError

    @property
    def normalized(self) -> bool:
        return self.mode.normalized

    @property
    def low(self) -> np.ndarray:
        return -np.ones_like(self.raw_low) if self.normalized else self.raw_low

    @property
    def high(self) -> np.ndarray:
        return np.ones_like(self.raw_high) if self.normalized else self.raw_high

    def configure(self) -> None:
        """Set drive gains this controller needs (called when the mode is chosen)."""
        d = self.agent.spec.arm_drive
        self.agent.set_drives(d.stiffness, d.damping)

    def scale(self, action: torch.Tensor) -> torch.Tensor:
        """ManiSkill's clip_and_scale_action for normalised controllers; identity otherwise."""
        if not self.normalized:
            return action
        a = action.clamp(-1.0, 1.0)
        return 0.5 * (self._raw_high + self._raw_low) + 0.5 * (self._raw_high - self._raw_low) * a

    def apply(self, action: torch.Tensor) -> None:
        """action: (N, dim) in the controller's action space."""
        self._apply(self.scale(action))

    def _apply(self, action: torch.Tensor) -> None:
        raise NotImplementedError

    def reset(self, env_idx: torch.Tensor) -> None:
        """Targets of envs `env_idx` from their measured state (after an episode starts)."""

    def sync(self, env_idx: torch.Tensor) -> None:
        """Targets of envs `env_idx` from their drive targets (after a state was loaded)."""

    def state(self) -> dict[str, torch.Tensor]:
        """ManiSkill's controller state: the targets a `*_target_*` controller steps from, else {}."""
        return {}


class GripperController:
    """ManiSkill's PDJointPosMimicController for a parallel gripper: one normalised dim,
    [-1, 1] clipped and scaled onto [closed, open] (the Panda: [-0.01, 0.04] m); the first
    gripper joint is driven there and the others mimic it (multiplier 1, offset 0)."""

    low = np.array([-1.0], dtype=np.float32)
    high = np.array([1.0], dtype=np.float32)

    def __init__(self, agent: Agent):
        self.agent = agent
        self.closed, self.open = agent.spec.gripper_limits

    def to_target(self, action: torch.Tensor) -> torch.Tensor:  # (N, 1) -> (N, 1)
        a = action.clamp(-1.0, 1.0)
        return 0.5 * (self.open + self.closed) + 0.5 * (self.open - self.closed) * a

    def from_target(self, target: torch.Tensor) -> torch.Tensor:
        return (target - self.closed) / (self.open - self.closed) * 2.0 - 1.0

    def apply(self, action: torch.Tensor) -> None:
        t = self.to_target(action)
        self.agent.set_targets(self.agent.gripper, t.expand(-1, len(self.agent.gripper)))


class Controller:
    """An arm controller followed by the gripper controller (None: a robot without a gripper)."""

    def __init__(self, arm: ArmController, gripper: GripperController | None):
        self.arm = arm
        self.gripper = gripper
        self.arm_dim = len(arm.low)
        parts = (arm, gripper) if gripper is not None else (arm,)
        self.low = np.concatenate([p.low for p in parts]).astype(np.float32)
        self.high = np.concatenate([p.high for p in parts]).astype(np.float32)
        arm.configure()

    @property
    def action_dim(self) -> int:
        return len(self.low)

    def apply(self, action: torch.Tensor) -> None:
        """action: (N, A) float32 (normalised parts are clipped to [-1, 1])."""
        self.arm.apply(action[:, : self.arm_dim])
        if self.gripper is not None:
            self.gripper.apply(action[:, self.arm_dim :])

    def reset(self, env_idx: torch.Tensor) -> None:
        self.arm.reset(env_idx)

    def sync(self, env_idx: torch.Tensor) -> None:
        self.arm.sync(env_idx)

    def state(self) -> dict[str, dict[str, torch.Tensor]]:
        """As ManiSkill's agent/env state "controller" entry: {"arm": {...}} for the target-based
        modes (`target_qpos` (N, 7) or `target_pose` (N, 7) in the root frame), else {}."""
        arm = self.arm.state()
        return {"arm": arm} if arm else {}


class MultiController:
    """The controllers of several robots, one per robot in robot_uids order: the action is
    theirs concatenated, [robot 0's arm, robot 0's gripper, robot 1's arm, robot 1's gripper, ...]."""

    def __init__(self, controllers: list[Controller]):
        self.controllers = controllers
        self.low = np.concatenate([c.low for c in controllers])
        self.high = np.concatenate([c.high for c in controllers])
        self.splits = [c.action_dim for c in controllers]

    @property
    def action_dim(self) -> int:
        return len(self.low)

    def apply(self, action: torch.Tensor) -> None:
        """action: (N, sum of the robots' action dims)."""
        for controller, part in zip(self.controllers, action.split(self.splits, dim=1)):
            controller.apply(part)

    def reset(self, env_idx: torch.Tensor) -> None:
        for c in self.controllers:
            c.reset(env_idx)

    def sync(self, env_idx: torch.Tensor) -> None:
        for c in self.controllers:
            c.sync(env_idx)

"""Controllers turn a batched action into drive targets of one robot.

An arm controller handles the arm joints; every control mode pairs one with the gripper
controller (one action dim in [-1, 1]: -1 closed, 1 open). `Controller.apply` takes the whole
(N, A) action. With several robots, `MultiController` takes their actions concatenated.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import torch

from envs.core.agent import Agent


class ArmController(ABC):
    """One per control mode; `low`/`high` bound its slice of the action."""

    def __init__(self, agent: Agent):
        self.agent = agent

    @property
    @abstractmethod
    def low(self) -> np.ndarray: ...

    @property
    @abstractmethod
    def high(self) -> np.ndarray: ...

    def configure(self) -> None:
        """Set drive gains this controller needs (called when the mode is chosen)."""
        d = self.agent.spec.arm_drive
        self.agent.set_drives(d.stiffness, d.damping)

    @abstractmethod
    def apply(self, action: torch.Tensor) -> None:
        """action: (N, dim) already clipped to [low, high]."""


class GripperController:
    """-1 drives every gripper joint to its closed target, +1 to its open target, linearly between."""

    low = np.array([-1.0], dtype=np.float32)
    high = np.array([1.0], dtype=np.float32)

    def __init__(self, agent: Agent):
        self.agent = agent
        self.closed, self.open = agent.spec.gripper_limits

    def to_target(self, action: torch.Tensor) -> torch.Tensor:  # (N, 1) -> (N, 1)
        return self.closed + (action + 1.0) * 0.5 * (self.open - self.closed)

    def from_target(self, target: torch.Tensor) -> torch.Tensor:
        return (target - self.closed) / (self.open - self.closed) * 2.0 - 1.0

    def apply(self, action: torch.Tensor) -> None:
        t = self.to_target(action)
        self.agent.set_targets(self.agent.gripper, t.expand(-1, len(self.agent.gripper)))


class Controller:
    """An arm controller followed by the gripper controller."""

    def __init__(self, arm: ArmController, gripper: GripperController):
        self.arm = arm
        self.gripper = gripper
        self.arm_dim = len(arm.low)
        self.low = np.concatenate((arm.low, gripper.low)).astype(np.float32)
        self.high = np.concatenate((arm.high, gripper.high)).astype(np.float32)
        self._low_t = torch.from_numpy(self.low)
        self._high_t = torch.from_numpy(self.high)
        arm.configure()

    @property
    def action_dim(self) -> int:
        return len(self.low)

    def apply(self, action: torch.Tensor) -> None:
        """action: (N, A) float32; values outside the bounds are clipped."""
        action = torch.minimum(torch.maximum(action, self._low_t), self._high_t)
        self.arm.apply(action[:, : self.arm_dim])
        self.gripper.apply(action[:, self.arm_dim :])


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

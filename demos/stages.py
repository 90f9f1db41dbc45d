"""The vocabulary of motion-planning solutions: a solution is a short tuple of stages.

Stages compute their targets from the batched env state when they start, for the envs still
running (`idx`), so later stages see where earlier ones really left the objects.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Union

import torch

from demos.grasp import GraspAdapter
from demos.planner import Box

OPEN, CLOSED = 1.0, -1.0

# target(env, idx, adapter) -> (len(idx), 7) TCP poses in the env frame
Target = Callable[[object, torch.Tensor, GraspAdapter], torch.Tensor]


@dataclass(frozen=True)
class MoveTo:
    """Plan the arm to a TCP pose and follow the plan, the gripper held at `gripper`."""

    name: str
    target: Target
    gripper: float
    screw_only: bool = False
    speed: float = 1.0  # a fraction of the run's speed: slow, the arm lags its plan less (a fit with clearance)


@dataclass(frozen=True)
class Grip:
    """Hold the arm and drive the gripper to `gripper` for `steps` control steps."""

    name: str
    gripper: float
    steps: int = 6


@dataclass(frozen=True)
class Settle:
    """Hold everything until the task has reported success for `hold` steps in a row (at most
    `steps` control steps). An episode ends there: a longer `hold` keeps demos off the edge of
    success (an object still coming to rest), so that open-loop replays reproduce it."""

    name: str = "settle"
    steps: int = 25
    hold: int = 1


Stage = Union[MoveTo, Grip, Settle]


# rad/s: the TCP turn rate at which demos convert into the end-effector delta modes that step
# from the measured pose. In pd_ee_delta_pose an arm driven at the rotation bound (0.1 rad a step
# from where it is) turns 0.039 rad a step at 20 Hz, so a source that turns faster costs its
# conversion corrective steps (at most 20 an episode): at 0.06 rad a step (this limit) about one
# for every two steps of turning; the 0.12-0.2 of full-speed plans ran out of them. ManiSkill's
# planner turns at most 0.063 rad a step in its PegInsertionSide demos.
TURN_LIMIT = 1.2


@dataclass(frozen=True)
class Solution:
    env_id: str
    robots: tuple[str, ...]
    stages: tuple[Stage, ...]
    # obstacles(env, idx) -> per env, boxes in the env frame the planner must avoid
    obstacles: Callable[[object, torch.Tensor], list[list[Box]]]
    # episodes are recorded in an env built with this step limit (stored in the demo's env
    # kwargs) when the task's own is too short for a planned solution, as ManiSkill's own
    # motion-planning demos run past it; None: the task's limit
    max_episode_steps: int | None = None
    # rad/s: no planned move turns the TCP faster (it is slowed to match; TURN_LIMIT); None: as
    # fast as the joints' limits allow, for a task whose time limit leaves no room for slower turns
    turn_limit: float | None = None


def with_hold(solution: Solution, hold: int) -> Solution:
    """The solution with every Settle stage holding success for at least `hold` steps (its step
    budget extended to match): demos that show the robot staying at the goal, for policies."""
    stages = tuple(
        replace(s, hold=hold, steps=s.steps + hold - s.hold) if isinstance(s, Settle) and hold > s.hold else s
        for s in solution.stages
    )
    return replace(solution, stages=stages)

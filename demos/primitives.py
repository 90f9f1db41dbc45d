"""Primitives shared by solutions: obstacle builders and targets for reach, grasp, lift and carry."""

from __future__ import annotations

import torch

from demos.grasp import GraspAdapter, offset_along_approach, top_down_grasp
from demos.planner import Box
from demos.stages import CLOSED, OPEN, Grip, MoveTo, Stage
from envs.core.world import ActorGroup
from envs.tasks.common import TABLE_HALF


def table_boxes(env, idx: torch.Tensor) -> list[list[Box]]:
    """The table top (slightly lowered so resting objects' contacts are not collisions)."""
    table = Box("table", (0.0, 0.0, -TABLE_HALF[2] - 0.002, 1.0, 0.0, 0.0, 0.0), TABLE_HALF)
    return [[table] for _ in range(len(idx))]


def rest_tcp_q(env, idx: torch.Tensor) -> torch.Tensor:
    """The TCP orientation at the robot's rest keyframe, in the env frame (k, 4)."""
    agent = env.agent
    rest = torch.tensor(agent.spec.rest_qpos).expand(len(idx), -1)
    from envs.core.pose import pose_mul

    return pose_mul(agent.root_pose[idx], agent.tcp_pose_root(rest))[:, 3:]


def grasp_target(obj: str, half_size: str) -> "callable":
    """Target: a top-down grasp of actor group `env.<obj>` whose half extents are `env.<half_size>`
    ((3,) or (N, 3))."""

    def target(env, idx: torch.Tensor, adapter: GraspAdapter) -> torch.Tensor:
        group: ActorGroup = getattr(env, obj)
        half = torch.as_tensor(getattr(env, half_size), dtype=torch.float32)
        half = half.expand(env.num_envs, 3)[idx] if half.ndim == 1 else half[idx]
        return top_down_grasp(group.pose()[idx], half, adapter, rest_tcp_q(env, idx))

    return target


def pre_grasp(grasp, distance: float = 0.06):
    def target(env, idx, adapter):
        return offset_along_approach(grasp(env, idx, adapter), distance, adapter)

    return target


def carry_to(obj: str, goal) -> "callable":
    """Target: move the TCP so that the held `env.<obj>` lands at goal(env, idx) (k, 3), keeping
    the grip it has now."""

    def target(env, idx, adapter):
        tcp = env.agent.tcp_pose[idx]
        held = getattr(env, obj).pose()[idx]
        return torch.cat((goal(env, idx) + tcp[:, :3] - held[:, :3], tcp[:, 3:]), 1)

    return target


def lift(height: float):
    """Target: straight up by `height` (m) from the current TCP pose."""

    def target(env, idx, adapter):
        tcp = env.agent.tcp_pose[idx].clone()
        tcp[:, 2] += height
        return tcp

    return target


def pick(obj: str, half_size: str) -> tuple[Stage, ...]:
    """Reach above, descend, close: the opening of every pick."""
    grasp = grasp_target(obj, half_size)
    return (
        MoveTo("reach", pre_grasp(grasp), OPEN),
        MoveTo("approach", grasp, OPEN, screw_only=True),
        Grip("grasp", CLOSED),
    )

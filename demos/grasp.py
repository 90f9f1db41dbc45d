"""Grasps from an object's oriented bounding box, through a robot-specific grasp adapter.

A grasp is first built in a robot-neutral "grasp frame": origin at the grasp point, z along the
approach direction (into the object), y along the closing direction of the fingers. The
robot's adapter maps that frame to its TCP pose. Candidates are the box's symmetric
orientations; the one closest to the robot's rest TCP orientation is chosen, which keeps the
wrist away from its joint limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from envs.core.pose import matrix_to_quat, quat_angle, quat_apply, quat_conj, quat_mul, quat_to_matrix
from envs.robots.base import robot_family


@dataclass(frozen=True)
class GraspAdapter:
    """How a robot's TCP frame relates to the grasp frame, and what its gripper can hold."""

    tcp_from_grasp: tuple[float, float, float, float]  # quaternion: grasp frame -> TCP frame
    max_width: float  # widest object the open fingers admit (m)
    # holding something upright with the gripper horizontal: the approach directions the wrist
    # reaches well near the table, as a range of yaws (degrees, counter-clockwise) from the
    # direction away from the robot's base, and whether the TCP's x then points up (+1) or down (-1)
    side_hold: tuple[float, float, float] = (90.0, 90.0, -1.0)


# Both robots follow the project's gripper convention (envs/robots/base.py): the TCP frame is the
# grasp frame (z out of the gripper, fingers close along y). They differ in stroke.
ADAPTERS: dict[str, GraspAdapter] = {
    "panda": GraspAdapter((1.0, 0.0, 0.0, 0.0), 0.08),
    "ur5e": GraspAdapter((1.0, 0.0, 0.0, 0.0), 0.085),
    "panda_stick": GraspAdapter((1.0, 0.0, 0.0, 0.0), 0.0),  # no gripper: its TCP is the stick's tip
}


def adapter_for(robot_uid: str) -> GraspAdapter:
    """The robot's adapter, or its family's (panda_wristcam grasps as a panda)."""
    family = robot_family(robot_uid)
    if family not in ADAPTERS:
        raise ValueError(f"no grasp adapter for robot {robot_uid!r}; robots with one: {', '.join(sorted(ADAPTERS))}")
    return ADAPTERS[family]


def frame_of(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Quaternions of frames with the given z and (orthogonalised) y axes; (k, 3) each."""
    z = z / z.norm(dim=1, keepdim=True)
    y = y - (y * z).sum(1, keepdim=True) * z
    y = y / y.norm(dim=1, keepdim=True)
    x = torch.cross(y, z, dim=1)
    return matrix_to_quat(torch.stack((x, y, z), 2))


def top_down_grasp(
    obj_pose: torch.Tensor,
    half_size: torch.Tensor,
    adapter: GraspAdapter,
    reference_q: torch.Tensor,
    depth: float = 0.0,
    clear_of: torch.Tensor | None = None,
    axes: tuple[int, ...] = (0, 1),
    final_q: torch.Tensor | None = None,
    clear_within: float | None = None,
) -> torch.Tensor:
    """TCP poses (k, 7) grasping boxes from above, the fingers closing along one of the box's
    `axes` (its local x and y by default; local z for a box lying on a side) whose width fits
    and that lies near the horizontal, the one nearest reference_q.

    obj_pose (k, 7), half_size (k, 3) in the object frame; reference_q (k, 4) the TCP orientation
    to stay close to. The grasp point is the box centre raised by `depth` (m). With `clear_of`
    (k, 3), points the open fingers must stay away from (a neighbouring object), the closing
    axis is the box axis more nearly perpendicular to the direction towards that point (with
    `clear_within`, only where that point is nearer than clear_within (m): farther, the open
    fingers miss it whatever the axis, and the grasp nearest reference_q is taken). With
    `final_q` (k, 4), the TCP orientation reference_q should have once the object is placed,
    expressed as the orientation a grasp taken now would need (see `grasp_for_placing`), the
    grasp nearest both is chosen: the wrist then neither starts nor ends near its limits."""
    k = obj_pose.shape[0]
    rot = quat_to_matrix(obj_pose[:, 3:])  # columns: object axes in the env frame
    down = torch.tensor([0.0, 0.0, -1.0]).expand(k, 3)
    toward = None
    if clear_of is not None:
        toward = clear_of - obj_pose[:, :3]
        toward[:, 2] = 0
        near = toward.norm(dim=1) < clear_within if clear_within is not None else torch.ones(k, dtype=torch.bool)
        toward = toward / toward.norm(dim=1, keepdim=True).clamp_min(1e-6)
    best, best_angle = None, None
    for axis in axes:
        width = 2 * half_size[:, axis]
        closing = rot[:, :, axis]
        for sign in (1.0, -1.0):
            q = quat_mul(frame_of(down, sign * closing), torch.tensor(adapter.tcp_from_grasp).expand(k, 4))
            angle = quat_angle(q, reference_q)
            if final_q is not None:
                angle = angle + quat_angle(q, final_q)
            if toward is not None:  # towards the neighbour: |cos| of this axis vs the other's
                other = rot[:, :, 1 - axis] if axis < 2 else rot[:, :, 1]
                facing = (closing * toward).sum(1).abs() - (other * toward).sum(1).abs()
                angle = angle + 10.0 * ((facing > 0) & near).float()
            # the fingers close across the box, in the horizontal plane: a box axis standing near
            # vertical (a box lying on a side turned about that axis) cannot be closed along
            fits = (width <= adapter.max_width - 0.005) & (closing[:, 2].abs() < 0.7)
            angle = torch.where(fits, angle, torch.full_like(angle, 1e3))
            if best is None:
                best, best_angle = q, angle
            else:
                take = angle < best_angle
                best = torch.where(take[:, None], q, best)
                best_angle = torch.where(take, angle, best_angle)
    centre = obj_pose[:, :3] + torch.tensor([0.0, 0.0, depth])
    return torch.cat((centre, best), 1)


def offset_along_approach(tcp_pose: torch.Tensor, distance: float, adapter: GraspAdapter) -> torch.Tensor:
    """The TCP pose moved back `distance` (m) against the approach direction (pre-grasp)."""
    grasp_q = quat_mul(tcp_pose[:, 3:], quat_conj(torch.tensor(adapter.tcp_from_grasp)).expand(tcp_pose.shape[0], 4))
    approach = quat_apply(grasp_q, torch.tensor([0.0, 0.0, 1.0]).expand(tcp_pose.shape[0], 3))
    return torch.cat((tcp_pose[:, :3] - distance * approach, tcp_pose[:, 3:]), 1)

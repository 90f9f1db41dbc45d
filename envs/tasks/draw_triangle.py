"""DrawTriangle-v1, as ManiSkill 3.0.1 defines it (mani_skill/envs/tasks/drawing/draw_triangle.py).

Task: with the stick of a `panda_stick`, draw the goal triangle ("goal_tri", an equilateral
triangle of 30 cm sides outlined in 1 cm black strokes on the white canvas) in red ink. The ink
is 300 dots (envs/tasks/drawing.py): each control step places one, under the tip when the tip is
within 5 mm of a dot's top above the canvas.

Randomisation: the triangle's centre is uniform in [-0.1, -0.08]^2 on the canvas and its yaw
uniform in [0, 2 pi); the robot starts at its rest keyframe without noise.

Success: every drawn dot lies within 2.5 cm (in the table plane) of one of the 153 reference
points (51 per side, evenly spaced from each vertex towards the next), and every reference point
has a drawn dot within 2.5 cm. Episodes last 300 control steps (one dot each). The reward is
sparse (success).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from envs.core.registry import register_env
from envs.tasks.drawing import GOAL_Z, DrawingEnv

SIDE = 0.3
POINTS_PER_SIDE = 51  # ManiSkill's linspace(0, 1, 50 + 2) without its last point


def triangle() -> tuple[np.ndarray, np.ndarray]:
    """The goal's vertices (3, 3) and strokes (3, 2, 3) in its frame: the three stroke centres lie
    on a circle of radius SIDE / (2 sqrt 3) (the first straight ahead along +y), and the vertices
    at twice that radius on the opposite side; all 1 cm above the goal's origin."""
    r = SIDE / 2 / math.sqrt(3)
    angles = math.pi / 2 + np.array([0.0, 2 * math.pi / 3, 4 * math.pi / 3])
    c = np.stack((r * np.cos(angles), r * np.sin(angles), np.full(3, GOAL_Z)), 1)
    vertices = np.stack((c[0] + c[2] - c[1], c[0] + c[1] - c[2], c[1] + c[2] - c[0]))
    segments = np.stack([(vertices[k], vertices[(k + 1) % 3]) for k in range(3)])
    return vertices, segments


def around(vertices: torch.Tensor, per_side: int) -> torch.Tensor:
    """(n, V * per_side, 2): per_side points along each side of the closed polygon vertices
    (n, V, >=2), from each vertex (included) towards the next (excluded)."""
    a = vertices[:, :, :2]
    b = torch.roll(a, -1, dims=1)
    t = torch.arange(per_side, dtype=a.dtype) / per_side  # (per_side,)
    pts = a[:, :, None] * (1 - t[:, None]) + b[:, :, None] * t[:, None]  # (n, V, per_side, 2)
    return pts.reshape(len(a), -1, 2)


@register_env("DrawTriangle-v1", max_episode_steps=300, robot_uids="panda_stick")
class DrawTriangleEnv(DrawingEnv):
    max_dots = 300
    threshold = 0.025
    goal_name = "goal_tri"
    vertices, segments = triangle()

    def reference(self, points: torch.Tensor) -> torch.Tensor:
        return around(points, POINTS_PER_SIDE)

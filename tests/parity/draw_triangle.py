"""DrawTriangle-v1 beside ManiSkill 3.0.1 (mani_skill/envs/tasks/drawing/draw_triangle.py)."""

from __future__ import annotations

import torch

from tests.parity import Row, Table
from tests.parity._cubes import env
from tests.parity._drawing import NOTES, SRC_DIR, drawing_rows

ID = "DrawTriangle-v1"
SRC = f"{SRC_DIR}/draw_triangle.py"


def _sides() -> tuple[float, ...]:
    p = env(ID).points[0]
    return tuple(round(float((p[k] - p[(k + 1) % 3]).norm()), 6) for k in range(3))


def _centre_offset() -> float:
    """How far the vertices' centroid lies from the goal actor's position."""
    e = env(ID)
    return round(float((e.points[:, :, :2].mean(1) - e.goal.pose()[:, :2]).norm(dim=1).max()), 6)


TABLE = Table(
    title=ID,
    env_id=ID,
    notes=NOTES,
    rows=[
        *drawing_rows(ID, SRC, steps=300, dots=300, threshold=0.025, state_dim=49,
                      extra=("tcp_pose", "goal_pose", "tcp_to_verts_pos", "goal_pos", "vertices")),
        Row("triangle side lengths (m)", (0.3, 0.3, 0.3), _sides, SRC),
        Row("triangle centred on the goal's position", 0.0, _centre_offset, SRC),
        Row("reference points (51 per side, from each vertex)", 153, lambda: env(ID).reference_xy.shape[1], SRC),
        Row("first reference points of side 1: vertex 0, then 1/51 of the way to vertex 1", (0.0, 1 / 51),
            lambda: tuple(round(float((env(ID).reference_xy[0, k] - env(ID).points[0, 0, :2]).norm()
                                      / (env(ID).points[0, 1, :2] - env(ID).points[0, 0, :2]).norm()), 6) for k in (0, 1)), SRC),
        Row("goal outline: strokes", 3, lambda: len(env(ID).segments), SRC),
        Row("vertex 0 in the goal frame (x, y, z)", (0.15, 0.0866025, 0.01),
            lambda: tuple(round(float(v), 6) for v in torch.as_tensor(env(ID).vertices[0]).tolist()), SRC, tol=1e-6),
    ],
)

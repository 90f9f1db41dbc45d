"""DrawSVG-v1 beside ManiSkill 3.0.1 (mani_skill/envs/tasks/drawing/draw_svg.py)."""

from __future__ import annotations

import numpy as np

from envs.tasks.draw_svg import svg_lines
from tests.parity import Row, Table
from tests.parity._cubes import env
from tests.parity._drawing import NOTES, SRC_DIR, drawing_rows

ID = "DrawSVG-v1"
SRC = f"{SRC_DIR}/draw_svg.py"


def _scaled_extent() -> float:
    """The default path's largest coordinate after scaling, measured on the goal's vertices."""
    v = env(ID).vertices
    return round(float((v[:, :2] - v[:, :2].min(0)).max()), 6)


def _centre() -> tuple[float, float]:
    """The mean of the lines' starts in the goal frame (ManiSkill centres the path there)."""
    s = env(ID).segments
    return tuple(round(float(x), 9) for x in s[:, 0, :2].mean(0))


TABLE = Table(
    title=ID,
    env_id=ID,
    notes=NOTES + " The default path is parsed here (M, L, H, V, C, Q, Z), not by svgpathtools; "
                  "ManiSkill's closing Z adds a line only when the path is not already at its start, as ours.",
    rows=[
        *drawing_rows(ID, SRC, steps=500, dots=1000, threshold=0.1, state_dim=194,
                      extra=("tcp_pose", "goal_pose", "tcp_to_verts_pos", "goal_pos", "vertices", "continuous")),
        Row("default path: lines (M L V L H 16xL ... H Z), vertices", (26, 27),
            lambda: (len(svg_lines(env(ID).svg)), len(env(ID).vertices)), SRC),
        Row("default path: continuous", True, lambda: env(ID).continuous, SRC),
        Row("path scaled: its largest coordinate (63) to 0.25 m; extent of the scaled path", 0.25, _scaled_extent, SRC),
        Row("path centred on the mean of its lines' starts", (0.0, 0.0), _centre, SRC, tol=1e-9),
        Row("a cubic Bezier becomes 4 lines (5 points)", 4, lambda: len(svg_lines("M0 0 C 1 1 2 1 3 0")), SRC),
        Row("vertices: the first line's start, then every line's end", True,
            lambda: bool(np.allclose(env(ID).vertices, np.concatenate((env(ID).segments[:1, 0], env(ID).segments[:, 1])))), SRC),
    ],
)

"""DrawSVG-v1, as ManiSkill 3.0.1 defines it (mani_skill/envs/tasks/drawing/draw_svg.py).

Task: with the stick of a `panda_stick`, draw the goal outline ("goal_tri": an SVG path drawn in
1 cm black strokes on the white canvas) in red ink. The ink is 1000 dots (envs/tasks/drawing.py).
The path is `svg` (an SVG path string; default ManiSkill's 63 x 63 logo outline, one closed line
path): its lines, and its Bezier curves as 4 lines each, scaled so that its largest coordinate is
25 cm and centred on the mean of the lines' starts. Its vertices are the first line's start and
every line's end.

Randomisation: the outline's centre is uniform in [-0.1, -0.08]^2 on the canvas and its yaw
uniform in [0, 2 pi); the robot starts at its rest keyframe without noise.

Success: every drawn dot lies within 10 cm (in the table plane) of one of the vertices, and every
vertex has a drawn dot within 10 cm. Episodes last 500 control steps. The reward is sparse.
"""

from __future__ import annotations

import re

import numpy as np
import torch

from envs.core.registry import register_env
from envs.tasks.drawing import GOAL_Z, DrawingEnv

DEFAULT_SVG = (
    "M7.875 0L0 7.875V55.125L7.875 63H23.763L23.7235 62.9292L11.8418 51.2859L11.8418 35.6268L21.1302 26.915"
    "L23.9193 11.6649L40.9773 6.3631L46.8835 16.5929L33.2356 19.926L32.6417 29.1349L41.1407 33.618L50.8511 23.465"
    "L56.6781 33.5577L43.5576 45.6794L28.9369 40.4365L26.1844 42.4266L26.1844 45.6794L43.2157 63H55.125L63 55.125"
    "V7.875L55.125 0H7.875Z"
)
SIZE = 0.25  # the path's largest coordinate, scaled (m)
CURVE_POINTS = 5  # points sampled along a Bezier curve (4 lines)
_TOKEN = re.compile(r"[MmLlHhVvZzCcQq]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|([^\s,])")
_ARGS = {"M": 2, "L": 2, "H": 1, "V": 1, "C": 6, "Q": 4, "Z": 0}


def _bezier(control: np.ndarray, n: int = CURVE_POINTS) -> np.ndarray:
    """(n, 2) points along a quadratic (3 control points) or cubic (4) Bezier curve."""
    t = np.linspace(0, 1, n)[:, None]
    if len(control) == 3:
        p0, p1, p2 = control
        return (1 - t) ** 2 * p0 + 2 * t * (1 - t) * p1 + t**2 * p2
    p0, p1, p2, p3 = control
    return (1 - t) ** 3 * p0 + 3 * t * (1 - t) ** 2 * p1 + 3 * t**2 * (1 - t) * p2 + t**3 * p3


def svg_lines(path: str) -> np.ndarray:
    """(n, 2, 2) start and end points of the lines of an SVG path (commands M, L, H, V, C, Q, Z,
    absolute or relative); a curve gives 4 lines, a Z back to a start it is not at one more line."""
    tokens = []
    for m in _TOKEN.finditer(path):
        if m.group(1):
            raise ValueError(f"SVG path: unsupported command or character {m.group(1)!r}; supported: M L H V C Q Z (and lower case)")
        tokens.append(m.group(0))
    if not tokens or tokens[0] not in "Mm":
        raise ValueError("SVG path: must start with a move (M)")
    lines, pos, start, k, cmd = [], np.zeros(2), np.zeros(2), 0, None
    while k < len(tokens):
        if tokens[k].isalpha():
            cmd, k = tokens[k], k + 1
        elif cmd is None:
            raise ValueError("SVG path: numbers after Z without a command")
        kind, rel = cmd.upper(), cmd.islower()
        args = [float(x) for x in tokens[k : k + _ARGS[kind]]]
        if len(args) < _ARGS[kind] or any(a.isalpha() for a in tokens[k : k + _ARGS[kind]]):
            raise ValueError(f"SVG path: {cmd} needs {_ARGS[kind]} numbers")
        k += _ARGS[kind]
        base = pos if rel else np.zeros(2)
        if kind == "M":
            pos = start = base + args
            cmd = "l" if rel else "L"  # further pairs are lines
        elif kind in "LHV":
            end = pos.copy() if kind != "L" else base + args
            if kind == "H":
                end[0] = args[0] + (pos[0] if rel else 0.0)
            elif kind == "V":
                end[1] = args[0] + (pos[1] if rel else 0.0)
            lines.append((pos.copy(), end))
            pos = end
        elif kind in "CQ":
            control = np.vstack((pos, base + np.reshape(args, (-1, 2))))
            pts = _bezier(control)
            lines.extend(zip(pts[:-1], pts[1:]))
            pos = control[-1]
        else:  # Z
            if not np.array_equal(pos, start):
                lines.append((pos.copy(), start.copy()))
            pos = start
            cmd = None
    if not lines:
        raise ValueError("SVG path: no lines")
    return np.array(lines, dtype=np.float64)


def svg_goal(path: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """The goal's vertices (V, 3) and strokes (n, 2, 3) in its frame, and whether the path is
    one continuous line."""
    lines = svg_lines(path)
    lines = lines / lines.max() * SIZE
    lines = np.concatenate((lines, np.full((*lines.shape[:2], 1), GOAL_Z)), 2)
    lines[:, :, :2] -= lines[:, 0, :2].mean(0)
    continuous = bool(np.all(lines[1:, 0, :2] == lines[:-1, 1, :2]))
    vertices = np.concatenate((lines[:1, 0], lines[:, 1]))
    return vertices, lines, continuous


@register_env("DrawSVG-v1", max_episode_steps=500, robot_uids="panda_stick")
class DrawSVGEnv(DrawingEnv):
    max_dots = 1000
    threshold = 0.1
    goal_name = "goal_tri"

    def __init__(self, *args, svg: str | None = None, **kwargs):
        self.svg = DEFAULT_SVG if svg is None else svg
        self.vertices, self.segments, self.continuous = svg_goal(self.svg)
        super().__init__(*args, **kwargs)

    def _extra_obs(self, info: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        obs = super()._extra_obs(info)
        if self.obs_mode.include_state:
            obs["continuous"] = torch.full((self.num_envs, 1), float(self.continuous))
        return obs

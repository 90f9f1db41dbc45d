"""PegInsertionSide-v1 beside ManiSkill 3.0.1's mani_skill/envs/tasks/tabletop/peg_insertion_side.py."""

from __future__ import annotations

import math

import numpy as np
import torch

from envs.core.pose import pose_mul
from envs.modes import ObsMode
from envs.tasks.peg_insertion_side import draw_geometry
from tests.parity import Row, Table
from tests.parity._tabletop import camera_rows, env, extra_keys, put, range_rows, samples, shapes, yaw

ENV_ID = "PegInsertionSide-v1"
SRC = "mani_skill/envs/tasks/tabletop/peg_insertion_side.py"
BASE = "mani_skill/utils/scene_builder/table/scene_builder.py"
GEOMETRY_SEEDS = range(2000)


def _geometry() -> np.ndarray:  # (S, 4): half length, radius, hole offset y, z over many seeds
    return np.array([(l, r, *o) for l, r, o in (draw_geometry(s) for s in GEOMETRY_SEEDS)])


def _span(v) -> tuple[float, float]:
    return (round(float(np.min(v)), 3), round(float(np.max(v)), 3))


def head_at(points: list[tuple[float, float, float]]) -> tuple[bool, ...]:
    """Success with the peg aligned to the hole and its head at each point (hole frame), env 0."""
    base = env(ENV_ID)
    base.reset(seed=0)
    out = []
    for x, y, z in points:
        local = torch.zeros(base.num_envs, 7)
        local[:, 0] = x - base.peg_half_sizes[:, 0]
        local[:, 1], local[:, 2], local[:, 3] = y, z, 1.0
        put(base, "peg", pose_mul(base.box_hole_pose(), local))
        out.append(bool(base.evaluate()["success"][0]))
    return tuple(out)


def _radius() -> float:
    return float(env(ENV_ID).box_hole_radii[0])


def _reward_at_success() -> float:
    base = env(ENV_ID)
    head_at([(0.0, 0.0, 0.0)])
    return float(base.compute_dense_reward(base.evaluate())[0])


def _box_vs_peg() -> tuple[float, float]:
    """Env 0's box: its half extent along the hole (depth) and across it, over the peg's half length."""
    base = env(ENV_ID)
    boxes = shapes(base.box)
    lo = np.min([np.subtract(c, h) for h, c in boxes], 0)
    hi = np.max([np.add(c, h) for h, c in boxes], 0)
    length = float(base.peg_half_sizes[0, 0])
    return (round((hi[0] - lo[0]) / 2 / length, 6), round((hi[1] - lo[1]) / 2 / length, 6))


def _hole_width_over_radius() -> float:
    base = env(ENV_ID)
    return round(float((base.box_hole_radii - base.peg_half_sizes[:, 1]).mean()), 6)


TABLE = Table(
    title=ENV_ID,
    env_id=ENV_ID,
    notes=(
        "Geometry is drawn per env from a legacy numpy `RandomState(seed)` in ManiSkill's order (half "
        "length, radius, hole offset), so a geometry seed gives ManiSkill's peg and box exactly; the "
        "default seeds 2022 + k are those ManiSkill builds a new env with. ManiSkill with one env redraws "
        "the geometry at every reset from the episode seed; ours is drawn when the env is built "
        "(`geometry_seed`, stored with each demo)."
    ),
    rows=[
        Row("max_episode_steps", 100, lambda: env(ENV_ID).max_episode_steps, SRC),
        Row("task actors in the env state", ("peg", "box_with_hole"),
            lambda: tuple(n for n in env(ENV_ID).get_state_dict()["actors"] if n in ("peg", "box_with_hole")), SRC),
        Row("peg half length range (2000 seeds)", (0.085, 0.125), lambda: _span(_geometry()[:, 0]), SRC, tol=0.001),
        Row("peg radius range (2000 seeds)", (0.015, 0.025), lambda: _span(_geometry()[:, 1]), SRC, tol=0.001),
        Row("hole offset / (0.5 (L - r)) range, y and z (2000 seeds)", (-1.0, 1.0),
            lambda: _span((_geometry()[:, 2:] / (0.5 * (_geometry()[:, :1] - _geometry()[:, 1:2])))), SRC, tol=0.002),
        Row("default geometry seeds (env k)", (2022, 2023), lambda: tuple(env(ENV_ID).geometry_seeds[:2]), "mani_skill/envs/sapien_env.py"),
        Row("hole clearance per side (m)", 0.003, _hole_width_over_radius, SRC),
        Row("box half depth and half width / peg half length", (1.0, 1.0), _box_vs_peg, SRC, tol=1e-4),
        *range_rows(ENV_ID, "peg", "peg", [
            ("x", (-0.1, 0.1), lambda p: p[:, 0]),
            ("y", (-0.3, 0.0), lambda p: p[:, 1]),
            ("yaw", (math.pi / 2 - math.pi / 3, math.pi / 2 + math.pi / 3), lambda p: yaw(p[:, 3:])),
        ], SRC),
        *range_rows(ENV_ID, "box_with_hole", "box", [
            ("x", (-0.05, 0.05), lambda p: p[:, 0]),
            ("y", (0.2, 0.4), lambda p: p[:, 1]),
            ("yaw", (math.pi / 2 - math.pi / 8, math.pi / 2 + math.pi / 8), lambda p: yaw(p[:, 3:])),
        ], SRC),
        Row("peg centre height - radius at reset (max)", 0.0,
            lambda: float((samples(ENV_ID)["peg"][:, 2] - env(ENV_ID).peg_half_sizes[:, 2].repeat(40)).abs().max()), SRC),
        Row("box centre height - half length at reset (max)", 0.0,
            lambda: float((samples(ENV_ID)["box_with_hole"][:, 2] - env(ENV_ID).peg_half_sizes[:, 0].repeat(40)).abs().max()), SRC),
        Row("arm start qpos, mean of 320 resets", (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, -math.pi / 4),
            lambda: tuple(samples(ENV_ID)["qpos"].mean(0).tolist()), SRC, tol=0.006),
        Row("arm start noise std (rad)", 0.02, lambda: float(samples(ENV_ID)["qpos"].std(0).mean()), SRC, tol=0.003),
        Row("success: head x in hole frame -0.0149 / -0.0151 (centred)", (True, False),
            lambda: head_at([(-0.0149, 0.0, 0.0), (-0.0151, 0.0, 0.0)]), SRC),
        Row("success: head y at hole radius -0.1 mm / +0.1 mm", (True, False),
            lambda: head_at([(0.0, _radius() - 1e-4, 0.0), (0.0, _radius() + 1e-4, 0.0)]), SRC),
        Row("success: head z at -(hole radius) +0.1 mm / -0.1 mm", (True, False),
            lambda: head_at([(0.0, 0.0, -_radius() + 1e-4), (0.0, 0.0, -_radius() - 1e-4)]), SRC),
        Row("normalised dense reward at success (10 / 10)", 1.0, _reward_at_success, SRC),
        Row("extra obs, state modes", ("tcp_pose", "peg_pose", "peg_half_size", "box_hole_pose", "box_hole_radius"),
            lambda: extra_keys(ENV_ID, ObsMode.STATE_DICT), SRC),
        Row("extra obs, camera modes", ("tcp_pose",), lambda: extra_keys(ENV_ID, ObsMode.RGB), SRC),
        *camera_rows(ENV_ID, "base_camera", (0, -0.3, 0.2), (0, 0, 0.1), 128, math.pi / 2, 0.01, 100, SRC),
        *camera_rows(ENV_ID, "render_camera", (0.5, -0.5, 0.8), (0.05, -0.1, 0.4), 512, 1.0, 0.01, 100, SRC),
        Row("default robot", "panda_wristcam", lambda: env(ENV_ID).robot_uids, SRC),
        Row("is_grasping (dense reward)", "contact forces on both fingers, max angle 20 deg",
            lambda: "finger opening and pose (Agent.is_grasping)", SRC,
            deviation="is_grasping is judged from the fingers' opening and the object's place between them, for every task alike"),
    ],
)

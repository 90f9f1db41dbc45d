"""PlugCharger-v1 beside ManiSkill 3.0.1's mani_skill/envs/tasks/tabletop/plug_charger.py."""

from __future__ import annotations

import math

import torch

from envs.core.pose import axis_angle_to_quat, pose_inv, pose_mul
from envs.modes import ObsMode
from tests.parity import Row, Table
from tests.parity._tabletop import camera_rows, env, extra_keys, put, range_rows, samples, shapes, yaw

ENV_ID = "PlugCharger-v1"
SRC = "mani_skill/envs/tasks/tabletop/plug_charger.py"
BASE = "mani_skill/utils/scene_builder/table/scene_builder.py"

# ManiSkill's sizes (half sizes unless said): base, prong ("peg"), prong gap, clearance, receptacle
_B, _P, _GAP, _C, _R = (0.02, 0.015, 0.012), (0.008, 0.00075, 0.0032), 0.007, 0.0005, (0.01, 0.05, 0.05)


def _charger_boxes() -> list:
    out = [(_P, (_P[0], y, 0.0)) for y in (_GAP, -_GAP)] + [(_B, (-_B[0], 0.0, 0.0))]
    return sorted(tuple(tuple(round(v, 6) for v in t) for t in box) for box in out)


def _receptacle_boxes() -> list:
    """The five collision boxes ManiSkill's _build_receptacle makes, from its formulas."""
    py, pz = _P[1] + _C, _P[2] + _C
    sy, sz = 0.5 * (_R[1] - py - _GAP), 0.5 * (_R[2] - pz)
    dx, dy, dz = -_R[0], py + _GAP + sy, pz + sz
    out = [
        ((_R[0], _R[1], sz), (dx, 0.0, dz)),
        ((_R[0], _R[1], sz), (dx, 0.0, -dz)),
        ((_R[0], sy, _R[2]), (dx, dy, 0.0)),
        ((_R[0], sy, _R[2]), (dx, -dy, 0.0)),
        ((_R[0], _GAP - py, pz), (-_R[0], 0.0, 0.0)),
    ]
    return sorted(tuple(tuple(round(v, 6) for v in t) for t in box) for box in out)


def charger_at(offsets: list[tuple[float, float]]) -> tuple[bool, ...]:
    """Success with the charger at the goal moved by d (m) along the goal's y and turned by a
    (rad) about its z, for each (d, a), env 0."""
    base = env(ENV_ID)
    base.reset(seed=0)
    out = []
    for d, a in offsets:
        local = torch.zeros(base.num_envs, 7)
        local[:, 1] = d
        local[:, 3:] = axis_angle_to_quat(torch.tensor([0.0, 0.0, a]))
        put(base, "charger", pose_mul(base.goal_pose(), local))
        out.append(bool(base.evaluate()["success"][0]))
    return tuple(out)


def _goal_in_receptacle_frame() -> tuple:
    base = env(ENV_ID)
    rel = pose_mul(pose_inv(base.receptacle.pose()), base.goal_pose())[0]
    q = -rel[3:] if rel[6] < 0 else rel[3:]  # q and -q are one rotation
    return tuple(round(float(v), 6) for v in (*rel[:3], *q))


def _rewards() -> tuple[float, float]:
    base = env(ENV_ID)
    base.reset(seed=0)
    before = float(base.compute_dense_reward(base.evaluate())[0])
    charger_at([(0.0, 0.0)])
    return before, float(base.compute_dense_reward(base.evaluate())[0])


TABLE = Table(
    title=ENV_ID,
    env_id=ENV_ID,
    rows=[
        Row("max_episode_steps", 200, lambda: env(ENV_ID).max_episode_steps, SRC),
        Row("task actors in the env state", ("charger", "receptacle"),
            lambda: tuple(n for n in env(ENV_ID).get_state_dict()["actors"] if n in ("charger", "receptacle")), SRC),
        Row("charger collision boxes (half size, centre)", _charger_boxes(), lambda: shapes(env(ENV_ID).charger), SRC),
        Row("receptacle collision boxes (half size, centre)", _receptacle_boxes(), lambda: shapes(env(ENV_ID).receptacle), SRC),
        *range_rows(ENV_ID, "charger", "charger", [
            ("x", (-0.1, -0.01 - 2 * _P[0]), lambda p: p[:, 0]),
            ("y", (-0.2, 0.2), lambda p: p[:, 1]),
            ("yaw (from -pi)", (math.pi - math.pi / 3, math.pi + math.pi / 3), lambda p: (yaw(p[:, 3:]) + math.pi) % (2 * math.pi)),
        ], SRC),
        *range_rows(ENV_ID, "receptacle", "receptacle", [
            ("x", (0.01, 0.1), lambda p: p[:, 0]),
            ("y", (-0.1, 0.1), lambda p: p[:, 1]),
            ("yaw", (math.pi - math.pi / 8, math.pi + math.pi / 8), lambda p: yaw(p[:, 3:])),
        ], SRC),
        Row("charger height at reset (base half height)", (_B[2], _B[2]), lambda: tuple(samples(ENV_ID)["charger"][:, 2].aminmax()), SRC),
        Row("receptacle height", (0.1, 0.1), lambda: tuple(samples(ENV_ID)["receptacle"][:, 2].aminmax()), SRC),
        Row("goal pose in the receptacle's frame (half turn about z)", (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0), _goal_in_receptacle_frame, SRC),
        Row("arm start qpos, mean of 320 resets", (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, math.pi / 4),
            lambda: tuple(samples(ENV_ID)["qpos"].mean(0).tolist()), SRC, tol=0.006),
        Row("arm start noise std (rad)", 0.02, lambda: float(samples(ENV_ID)["qpos"].std(0).mean()), SRC, tol=0.003),
        Row("success: 4.9 / 5.1 mm from the goal", (True, False), lambda: charger_at([(0.0049, 0.0), (0.0051, 0.0)]), SRC),
        Row("success: 0.199 / 0.201 rad from the goal", (True, False), lambda: charger_at([(0.0, 0.199), (0.0, 0.201)]), SRC),
        Row("success: plugged in upside down (half turn about x)", False,
            lambda: _upside_down(), SRC),
        Row("reward (sparse only): before / at success", (0.0, 1.0), _rewards, SRC),
        Row("extra obs, state modes", ("tcp_pose", "charger_pose", "receptacle_pose", "goal_pose"),
            lambda: extra_keys(ENV_ID, ObsMode.STATE_DICT), SRC),
        Row("extra obs, camera modes", ("tcp_pose",), lambda: extra_keys(ENV_ID, ObsMode.RGB), SRC),
        *camera_rows(ENV_ID, "base_camera", (0.3, 0, 0.6), (-0.1, 0, 0.1), 128, math.pi / 2, 0.01, 100, SRC),
        *camera_rows(ENV_ID, "render_camera", (0.3, 0.4, 0.1), (0, 0, 0), 512, 1.0, 0.01, 100, SRC, mount="receptacle"),
        Row("default robot", "panda_wristcam", lambda: env(ENV_ID).robot_uids, SRC),
    ],
)


def _upside_down() -> bool:
    base = env(ENV_ID)
    base.reset(seed=0)
    local = torch.zeros(base.num_envs, 7)
    local[:, 3:] = axis_angle_to_quat(torch.tensor([math.pi, 0.0, 0.0]))
    put(base, "charger", pose_mul(base.goal_pose(), local))
    return bool(base.evaluate()["success"][0])

"""LiftPegUpright-v1 beside ManiSkill 3.0.1's mani_skill/envs/tasks/tabletop/lift_peg_upright.py."""

from __future__ import annotations

import math

import torch

from envs.core.pose import matrix_to_quat, quat_angle
from envs.modes import ObsMode
from tests.parity import Row, Table
from tests.parity._tabletop import camera_rows, env, extra_keys, put, range_rows, samples, shapes

ENV_ID = "LiftPegUpright-v1"
SRC = "mani_skill/envs/tasks/tabletop/lift_peg_upright.py"
BASE = "mani_skill/utils/scene_builder/table/scene_builder.py"
START_Q = (math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0)  # euler2quat(pi/2, 0, 0)


def standing(tilts: list[tuple[float, float]]) -> tuple[bool, ...]:
    """Success, env 0, for the peg standing on its end (its local y along the table's -x) tipped
    by `tilt` rad towards the table's x, its centre `dz` m above half its length, for each
    (tilt, dz). The tilt moves ManiSkill's Euler angle atan2(-R01, R00) off pi/2 by tilt."""
    base = env(ENV_ID)
    base.reset(seed=0)
    out = []
    for tilt, dz in tilts:
        c, s_ = math.cos(tilt), math.sin(tilt)
        m = torch.tensor([[s_, -c, 0.0], [0.0, 0.0, -1.0], [c, s_, 0.0]])  # columns: local x, y, z
        q = matrix_to_quat(m[None])[0]
        pose = torch.tensor([[0.2, 0.25, 0.12 + dz, *q.tolist()]]).repeat(base.num_envs, 1)
        put(base, "peg", pose)
        out.append(bool(base.evaluate()["success"][0]))
    return tuple(out)


def _start_orientation_error() -> float:
    q = samples(ENV_ID)["peg"][:, 3:]
    return round(float(quat_angle(q, torch.tensor(START_Q).expand(len(q), 4)).max()), 6)


def _reward_at_success() -> float:
    base = env(ENV_ID)
    standing([(0.0, 0.0)])
    return float(base.compute_dense_reward(base.evaluate())[0])


TABLE = Table(
    title=ENV_ID,
    env_id=ENV_ID,
    notes=(
        "ManiSkill's upright test is on the third XYZ Euler angle, atan2(-R[0,1], R[0,0]), being near "
        "+-pi/2: it holds for a standing peg whose local y has a component along the table's x, and is "
        "ill-defined when that component vanishes; ours is the same test."
    ),
    rows=[
        Row("max_episode_steps", 50, lambda: env(ENV_ID).max_episode_steps, SRC),
        Row("task actors in the env state", ("peg",), lambda: tuple(n for n in env(ENV_ID).get_state_dict()["actors"] if n == "peg"), SRC),
        Row("peg collision box (half size, centre)", [((0.12, 0.025, 0.025), (0.0, 0.0, 0.0))], lambda: shapes(env(ENV_ID).peg), SRC),
        *range_rows(ENV_ID, "peg", "peg", [
            ("x", (-0.1, 0.1), lambda p: p[:, 0]),
            ("y", (-0.1, 0.1), lambda p: p[:, 1]),
        ], SRC),
        Row("peg height at reset (half width)", (0.025, 0.025), lambda: tuple(samples(ENV_ID)["peg"][:, 2].aminmax()), SRC),
        Row("peg orientation at reset: largest angle from euler (pi/2, 0, 0)", 0.0, _start_orientation_error, SRC, tol=1e-3),
        Row("arm start qpos, mean of 320 resets", (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, math.pi / 4),
            lambda: tuple(samples(ENV_ID)["qpos"].mean(0).tolist()), BASE, tol=0.006),
        Row("arm start noise std (rad)", 0.02, lambda: float(samples(ENV_ID)["qpos"].std(0).mean()), BASE, tol=0.003),
        Row("success: upright tilted 0.079 / 0.081 rad", (True, False), lambda: standing([(0.079, 0.0), (0.081, 0.0)]), SRC),
        Row("success: centre 4.9 / 5.1 mm above half the length", (True, False), lambda: standing([(0.0, 0.0049), (0.0, 0.0051)]), SRC),
        Row("normalised dense reward at success (3 / 3)", 1.0, _reward_at_success, SRC),
        Row("extra obs, state modes", ("tcp_pose", "obj_pose"), lambda: extra_keys(ENV_ID, ObsMode.STATE_DICT), SRC),
        Row("extra obs, camera modes", ("tcp_pose",), lambda: extra_keys(ENV_ID, ObsMode.RGB), SRC),
        *camera_rows(ENV_ID, "base_camera", (0.3, 0, 0.6), (-0.1, 0, 0.1), 128, math.pi / 2, 0.01, 100, SRC),
        *camera_rows(ENV_ID, "render_camera", (0.6, 0.7, 0.6), (0.0, 0.0, 0.35), 512, 1.0, 0.01, 100, SRC),
        Row("is_grasping (dense reward)", "contact forces on both fingers, max angle 85 deg",
            lambda: "finger opening and pose (Agent.is_grasping)", SRC,
            deviation="is_grasping is judged from the fingers' opening and the object's place between them, for every task alike"),
    ],
)

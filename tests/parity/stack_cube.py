"""StackCube-v1 beside ManiSkill 3.0.1 (mani_skill/envs/tasks/tabletop/stack_cube.py)."""

from __future__ import annotations

import math

import torch

from envs.modes import ObsMode
from tests.parity import Row, Table
from tests.parity._cubes import (
    PANDA, RANGE_TOL, SAMPLES, at, bounds, camera, camera_rows, env, put, reward_at, robot_rows, sampled, table_rows,
    tilt, yaw_spread,
)
from tests.parity._tabletop import extra_keys

ID = "StackCube-v1"
SRC = "mani_skill/envs/tasks/tabletop/stack_cube.py"
SAMPLERS = "mani_skill/envs/utils/randomization/samplers.py"
XY_TOL = math.hypot(0.02, 0.02) + 0.005
# a lone panda_wristcam's start in the table scene: the hand turned to -pi/4
KEYFRAME = (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, -math.pi / 4, 0.04, 0.04)


def _e():
    return env(ID)


def _a(k: int):
    return sampled(ID)["actors"]["cubeA"][:, k]


def _b(k: int):
    return sampled(ID)["actors"]["cubeB"][:, k]


def _on_b(dx: float, dz: float) -> bool:
    e = _e()
    b = e.cubeB.pose()[:, :3].clone()
    return bool(put(e, {"cubeA": at(b + torch.tensor([dx, 0.0, 0.04 + dz]))})["is_cubeA_on_cubeB"].all())


def _static(lin: float, ang: float) -> bool:
    e = _e()
    put(e, {"cubeA": at(e.cubeB.pose()[:, :3] + torch.tensor([0.0, 0.0, 0.04]))})
    state = e.get_state_dict()
    state["actors"]["cubeA"][:, 7] = lin
    state["actors"]["cubeA"][:, 10] = ang
    e.set_state_dict(state)
    return bool(e.evaluate()["is_cubeA_static"].all())


def _reward_at_success() -> tuple[float, float]:
    e = _e()
    return reward_at(e, {"cubeA": at(e.cubeB.pose()[:, :3] + torch.tensor([0.0, 0.0, 0.04]))})


TABLE = Table(
    title=ID,
    env_id=ID,
    notes="cubeA's xy is a shared centre (uniform in [-0.1, 0.1]^2) plus an offset uniform in "
          "[-0.1, 0.1] x [-0.2, 0.2]; cubeB's offset is redrawn (up to 100 times) until the offsets lie more "
          "than 2 x (2 cm x sqrt 2 + 1 mm) apart. Ranges are over %d seeded resets." % SAMPLES,
    rows=[
        Row("max_episode_steps", 50, lambda: _e().max_episode_steps, SRC),
        Row("default robot", "panda_wristcam", lambda: _e().robot_uids, SRC),
        Row("actors in the env state", ("table-workspace", "cubeA", "cubeB"), lambda: tuple(_e().get_state_dict()["actors"]), SRC),
        Row("cube half sizes (m)", ((0.02,) * 3, (0.02,) * 3),
            lambda: tuple(tuple(round(float(v), 6) for v in g.bodies[0].collision_shapes[0].half_size) for g in (_e().cubeA, _e().cubeB)), SRC),
        Row("cubeA x range", (-0.2, 0.2), lambda: bounds(_a(0)), SRC, tol=0.04),
        Row("cubeA y range", (-0.3, 0.3), lambda: bounds(_a(1)), SRC, tol=0.04),
        Row("cubeB x range", (-0.2, 0.2), lambda: bounds(_b(0)), SRC, tol=0.04),
        Row("cubeB y range", (-0.3, 0.3), lambda: bounds(_b(1)), SRC, tol=0.04),
        Row("least cubeA-cubeB distance at reset > 2 x (0.02 sqrt 2 + 0.001)", True,
            lambda: bool(((_a(0) - _b(0)) ** 2 + (_a(1) - _b(1)) ** 2).sqrt().min() > 2 * (math.hypot(0.02, 0.02) + 0.001)), SAMPLERS),
        Row("cubes' z at reset", (0.02, 0.02), lambda: bounds(torch.cat((_a(2), _b(2)))), SRC),
        Row("cubeA yaw range (rad)", (0.0, 2 * math.pi), lambda: yaw_spread(sampled(ID)["actors"]["cubeA"][:, 3:]), SRC, tol=0.1),
        Row("cubeB yaw range (rad)", (0.0, 2 * math.pi), lambda: yaw_spread(sampled(ID)["actors"]["cubeB"][:, 3:]), SRC, tol=0.1),
        Row("cubes' tilt at reset", 0.0, lambda: max(tilt(sampled(ID)["actors"][n][:, 3:]) for n in ("cubeA", "cubeB")), SRC),
        *robot_rows(ID, 0, (-0.615, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0), KEYFRAME),
        *table_rows(ID),
        Row("on cubeB: xy offset within / past 0.02 sqrt 2 + 0.005 (m)", (True, False),
            lambda: (_on_b(XY_TOL - 1e-4, 0.0), _on_b(XY_TOL + 1e-4, 0.0)), SRC),
        Row("on cubeB: height 4 cm + 4.9 / 5.1 mm", (True, False), lambda: (_on_b(0.0, 0.0049), _on_b(0.0, 0.0051)), SRC),
        Row("on cubeB: height 4 cm - 4.9 / 5.1 mm", (True, False), lambda: (_on_b(0.0, -0.0049), _on_b(0.0, -0.0051)), SRC),
        Row("cubeA static: linear speed 0.009 / 0.011 m/s", (True, False), lambda: (_static(0.009, 0.0), _static(0.011, 0.0)), SRC),
        Row("cubeA static: angular speed 0.49 / 0.51 rad/s", (True, False), lambda: (_static(0.0, 0.49), _static(0.0, 0.51)), SRC),
        Row("is_cubeA_grasped: Panda.is_grasping (min_force N, max_angle deg)", (0.5, 85.0),
            lambda: _e().agent.is_grasping_actor.__defaults__[:2], PANDA),
        Row("info keys", ("is_cubeA_grasped", "is_cubeA_on_cubeB", "is_cubeA_static", "success"),
            lambda: tuple(k for k in _e().evaluate() if k != "fail"), SRC),
        Row("extra obs, state modes (in order)",
            ("tcp_pose", "cubeA_pose", "cubeB_pose", "tcp_to_cubeA_pos", "tcp_to_cubeB_pos", "cubeA_to_cubeB_pos"),
            lambda: extra_keys(ID, ObsMode.STATE), SRC),
        Row("extra obs, camera modes", ("tcp_pose",), lambda: extra_keys(ID, ObsMode.RGB), SRC),
        Row("state obs dim", 48, lambda: int(env(ID, 1, obs_mode="state").get_obs(env(ID, 1, obs_mode="state").evaluate()).shape[1]), SRC),
        Row("dense / normalised dense reward at success", (8.0, 1.0), _reward_at_success, SRC),
        *camera_rows(camera(ID, "base_camera"), "base_camera", (0.3, 0.0, 0.6), (-0.1, 0.0, 0.1), 128, 128, math.pi / 2, SRC),
        *camera_rows(camera(ID, "render_camera", render=True), "render_camera", (0.6, 0.7, 0.6), (0.0, 0.0, 0.35), 512, 512, 1.0, SRC),
    ],
)

"""StackPyramid-v1 beside ManiSkill 3.0.1 (mani_skill/envs/tasks/tabletop/stack_pyramid.py)."""

from __future__ import annotations

import math

import torch

from envs.modes import ObsMode
from tests.parity import Row, Table
from tests.parity._tabletop import extra_keys
from tests.parity._cubes import (
    PANDA, SAMPLES, at, bounds, camera, camera_rows, env, put, robot_rows, sampled, table_rows, tilt, yaw_spread,
)

ID = "StackPyramid-v1"
SRC = "mani_skill/envs/tasks/tabletop/stack_pyramid.py"
SAMPLERS = "mani_skill/envs/utils/randomization/samplers.py"
XY_TOL = math.hypot(0.04, 0.04) + 0.005
KEYFRAME = (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, -math.pi / 4, 0.04, 0.04)
CUBES = ("cubeA", "cubeB", "cubeC")
BESIDE = torch.tensor([0.042, 0.0, 0.0])  # cubeA beside cubeB, 2 mm apart
UP = torch.tensor([0.0, 0.0, 0.04])


def _e():
    return env(ID)


def _xy(name: str, k: int):
    return sampled(ID)["actors"][name][:, k]


def _least_distance() -> float:
    xy = [sampled(ID)["actors"][n][:, :2] for n in CUBES]
    return float(min((xy[i] - xy[j]).norm(dim=1).min() for i in range(3) for j in range(i)))


def _pyramid(a_off: torch.Tensor, c_off_a: torch.Tensor, vel: dict | None = None) -> bool:
    """Success with cubeA at cubeB + a_off and cubeC at cubeA + c_off_a (all unturned), the named
    cubes given (linear, angular) speeds along x."""
    e = _e()
    b = e.cubeB.pose()[:, :3].clone()
    a = b + a_off
    put(e, {"cubeB": at(b), "cubeA": at(a), "cubeC": at(a + c_off_a)})
    if vel:
        state = e.get_state_dict()
        for name, (lin, ang) in vel.items():
            state["actors"][name][:, 7] = lin
            state["actors"][name][:, 10] = ang
        e.set_state_dict(state)
    return bool(e.evaluate()["success"].all())


def _mid(dz: float = 0.0) -> torch.Tensor:
    return -BESIDE / 2 + UP + torch.tensor([0.0, 0.0, dz])


def _rewards() -> tuple[float, float]:
    e = _e()
    e.reset(seed=0)
    start = float(e.compute_dense_reward(e.evaluate())[0])
    _pyramid(BESIDE, _mid())
    return start, float(e.compute_dense_reward(e.evaluate())[0])


def _state_dim() -> int:
    e = env(ID, 1, obs_mode="state")
    return int(e.get_obs(e.evaluate()).shape[1])


# cubeC at the threshold from cubeA, 120 degrees round from cubeB (within reach of cubeB)
SLANT = torch.tensor([-0.5, math.sqrt(3) / 2, 0.0])

TABLE = Table(
    title=ID,
    env_id=ID,
    notes="Each cube's xy is uniform in [-0.1, 0.1] x [-0.2, 0.2], redrawn (up to 100 times) until it lies more "
          "than 2 x 2 cm x sqrt 2 from the cubes drawn before it. Ranges are over %d seeded resets; "
          "the draws themselves are ManiSkill's (see Seeded initial states)." % SAMPLES,
    rows=[
        Row("max_episode_steps", 250, lambda: _e().max_episode_steps, SRC),
        Row("default robot", "panda_wristcam", lambda: _e().robot_uids, SRC),
        Row("actors in the env state", ("table-workspace", *CUBES), lambda: tuple(_e().get_state_dict()["actors"]), SRC),
        Row("cube half sizes (m)", ((0.02,) * 3,) * 3,
            lambda: tuple(tuple(round(float(v), 6) for v in getattr(_e(), n).bodies[0].collision_shapes[0].half_size) for n in CUBES), SRC),
        *[Row(f"{n} x range", (-0.1, 0.1), lambda n=n: bounds(_xy(n, 0)), SRC, tol=0.01) for n in CUBES],
        *[Row(f"{n} y range", (-0.2, 0.2), lambda n=n: bounds(_xy(n, 1)), SRC, tol=0.01) for n in CUBES],
        Row("least distance between two cubes at reset > 2 x 0.02 sqrt 2", True,
            lambda: _least_distance() > 2 * math.hypot(0.02, 0.02), SAMPLERS),
        Row("cubes' z at reset", (0.02, 0.02), lambda: bounds(torch.cat([_xy(n, 2) for n in CUBES])), SRC),
        *[Row(f"{n} yaw range (rad)", (0.0, 2 * math.pi), lambda n=n: yaw_spread(sampled(ID)["actors"][n][:, 3:]), SRC, tol=0.15)
          for n in CUBES],
        Row("cubes' tilt at reset", 0.0, lambda: max(tilt(sampled(ID)["actors"][n][:, 3:]) for n in CUBES), SRC),
        *robot_rows(ID, 0, (-0.615, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0), KEYFRAME),
        *table_rows(ID),
        Row("a pyramid (A beside B, C on both) succeeds", True, lambda: _pyramid(BESIDE, _mid()), SRC),
        Row("A beside B: xy offset within / past 0.04 sqrt 2 + 0.005 (m)", (True, False),
            lambda: (_pyramid(torch.tensor([XY_TOL - 1e-4, 0, 0]), _mid() * torch.tensor([0.5, 1, 1])),
                     _pyramid(torch.tensor([XY_TOL + 1e-4, 0, 0]), _mid() * torch.tensor([0.5, 1, 1]))), SRC),
        Row("C on B: xy offset within / past 0.04 sqrt 2 + 0.005 (m)", (True, False),
            lambda: (_pyramid(BESIDE, UP + torch.tensor([XY_TOL - 1e-4 - 0.042, 0, 0])),
                     _pyramid(BESIDE, UP + torch.tensor([XY_TOL + 1e-4 - 0.042, 0, 0]))), SRC),
        Row("C on A: xy offset within / past 0.04 sqrt 2 + 0.005 (m)", (True, False),
            lambda: (_pyramid(BESIDE, UP + (XY_TOL - 1e-4) * SLANT), _pyramid(BESIDE, UP + (XY_TOL + 1e-4) * SLANT)), SRC),
        Row("C on A and B: height above them 2.01 / 1.99 cm", (True, False),
            lambda: (_pyramid(BESIDE, _mid(0.0201 - 0.04)), _pyramid(BESIDE, _mid(0.0199 - 0.04))), SRC),
        Row("C 2.01 cm below A and B still counts (|dz| > 2 cm)", True, lambda: _pyramid(BESIDE, _mid(-0.0201 - 0.04)), SRC),
        Row("cubeA static: linear speed 0.009 / 0.011 m/s", (True, False),
            lambda: (_pyramid(BESIDE, _mid(), {"cubeA": (0.009, 0.0)}), _pyramid(BESIDE, _mid(), {"cubeA": (0.011, 0.0)})), SRC),
        Row("cubeC static: angular speed 0.49 / 0.51 rad/s", (True, False),
            lambda: (_pyramid(BESIDE, _mid(), {"cubeC": (0.0, 0.49)}), _pyramid(BESIDE, _mid(), {"cubeC": (0.0, 0.51)})), SRC),
        Row("cubeB's speed is not judged (moving at 1 m/s)", True, lambda: _pyramid(BESIDE, _mid(), {"cubeB": (1.0, 1.0)}), SRC),
        Row("not grasped: Panda.is_grasping (min_force N, max_angle deg)", (0.5, 85.0),
            lambda: _e().agent.is_grasping_actor.__defaults__[:2], PANDA),
        Row("info keys", ("success",), lambda: tuple(k for k in _e().evaluate() if k != "fail"), SRC),
        Row("extra obs, state modes (in order)",
            ("tcp_pose", "cubeA_pose", "cubeB_pose", "cubeC_pose", "tcp_to_cubeA_pos", "tcp_to_cubeB_pos", "tcp_to_cubeC_pos",
             "cubeA_to_cubeB_pos", "cubeB_to_cubeC_pos", "cubeA_to_cubeC_pos"),
            lambda: extra_keys(ID, ObsMode.STATE), SRC),
        Row("extra obs, camera modes", ("tcp_pose",), lambda: extra_keys(ID, ObsMode.RGB), SRC),
        Row("state obs dim", 64, _state_dim, SRC),
        Row("reward: sparse only (at the start, at success)", (0.0, 1.0), _rewards, SRC),
        Row("observation cameras", ("base_camera", "hand_camera"), lambda: tuple(c.uid for c in _e()._default_sensor_configs()), SRC),
        *camera_rows(camera(ID, "base_camera"), "base_camera", (0.3, 0.0, 0.4), (-0.05, 0.0, 0.1), 128, 128, math.pi / 2, SRC),
        *camera_rows(camera(ID, "render_camera", render=True), "render_camera", (0.6, 0.7, 0.6), (0.0, 0.0, 0.35), 512, 512, 1.0, SRC),
    ],
)

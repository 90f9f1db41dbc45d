"""PlaceSphere-v1 beside ManiSkill 3.0.1 (mani_skill/envs/tasks/tabletop/place_sphere.py)."""

from __future__ import annotations

import math

import torch

from envs.modes import ObsMode
from tests.parity import Row, Table
from tests.parity._tabletop import extra_keys, shapes
from tests.parity._cubes import (
    COMMON, PANDA, RANGE_TOL, SAMPLES, at, bounds, camera, camera_rows, env, put, reward_at, robot_rows, sampled, table_rows, tilt,
)

ID = "PlaceSphere-v1"
SRC = "mani_skill/envs/tasks/tabletop/place_sphere.py"
KEYFRAME = (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, math.pi / 4, 0.04, 0.04)
REST_DZ = 0.02 + 0.0025  # the sphere's centre above the bin's when resting on its floor
# the bin's boxes (half size, centre in the bin's frame) as ManiSkill's _build_bin makes them
BIN = sorted([
    ((0.025, 0.025, 0.0025), (0.0, 0.0, 0.0)),
    ((0.0025, 0.025, 0.005), (-0.0225, 0.0, 0.0075)),
    ((0.0025, 0.025, 0.005), (0.0225, 0.0, 0.0075)),
    ((0.025, 0.0025, 0.005), (0.0, -0.0225, 0.0075)),
    ((0.025, 0.0025, 0.005), (0.0, 0.0225, 0.0075)),
])


def _e():
    return env(ID)


def _s(k: int):
    return sampled(ID)["actors"]["sphere"][:, k]


def _b(k: int):
    return sampled(ID)["actors"]["bin"][:, k]


def _on_bin(dx: float, dz: float) -> bool:
    e = _e()
    b = e.bin.pose()[:, :3].clone()
    return bool(put(e, {"sphere": at(b + torch.tensor([dx, 0.0, REST_DZ + dz]))})["is_obj_on_bin"].all())


def _static(lin: float, ang: float) -> bool:
    e = _e()
    put(e, {"sphere": at(e.goal_pos())})
    state = e.get_state_dict()
    state["actors"]["sphere"][:, 7] = lin
    state["actors"]["sphere"][:, 10] = ang
    e.set_state_dict(state)
    return bool(e.evaluate()["is_obj_static"].all())


def _reward_in_bin_not_grasped() -> float:
    """On the bin, not grasped, not static (turning at 1 rad/s), arm still: 6 + (16 + still + 1) / 3."""
    e = _e()
    put(e, {"sphere": at(e.goal_pos())})
    state = e.get_state_dict()
    state["actors"]["sphere"][:, 10] = 1.0
    e.set_state_dict(state)
    info = e.evaluate()
    return round(float(e.raw_dense_reward(info)[0]), 5)


def _state_dim() -> int:
    e = env(ID, 1, obs_mode="state")
    return int(e.get_obs(e.evaluate()).shape[1])


TABLE = Table(
    title=ID,
    env_id=ID,
    notes="Ranges are the least and greatest values over %d seeded resets; "
          "the draws themselves are ManiSkill's (see Seeded initial states)." % SAMPLES,
    rows=[
        Row("max_episode_steps", 50, lambda: _e().max_episode_steps, SRC),
        Row("default robot", "panda", lambda: _e().robot_uids, SRC),
        Row("actors in the env state", ("table-workspace", "sphere", "bin"), lambda: tuple(_e().get_state_dict()["actors"]), SRC),
        Row("sphere radius (m)", 0.02, lambda: round(float(_e().sphere.bodies[0].collision_shapes[0].radius), 6), SRC),
        Row("sphere: dynamic, density (kg/m^3)", (True, 1000.0),
            lambda: (not _e().sphere.bodies[0].kinematic, round(float(_e().sphere.bodies[0].collision_shapes[0].density), 3)), COMMON),
        Row("bin: kinematic", True, lambda: bool(_e().bin.bodies[0].kinematic), SRC),
        Row("bin collision boxes (half size, centre)", BIN, lambda: shapes(_e().bin), SRC),
        Row("sphere x range at reset", (-0.1, -0.05), lambda: bounds(_s(0)), SRC, tol=RANGE_TOL),
        Row("sphere y range at reset", (-0.1, 0.1), lambda: bounds(_s(1)), SRC, tol=RANGE_TOL),
        Row("sphere z at reset", (0.02, 0.02), lambda: bounds(_s(2)), SRC),
        Row("bin x range at reset", (0.0, 0.1), lambda: bounds(_b(0)), SRC, tol=RANGE_TOL),
        Row("bin y range at reset", (-0.1, 0.1), lambda: bounds(_b(1)), SRC, tol=RANGE_TOL),
        Row("bin z at reset", (0.0025, 0.0025), lambda: (round(float(_b(2).min()), 6), round(float(_b(2).max()), 6)), SRC),
        Row("sphere and bin turned at reset", (0.0, 0.0),
            lambda: tuple(max(tilt(sampled(ID)["actors"][n][:, 3:]), float(sampled(ID)["actors"][n][:, 6].abs().max()))
                          for n in ("sphere", "bin")), SRC),
        *robot_rows(ID, 0, (-0.615, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0), KEYFRAME),
        *table_rows(ID),
        Row("on the bin: xy offset 4.9 / 5.1 mm", (True, False), lambda: (_on_bin(0.0049, 0.0), _on_bin(0.0051, 0.0)), SRC),
        Row("on the bin: height radius + 2.5 mm, + 4.9 / 5.1 mm", (True, False),
            lambda: (_on_bin(0.0, 0.0049), _on_bin(0.0, 0.0051)), SRC),
        Row("on the bin: height radius + 2.5 mm, - 4.9 / 5.1 mm", (True, False),
            lambda: (_on_bin(0.0, -0.0049), _on_bin(0.0, -0.0051)), SRC),
        Row("sphere static: linear speed 0.009 / 0.011 m/s", (True, False), lambda: (_static(0.009, 0.0), _static(0.011, 0.0)), SRC),
        Row("sphere static: angular speed 0.49 / 0.51 rad/s", (True, False), lambda: (_static(0.0, 0.49), _static(0.0, 0.51)), SRC),
        Row("is_obj_grasped: Panda.is_grasping (min_force N, max_angle deg)", (0.5, 85.0),
            lambda: _e().agent.is_grasping_actor.__defaults__[:2], PANDA),
        Row("info keys", ("is_obj_grasped", "is_obj_on_bin", "is_obj_static", "success"),
            lambda: tuple(k for k in _e().evaluate() if k != "fail"), SRC),
        Row("extra obs, state modes (in order)", ("is_grasped", "tcp_pose", "bin_pos", "obj_pose", "tcp_to_obj_pos"),
            lambda: extra_keys(ID, ObsMode.STATE), SRC),
        Row("extra obs, camera modes (in order)", ("is_grasped", "tcp_pose", "bin_pos"), lambda: extra_keys(ID, ObsMode.RGB), SRC),
        Row("state obs dim", 39, _state_dim, SRC),
        Row("dense / normalised dense reward at success", (13.0, 1.0), lambda: reward_at(_e(), {"sphere": at(_e().goal_pos())}), SRC),
        Row("dense reward on the bin, not grasped, turning at 1 rad/s, arm still", round(6 + (16 + 1 - math.tanh(1.0) + 1) / 3, 5),
            _reward_in_bin_not_grasped, SRC),
        Row("observation cameras", ("base_camera",), lambda: tuple(c.uid for c in _e()._default_sensor_configs()), SRC),
        *camera_rows(camera(ID, "base_camera"), "base_camera", (0.3, 0.0, 0.2), (-0.1, 0.0, 0.0), 128, 128, math.pi / 2, SRC),
        *camera_rows(camera(ID, "render_camera", render=True), "render_camera", (0.6, -0.2, 0.2), (0.0, 0.0, 0.2), 512, 512, 1.0, SRC),
    ],
)

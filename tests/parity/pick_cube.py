"""PickCube-v1 beside ManiSkill 3.0.1 (mani_skill/envs/tasks/tabletop/pick_cube.py, its panda
config in pick_cube_cfgs.py)."""

from __future__ import annotations

import math

import torch

from envs.modes import ObsMode
from tests.parity import Row, Table
from tests.parity._cubes import (
    COMMON, PANDA, RANGE_TOL, SAMPLES, at, bounds, camera, camera_rows, env, put, reward_at, robot_rows, sampled,
    table_rows, tilt, yaw_spread,
)
from tests.parity._tabletop import extra_keys

ID = "PickCube-v1"
SRC = "mani_skill/envs/tasks/tabletop/pick_cube.py"
CFG = "mani_skill/envs/tasks/tabletop/pick_cube_cfgs.py"
KEYFRAME = (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, math.pi / 4, 0.04, 0.04)


def _e():
    return env(ID)


def _cube(k: int):
    return sampled(ID)["actors"]["cube"][:, k]


def _goal(k: int):
    return sampled(ID)["actors"]["goal_site"][:, k]


def _placed(distance: float) -> bool:
    e = _e()
    goal = e.goal_pos.clone()
    return bool(put(e, {"cube": at(goal + torch.tensor([distance, 0.0, 0.0]))})["is_obj_placed"].all())


def _static(speed: float) -> bool:
    e = _e()
    info = put(e, {"cube": at(e.goal_pos.clone())}, {e.agent.name: torch.tensor([speed] + [0.0] * (e.agent.dof - 1))})
    return bool(info["success"].all())


def _reward_at_success() -> tuple[float, float]:
    e = _e()
    return reward_at(e, {"cube": at(e.goal_pos.clone())})


TABLE = Table(
    title=ID,
    env_id=ID,
    notes="Ranges are the least and greatest values over %d seeded resets (uniform draws: within about 1 cm "
          "of the bounds); the draws themselves are ManiSkill's (see Seeded initial states)." % SAMPLES,
    rows=[
        Row("max_episode_steps", 50, lambda: _e().max_episode_steps, SRC),
        Row("default robot", "panda", lambda: _e().robot_uids, SRC),
        Row("actors in the env state", ("table-workspace", "cube", "goal_site"), lambda: tuple(_e().get_state_dict()["actors"]), SRC),
        Row("cube half size (m)", (0.02, 0.02, 0.02),
            lambda: tuple(round(float(v), 6) for v in _e().cube.bodies[0].collision_shapes[0].half_size), CFG),
        Row("goal_site: kinematic, collision shapes", (True, 0),
            lambda: (bool(_e().goal_site.bodies[0].kinematic), len(_e().goal_site.bodies[0].collision_shapes)), SRC),
        Row("goal_site hidden from observation cameras", True, lambda: "goal_site" in _e().world.hidden, SRC),
        Row("cube x range at reset", (-0.1, 0.1), lambda: bounds(_cube(0)), CFG, tol=RANGE_TOL),
        Row("cube y range at reset", (-0.1, 0.1), lambda: bounds(_cube(1)), CFG, tol=RANGE_TOL),
        Row("cube z at reset", (0.02, 0.02), lambda: bounds(_cube(2)), SRC),
        Row("cube yaw range at reset (rad)", (0.0, 2 * math.pi), lambda: yaw_spread(sampled(ID)["actors"]["cube"][:, 3:]), SRC, tol=0.1),
        Row("cube tilt at reset (|qx|, |qy| max)", 0.0, lambda: tilt(sampled(ID)["actors"]["cube"][:, 3:]), SRC),
        Row("goal x range", (-0.1, 0.1), lambda: bounds(_goal(0)), CFG, tol=RANGE_TOL),
        Row("goal y range", (-0.1, 0.1), lambda: bounds(_goal(1)), CFG, tol=RANGE_TOL),
        Row("goal height above the cube's centre", (0.0, 0.3),
            lambda: bounds(_goal(2) - _cube(2)), CFG, tol=RANGE_TOL),
        *robot_rows(ID, 0, (-0.615, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0), KEYFRAME),
        *table_rows(ID),
        Row("is_obj_placed at 2.49 / 2.51 cm from the goal (goal_thresh 0.025)", (True, False),
            lambda: (_placed(0.0249), _placed(0.0251)), CFG),
        Row("success with an arm joint at 0.19 / 0.21 rad/s (is_static(0.2))", (True, False),
            lambda: (_static(0.19), _static(0.21)), PANDA),
        Row("is_grasped: Panda.is_grasping (min_force N, max_angle deg)", (0.5, 85.0),
            lambda: (_e().agent.is_grasping_actor.__defaults__[0], _e().agent.is_grasping_actor.__defaults__[1]), PANDA),
        Row("extra obs, state modes (in order)",
            ("is_grasped", "tcp_pose", "goal_pos", "obj_pose", "tcp_to_obj_pos", "obj_to_goal_pos"),
            lambda: extra_keys(ID, ObsMode.STATE), SRC),
        Row("extra obs, camera modes (in order)", ("is_grasped", "tcp_pose", "goal_pos"), lambda: extra_keys(ID, ObsMode.RGB), SRC),
        Row("state obs dim", 42, lambda: int(env(ID, 1, obs_mode="state").get_obs(env(ID, 1, obs_mode="state").evaluate()).shape[1]), SRC),
        Row("dense / normalised dense reward at success", (5.0, 1.0), _reward_at_success, SRC),
        Row("observation cameras", ("base_camera",), lambda: tuple(c.uid for c in _e()._default_sensor_configs()), SRC),
        *camera_rows(camera(ID, "base_camera"), "base_camera", (0.3, 0.0, 0.6), (-0.1, 0.0, 0.1), 128, 128, math.pi / 2, CFG),
        *camera_rows(camera(ID, "render_camera", render=True), "render_camera", (0.6, 0.7, 0.6), (0.0, 0.0, 0.35), 512, 512, 1.0, CFG),
    ],
)

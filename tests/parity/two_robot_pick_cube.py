"""TwoRobotPickCube-v1 beside ManiSkill 3.0.1 (mani_skill/envs/tasks/tabletop/two_robot_pick_cube.py)."""

from __future__ import annotations

import math

import torch

from envs.modes import ObsMode
from tests.parity import Row, Table
from tests.parity._cubes import (
    PANDA, RANGE_TOL, SAMPLES, TABLE_SCENE, at, bounds, camera, camera_rows, env, put, reward_at, robot_rows, sampled,
    table_rows, tilt, yaw_spread,
)
from tests.parity._tabletop import extra_keys

ID = "TwoRobotPickCube-v1"
SRC = "mani_skill/envs/tasks/tabletop/two_robot_pick_cube.py"
KEYFRAME = (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, math.pi / 4, 0.04, 0.04)
S = math.sqrt(0.5)


def _e():
    return env(ID)


def _cube(k: int):
    return sampled(ID)["actors"]["cube"][:, k]


def _goal(k: int):
    return sampled(ID)["actors"]["goal_site"][:, k]


def _success(distance: float, right_speed: float = 0.0, left_speed: float = 0.0) -> bool:
    e = _e()
    speeds = {a.name: torch.tensor([s] + [0.0] * (a.dof - 1)) for a, s in zip(e.agents, (left_speed, right_speed))}
    info = put(e, {"cube": at(e.goal_pos.clone() + torch.tensor([distance, 0.0, 0.0]))}, speeds)
    return bool(info["success"].all())


def _reward_at_success() -> tuple[float, float]:
    e = _e()
    return reward_at(e, {"cube": at(e.goal_pos.clone())})


TABLE = Table(
    title=ID,
    env_id=ID,
    notes="Robot 0 is ManiSkill's left agent, robot 1 its right one. Ranges are over %d seeded resets." % SAMPLES,
    rows=[
        Row("max_episode_steps", 100, lambda: _e().max_episode_steps, SRC),
        Row("default robots", ("panda_wristcam", "panda_wristcam"), lambda: tuple(_e().robot_uids), SRC),
        Row("actors in the env state", ("table-workspace", "cube", "goal_site"), lambda: tuple(_e().get_state_dict()["actors"]), SRC),
        Row("cube half size (m)", (0.02, 0.02, 0.02),
            lambda: tuple(round(float(v), 6) for v in _e().cube.bodies[0].collision_shapes[0].half_size), SRC),
        Row("goal_site: kinematic, collision shapes, hidden", (True, 0, True),
            lambda: (bool(_e().goal_site.bodies[0].kinematic), len(_e().goal_site.bodies[0].collision_shapes), "goal_site" in _e().world.hidden), SRC),
        Row("cube x range", (-0.05, 0.05), lambda: bounds(_cube(0)), SRC, tol=RANGE_TOL),
        Row("cube y range", (-0.2, -0.1), lambda: bounds(_cube(1)), SRC, tol=RANGE_TOL),
        Row("cube z", (0.02, 0.02), lambda: bounds(_cube(2)), SRC),
        Row("cube yaw range (rad)", (0.0, 2 * math.pi), lambda: yaw_spread(sampled(ID)["actors"]["cube"][:, 3:]), SRC, tol=0.1),
        Row("cube tilt", 0.0, lambda: tilt(sampled(ID)["actors"]["cube"][:, 3:]), SRC),
        Row("goal x range", (-0.05, 0.05), lambda: bounds(_goal(0)), SRC, tol=RANGE_TOL),
        Row("goal y range", (0.1, 0.2), lambda: bounds(_goal(1)), SRC, tol=RANGE_TOL),
        Row("goal height above the cube's centre", (0.0, 0.3), lambda: bounds(_goal(2) - _cube(2)), SRC, tol=RANGE_TOL),
        *robot_rows(ID, 0, (0.0, -0.75, 0.0, S, 0.0, 0.0, S), KEYFRAME),
        *robot_rows(ID, 1, (0.0, 0.75, 0.0, S, 0.0, 0.0, -S), KEYFRAME),
        *table_rows(ID),
        Row("success at 2.49 / 2.51 cm from the goal", (True, False), lambda: (_success(0.0249), _success(0.0251)), SRC),
        Row("success with the right arm at 0.19 / 0.21 rad/s", (True, False),
            lambda: (_success(0.0, right_speed=0.19), _success(0.0, right_speed=0.21)), PANDA),
        Row("success with the left arm at 1 rad/s (only the right one must be still)", True,
            lambda: _success(0.0, left_speed=1.0), SRC),
        Row("info keys", ("success", "is_obj_placed", "is_right_arm_static"),
            lambda: tuple(k for k in _e().evaluate() if k != "fail"), SRC),
        Row("extra obs, state modes (in order)",
            ("left_arm_tcp", "right_arm_tcp", "cube_pose", "left_arm_tcp_to_cube_pos", "right_arm_tcp_to_cube_pos", "cube_to_goal_pos"),
            lambda: extra_keys(ID, ObsMode.STATE), SRC),
        Row("extra obs, camera modes", ("left_arm_tcp", "right_arm_tcp"), lambda: extra_keys(ID, ObsMode.RGB), SRC),
        Row("state obs dim (two pandas)", 66,
            lambda: int(env(ID, 1, obs_mode="state").get_obs(env(ID, 1, obs_mode="state").evaluate()).shape[1]), SRC),
        Row("dense / normalised dense reward at success", (21.0, 1.0), _reward_at_success, SRC),
        *camera_rows(camera(ID, "base_camera"), "base_camera", (1.0, 0.0, 0.75), (0.0, 0.0, 0.25), 128, 128, math.pi / 2, SRC),
        *camera_rows(camera(ID, "render_camera", render=True), "render_camera", (1.4, 0.8, 0.75), (0.0, 0.1, 0.1), 512, 512, 1.0, SRC),
    ],
)

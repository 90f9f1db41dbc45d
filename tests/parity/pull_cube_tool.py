"""PullCubeTool-v1 beside ManiSkill 3.0.1 (mani_skill/envs/tasks/tabletop/pull_cube_tool.py)."""

from __future__ import annotations

import math

import torch

from envs.modes import ObsMode
from tests.parity import Row, Table
from tests.parity._tabletop import extra_keys, shapes
from tests.parity._cubes import (
    RANGE_TOL, SAMPLES, at, bounds, camera, camera_rows, env, put, robot_rows, sampled, table_rows, tilt,
)

ID = "PullCubeTool-v1"
SRC = "mani_skill/envs/tasks/tabletop/pull_cube_tool.py"
PANDA = "mani_skill/agents/robots/panda/panda.py"
KEYFRAME = (0.0, math.pi / 8, 0.0, -5 * math.pi / 8, 0.0, 3 * math.pi / 4, math.pi / 4, 0.04, 0.04)
BASE = torch.tensor([-0.615, 0.0, 0.0])


def _e():
    return env(ID)


def _cube(k: int):
    return sampled(ID)["actors"]["cube"][:, k]


def _tool(k: int):
    return sampled(ID)["actors"]["l_shape_tool"][:, k]


def _signed_yaw(q: torch.Tensor) -> tuple[float, float]:
    yaw = 2 * torch.atan2(q[:, 3], q[:, 0])  # quaternions turned about z only
    return bounds(torch.remainder(yaw + math.pi, 2 * math.pi) - math.pi)


def _success_at(distance: float) -> bool:
    """The cube `distance` from the base in the table plane, along a diagonal."""
    e = _e()
    pos = BASE + torch.tensor([distance / math.sqrt(2), distance / math.sqrt(2), 0.02])
    return bool(put(e, {"cube": at(pos.expand(e.num_envs, 3))})["success"].all())


def _progress() -> tuple[float, float]:
    """cube_progress and cube_distance with the cube 0.3 m in front of the base's workspace centre."""
    e = _e()
    info = put(e, {"cube": at((BASE + torch.tensor([0.035 + 0.3, 0.0, 0.0])).expand(e.num_envs, 3))})
    return round(float(info["cube_progress"][0]), 5), round(float(info["cube_distance"][0]), 5)


def _reward(cube_x: float) -> float:
    """The dense reward with the cube at (cube_x, 0.1, 0.02) and the robot at its start (not grasping)."""
    e = _e()
    info = put(e, {"cube": at(torch.tensor([[cube_x, 0.1, 0.02]]).expand(e.num_envs, 3))})
    return float(e.raw_dense_reward(info)[0])


def _state_dim() -> int:
    e = env(ID, 1, obs_mode="state")
    return int(e.get_obs(e.evaluate()).shape[1])


TOOL = sorted([((0.1, 0.025, 0.025), (0.1, 0.0, 0.0)), ((0.025, 0.05, 0.025), (0.175, 0.05, 0.0))])

TABLE = Table(
    title=ID,
    env_id=ID,
    notes="Ranges are the least and greatest values over %d seeded resets; the draws themselves are ManiSkill's (see Seeded initial states). ManiSkill's normalised "
          "dense reward adds its success bonus to the staged terms, so it passes 1 on success; ours does alike." % SAMPLES,
    rows=[
        Row("max_episode_steps", 100, lambda: _e().max_episode_steps, SRC),
        Row("default robot", "panda", lambda: _e().robot_uids, SRC),
        Row("actors in the env state", ("table-workspace", "cube", "l_shape_tool"), lambda: tuple(_e().get_state_dict()["actors"]), SRC),
        Row("cube half size (m)", (0.02, 0.02, 0.02),
            lambda: tuple(round(float(v), 6) for v in _e().cube.bodies[0].collision_shapes[0].half_size), SRC),
        Row("tool collision boxes (half size, centre)", TOOL, lambda: shapes(_e().l_shape_tool), SRC),
        Row("tool densities: handle, hook (kg/m^3)", (500.0, 1000.0),
            lambda: tuple(float(s.density) for s in sorted(_e().l_shape_tool.bodies[0].collision_shapes, key=lambda s: s.local_pose.p[0])),
            SRC),
        Row("tool: dynamic", True, lambda: not _e().l_shape_tool.bodies[0].kinematic, SRC),
        Row("tool x range at reset", (-0.3, -0.1), lambda: bounds(_tool(0)), SRC, tol=RANGE_TOL),
        Row("tool y range at reset", (-0.3, -0.1), lambda: bounds(_tool(1)), SRC, tol=RANGE_TOL),
        Row("tool z at reset", (0.025, 0.025), lambda: bounds(_tool(2)), SRC),
        Row("tool turned at reset", 0.0, lambda: float(sampled(ID)["actors"]["l_shape_tool"][:, 4:].abs().max()), SRC),
        Row("cube x range at reset", (0.05, 0.25), lambda: bounds(_cube(0)), SRC, tol=RANGE_TOL),
        Row("cube y range at reset", (-0.25, 0.05), lambda: bounds(_cube(1)), SRC, tol=RANGE_TOL),
        Row("cube z at reset (let go 5 mm above the table)", (0.025, 0.025), lambda: bounds(_cube(2)), SRC),
        Row("cube yaw range at reset (rad)", (-math.pi / 6, math.pi / 6), lambda: _signed_yaw(sampled(ID)["actors"]["cube"][:, 3:]), SRC,
            tol=0.02),
        Row("cube tilt at reset", 0.0, lambda: tilt(sampled(ID)["actors"]["cube"][:, 3:]), SRC),
        *robot_rows(ID, 0, (-0.615, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0), KEYFRAME),
        *table_rows(ID),
        Row("success: cube 0.599 / 0.601 m from the base in the table plane", (True, False),
            lambda: (_success_at(0.599), _success_at(0.601)), SRC),
        Row("info keys", ("success", "success_once", "success_at_end", "cube_progress", "cube_distance", "reward"),
            lambda: tuple(k for k in _e().evaluate() if k != "fail"), SRC),
        Row("cube_progress, cube_distance 0.3 m from the workspace centre (base + 3.5 cm)",
            (round(1 - math.tanh(0.9), 5), 0.3), _progress, SRC, tol=1e-4,
            deviation="per env; ManiSkill reports their mean over the batch, which would make an env's info depend "
                      "on the others"),
        Row("dense reward: the cube past x = 0.5 (pushed away) costs", -2.0, lambda: round(_reward(0.55) - _reward(0.0), 5), SRC),
        Row("dense reward: success adds", 5.0, lambda: round(_reward(-0.3) - _reward(0.0), 5), SRC),
        Row("normalised dense reward: dense / 5", 5.0,
            lambda: round(float(_e().raw_dense_reward(_e().evaluate())[0] / _e().compute_dense_reward(_e().evaluate())[0]), 5), SRC),
        Row("extra obs, state modes (in order)", ("tcp_pose", "cube_pose", "tool_pose"), lambda: extra_keys(ID, ObsMode.STATE), SRC),
        Row("extra obs, camera modes", ("tcp_pose",), lambda: extra_keys(ID, ObsMode.RGB), SRC),
        Row("state obs dim", 39, _state_dim, SRC),
        Row("observation cameras", ("base_camera",), lambda: tuple(c.uid for c in _e()._default_sensor_configs()), SRC),
        *camera_rows(camera(ID, "base_camera"), "base_camera", (0.3, 0.0, 0.5), (-0.1, 0.0, 0.1), 128, 128, math.pi / 2, SRC),
        *camera_rows(camera(ID, "render_camera", render=True), "render_camera", (0.6, 0.7, 0.6), (0.0, 0.0, 0.35), 512, 512, 1.0, SRC),
    ],
)

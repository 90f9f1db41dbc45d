"""Measurements the drawing tasks' parity tables share (DrawTriangle-v1, DrawSVG-v1): the canvas,
the ink dots and the drawing rule, goal sampling, the success threshold, observations, cameras."""

from __future__ import annotations

import functools
import math

import torch

from envs.core.pose import quat_to_axis_angle
from envs.modes import ObsMode
from envs.tasks.common import TARGET_FLAT_Q
from tests.parity import Row
from tests.parity._cubes import bounds, camera, camera_rows, env

SRC_DIR = "mani_skill/envs/tasks/drawing"
STICK = "mani_skill/agents/robots/panda/panda_stick.py"
TABLE_SCENE = "mani_skill/utils/scene_builder/table/scene_builder.py"
N_SAMPLE, RESETS = 8, 16  # goal poses sampled over 8 envs x 16 seeded resets


@functools.lru_cache(maxsize=None)
def goal_samples(env_id: str) -> torch.Tensor:
    """(RESETS * N_SAMPLE, 7) goal poses at reset."""
    e = env(env_id, N_SAMPLE)
    out = []
    for s in range(RESETS):
        e.reset(seed=s * N_SAMPLE)
        out.append(e.goal.pose().clone())
    e.reset(seed=0)
    return torch.cat(out)


def extra_keys(env_id: str, mode: ObsMode) -> tuple[str, ...]:
    """The keys of obs["extra"] in obs mode `mode` (extras are state: no rendering needed)."""
    e = env(env_id)
    kept = e.obs_mode
    try:
        e.obs_mode = mode
        return tuple(e._extra_obs(e.evaluate()))
    finally:
        e.obs_mode = kept


def draws_at(env_id: str, height: float) -> tuple[bool, float]:
    """Whether the next dot lands on the canvas with the tip held `height` m up (TCP z), and the
    dot's z: the arm is put there by IK and one control step's drawing runs."""
    e = env(env_id, 1)
    e.reset(seed=0)
    agent = e.agent
    target = agent.tcp_pose_root().double()
    target[:, :2] = torch.tensor([0.5, 0.05], dtype=torch.float64)  # in front of the base, over the canvas
    target[:, 2] = height
    q = agent.arm_qpos.double()
    for _ in range(20):
        q = agent.kinematics.ik(target, q)
    agent.reset_to(q.float(), torch.arange(1))
    e._after_control_step()
    dot = e.dot_pos[0, 0].clone()
    e.reset(seed=0)
    return bool(dot[2] >= 0), round(float(dot[2]), 6)


def stray_dot(env_id: str, distance: float) -> bool:
    """Success with a dot on every reference point plus one more `distance` m out from the first
    vertex along the goal's outward direction there (its nearest reference point is that vertex),
    all set through set_state_dict."""
    e = env(env_id, 1)
    e.reset(seed=0)
    ref = e.reference_xy[0]  # (R, 2)
    vertex = e.points[0, 0, :2]
    outward = vertex - e.points[0, :, :2].mean(0)
    extra = vertex + distance * outward / outward.norm()
    xy = torch.cat((ref, extra[None]))
    state = e.get_state_dict()
    for k, p in enumerate(xy):
        s = state["actors"][f"dot_{k}"].clone()
        s[0, :3] = torch.tensor([float(p[0]), float(p[1]), 0.0215])
        state["actors"][f"dot_{k}"] = s
    e.set_state_dict(state)
    ok = bool(e.evaluate()["success"][0])
    e.reset(seed=0)
    return ok


def drawing_rows(env_id: str, src: str, steps: int, dots: int, threshold: float, state_dim: int, extra: tuple[str, ...]) -> list[Row]:
    e = lambda: env(env_id)  # noqa: E731
    canvas = lambda: e().canvas.bodies[0]  # noqa: E731
    goal = lambda: goal_samples(env_id)  # noqa: E731
    return [
        Row("max_episode_steps", steps, lambda: e().max_episode_steps, src),
        Row("robot (default, supported)", ("panda_stick", ("panda_stick",)), lambda: (e().robot_uids, e().supported_robots), src),
        Row("sim_freq, control_freq", (100, 20), lambda: (e().sim_freq, e().control_freq), src),
        Row("contact_offset, solver position / velocity iterations", (0.01, 4, 0),
            lambda: (e().world.physics.contact_offset, e().world.physics.solver_position_iterations,
                     e().world.physics.solver_velocity_iterations), src),
        Row("actors in the env state (first, dots, last)", ("table-workspace", dots, "goal_tri"),
            lambda: (lambda n: (n[0], sum(x.startswith("dot_") for x in n), n[-1]))(list(e().get_state_dict()["actors"])), src),
        Row("canvas: static box half size", (0.4, 0.6, 0.01),
            lambda: tuple(round(float(v), 6) for v in canvas().collision_shapes[0].half_size), src),
        Row("canvas: pose p", (-0.1, 0.0, 0.01), lambda: tuple(round(v, 6) for v in e().canvas.pose()[0, :3].tolist()), src),
        Row("dots: count, kinematic, collision shapes", (dots, True, 0),
            lambda: (len(e().dots), bool(e().dots[0].bodies[0].kinematic), len(e().dots[0].bodies[0].collision_shapes)), src),
        Row("unused dot pose at reset (p, q)", (0.0, 0.0, -0.003, *TARGET_FLAT_Q),
            lambda: tuple(round(v, 6) for v in e().get_state_dict()["actors"]["dot_0"][0, :7].tolist()), src, tol=1e-6),
        Row("a dot drawn with the tip at z 0.0279 / not at 0.0281 (canvas 0.02 + dot 0.003 + 0.005)", (True, False),
            lambda: (draws_at(env_id, 0.0279)[0], draws_at(env_id, 0.0281)[0]), src),
        Row("a drawn dot's centre z", 0.0215, lambda: draws_at(env_id, 0.025)[1], src, tol=1e-6),
        Row("goal actor: kinematic, collision shapes", (True, 0),
            lambda: (bool(e().goal.bodies[0].kinematic), len(e().goal.bodies[0].collision_shapes)), src),
        Row("goal x range at reset", (-0.1, -0.08), lambda: bounds(goal()[:, 0]), src, tol=0.004),
        Row("goal y range at reset", (-0.1, -0.08), lambda: bounds(goal()[:, 1]), src, tol=0.004),
        Row("goal z at reset", (0.01, 0.01), lambda: bounds(goal()[:, 2]), src),
        Row("goal yaw range at reset (rad)", (0.0, 2 * math.pi),
            lambda: bounds(torch.remainder(quat_to_axis_angle(goal()[:, 3:])[:, 2], 2 * math.pi)), src, tol=0.2),
        Row("goal quaternion: w >= 0 (matrix_to_quaternion standardises it)", True,
            lambda: bool((goal()[:, 3] >= 0).all()), "mani_skill/utils/geometry/rotation_conversions.py"),
        Row("vertices z (on the canvas)", 0.02, lambda: round(float(e().points[..., 2].mean()), 6), src),
        Row(f"success with a stray dot {threshold * 100 - 0.01:.2f} / {threshold * 100 + 0.01:.2f} cm from the goal (THRESHOLD {threshold})",
            (True, False), lambda: (stray_dot(env_id, threshold - 1e-4), stray_dot(env_id, threshold + 1e-4)), src),
        Row("robot start: rest keyframe without noise (robot_init_qpos_noise=0)",
            (0.0, math.pi / 8, 0.0, -math.pi * 5 / 8, 0.0, math.pi * 3 / 4, math.pi / 4),
            lambda: tuple(round(v, 6) for v in env(env_id, N_SAMPLE).agent.qpos.max(0).values.tolist()), TABLE_SCENE),
        Row("robot base pose p", (-0.615, 0.0, 0.0), lambda: tuple(round(v, 6) for v in e().agent.group.root_pose()[0, :3].tolist()), src),
        Row("action dim: pd_joint_delta_pos, pd_ee_delta_pos (no gripper)", (7, 3),
            lambda: (env(env_id, 1, control_mode="pd_joint_delta_pos").controller.action_dim,
                     env(env_id, 1, control_mode="pd_ee_delta_pos").controller.action_dim), STICK),
        Row("extra obs, state modes (in order)", extra, lambda: extra_keys(env_id, ObsMode.STATE), src),
        Row("extra obs, camera modes (in order)", ("tcp_pose",), lambda: extra_keys(env_id, ObsMode.RGB), src),
        Row("state obs dim", state_dim,
            lambda: int(env(env_id, 1, obs_mode="state").get_obs(env(env_id, 1, obs_mode="state").evaluate()).shape[1]), src),
        Row("reward (sparse: success) with and without success", (1.0, 0.0),
            lambda: (float(e().compute_dense_reward({"success": torch.ones(2, dtype=torch.bool)})[0]),
                     float(e().compute_dense_reward({"success": torch.zeros(2, dtype=torch.bool)})[0])), src),
        Row("observation cameras", ("base_camera",), lambda: tuple(c.uid for c in e()._default_sensor_configs()), src),
        *camera_rows(camera(env_id, "base_camera"), "base_camera", (0.3, 0.0, 0.8), (0.0, 0.0, 0.1), 320, 240, 1.2, src),
        *camera_rows(camera(env_id, "render_camera", render=True), "render_camera", (0.3, 0.0, 0.8), (0.0, 0.0, 0.1), 1280, 960, 1.2, src),
    ]


NOTES = (
    "ManiSkill counts the ink with one `draw_step` for all envs (a partial reset restarts every env's "
    "drawing) and pools its success test's dot check over all envs' dots (`torch.all(dots_dist[mask])`); "
    "ours keeps `draw_step` per env (task state) and tests each env's own dots: the same with one env. "
    "ManiSkill's success test updates running tensors as each dot is evaluated; ours keeps the same "
    "tallies as dots are placed and recomputes them from the dots' actor states after set_state, so "
    "restored states evaluate as recorded."
)

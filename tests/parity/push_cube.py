"""PushCube-v1 beside ManiSkill 3.0.1. `cube_goal_rows` also builds PullCube-v1's table: the two
tasks differ only in the values passed in."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import sapien
import torch
from transforms3d.quaternions import mat2quat

import envs  # noqa: F401  (registers)
from tests.parity import Row, Table
from tests.parity._cubes import at
from tests.parity._tabletop import put

RED = (194 / 255, 19 / 255, 22 / 255, 1.0)
WHITE = (1.0, 1.0, 1.0, 1.0)
COMMON = "mani_skill/utils/building/actors/common.py"
TABLE_SCENE = "mani_skill/utils/scene_builder/table/scene_builder.py"
RESETS = 24  # sampled resets of SAMPLE_ENVS envs each
SAMPLE_ENVS = 16


def _sign(q) -> np.ndarray:
    """q or -q (the same turn): the one whose first clearly non-zero component is positive."""
    q = np.asarray(q, float)
    lead = next(c for c in q if abs(c) > 1e-6)
    return q if lead > 0 else -q


def maniskill_look_at(eye, target) -> tuple[float, ...]:
    """ManiSkill's `sapien_utils.look_at` (x forward, y left, z up), sign as `_sign`."""
    eye, target = np.asarray(eye, float), np.asarray(target, float)
    forward = (target - eye) / np.linalg.norm(target - eye)
    left = np.cross([0.0, 0.0, 1.0], forward)
    left /= np.linalg.norm(left)
    q = mat2quat(np.stack((forward, left, np.cross(forward, left)), 1))
    return (*eye, *_sign(q))


@dataclass(frozen=True)
class Spec:
    """What ManiSkill 3.0.1 defines for one of the two tasks."""

    env_id: str
    source: str
    goal_dx: float  # the goal region's x offset from the cube
    success_max_z: float | None  # the cube's centre must stay below this (None: no height check)
    extra_state: tuple[str, ...]  # extra observation keys in state modes, in order
    extra_visual: tuple[str, ...]  # ... and in camera modes
    push_offset: tuple[float, float, float]  # the reward's TCP target, from the cube's centre
    z_term: bool  # the reward's cube-stays-on-the-table term
    max_reward: float
    base_eye_target: tuple[tuple[float, ...], tuple[float, ...]]


def _env(env_id: str, **kwargs):
    return gym.make(env_id, **kwargs).unwrapped


@functools.lru_cache(maxsize=None)
def _visual(env_id: str):
    """One rendering env (tiny images): for what only exists in visual worlds."""
    env = _env(env_id, obs_mode="rgb", sensor_configs={"width": 8, "height": 8})
    obs, _ = env.reset(seed=0)
    return env, obs


@functools.lru_cache(maxsize=None)
def _state_env(env_id: str):
    env = _env(env_id, obs_mode="state_dict")
    env.reset(seed=0)
    return env


@functools.lru_cache(maxsize=None)
def _samples(env_id: str) -> dict[str, torch.Tensor]:
    """Cube and goal poses and arm joint positions of RESETS x SAMPLE_ENVS seeded resets."""
    env = _env(env_id, num_envs=SAMPLE_ENVS)
    cube, goal, arm = [], [], []
    for r in range(RESETS):
        env.reset(seed=1000 + r * SAMPLE_ENVS)
        cube.append(env.cube.pose())
        goal.append(env.goal_region.pose())
        arm.append(env.agent.qpos[:, env.agent.arm])
    env.close()
    return {"cube": torch.cat(cube), "goal": torch.cat(goal), "arm_qpos": torch.cat(arm)}


def _put(env, actor: str, pos, quat=(1.0, 0.0, 0.0, 0.0)) -> None:
    """Actor at pos (N, 3) at rest in every env, through set_state_dict."""
    put(env, actor, at(torch.as_tensor(pos, dtype=torch.float32).expand(env.num_envs, 3), quat))


def _success_at(env, dx: float, z: float) -> bool:
    """Success with the goal region at the origin and the cube at (dx, 0, z)."""
    _put(env, "goal_region", [[0.0, 0.0, 1e-3]], (0.7071068, 0.0, 0.7071068, 0.0))
    _put(env, "cube", [[dx, 0.0, z]])
    return bool(env.evaluate()["success"][0])


def _bisect(inside, lo: float, hi: float) -> float:
    """The boundary between inside(lo) True and inside(hi) False, to 1e-7."""
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if inside(mid) else (lo, mid)
    return (lo + hi) / 2


def _height_limit(env_id: str):
    env = _state_env(env_id)
    if _success_at(env, 0.0, 1.0):
        return "none"
    return _bisect(lambda z: _success_at(env, 0.0, z), 0.02, 1.0)


def _never_fails(env_id: str) -> str:
    env = _state_env(env_id)
    for pos in ([0.0, 0.0, 0.02], [0.9, 0.9, 0.02], [0.0, 0.0, -0.5], [0.0, 0.0, 0.5]):
        _put(env, "cube", [pos])
        if env.evaluate()["fail"].any():
            return "fails somewhere"
    return "none"


def _rings(env_id: str, what: str) -> list:
    """The goal region's discs, in the order built: radius, half_length or base_color of each."""
    env, _ = _visual(env_id)
    body = env.goal_region.entities[0].find_component_by_type(sapien.render.RenderBodyComponent)
    return [getattr(s, what) if what != "base_color" else tuple(s.material.base_color) for s in body.render_shapes]


def _maniskill_dense(spec: Spec, tcp, cube, goal, success) -> torch.Tensor:
    """ManiSkill 3.0.1's dense reward of the task, from its definition."""
    to_push = (cube + torch.tensor(spec.push_offset) - tcp).norm(dim=1)
    reached = (to_push < 0.01).float()
    place = 1 - torch.tanh(5 * (cube[:, :2] - goal[:, :2]).norm(dim=1))
    reward = 1 - torch.tanh(5 * to_push) + place * reached
    if spec.z_term:
        reward = reward + place * (1 - torch.tanh(5 * (cube[:, 2] - 0.02).abs())) * reached
    return torch.where(success, torch.full_like(reward, spec.max_reward), reward)


def _reward_gap(spec: Spec, normalised: bool) -> float:
    """Max |ours - ManiSkill's| dense (or normalised dense) reward over sampled states: cubes
    near the TCP's push pose (half within the 1 cm that turns the placing term on), at heights
    up to 6 cm over the table, goals up to 0.2 m away (some states succeed)."""
    n = 64
    env = _env(spec.env_id, num_envs=n)
    env.reset(seed=3)
    g = torch.Generator().manual_seed(0)
    tcp = env.agent.tcp_pose[:, :3]
    near = torch.rand(n, 1, generator=g) < 0.5
    jitter = (torch.rand(n, 3, generator=g) - 0.5) * torch.where(near, 0.01, 0.1)
    cube = tcp - torch.tensor(spec.push_offset) + jitter
    cube[:, 2] = torch.where(near[:, 0], cube[:, 2], 0.02 + 0.06 * torch.rand(n, generator=g))
    goal = cube + torch.cat(((torch.rand(n, 2, generator=g) - 0.5) * 0.4, torch.zeros(n, 1)), 1)
    goal[:, 2] = 1e-3
    _put(env, "cube", cube)
    _put(env, "goal_region", goal, (0.7071068, 0.0, 0.7071068, 0.0))
    info = env.evaluate()
    tcp, cube, goal = env.agent.tcp_pose[:, :3], env.cube.pose()[:, :3], env.goal_pos
    want = _maniskill_dense(spec, tcp, cube, goal, info["success"])
    reached = (cube + torch.tensor(spec.push_offset) - tcp).norm(dim=1) < 0.01
    assert reached.any() and (~reached).any() and info["success"].any() and (~info["success"]).any()
    ours = env.compute_dense_reward(info) if normalised else env.dense_reward(info)
    env.close()
    return float((ours - (want / spec.max_reward if normalised else want)).abs().max())


def _reward_far(spec: Spec) -> float:
    """Dense reward with the TCP 0.1 m (in y) from the push pose and the goal 0.5 m from the cube."""
    env = _state_env(spec.env_id)
    tcp = env.agent.tcp_pose[:, :3]
    cube = tcp - torch.tensor(spec.push_offset) + torch.tensor([0.0, 0.1, 0.0])
    _put(env, "cube", cube)
    _put(env, "goal_region", cube + torch.tensor([0.5, 0.0, 0.0]), (0.7071068, 0.0, 0.7071068, 0.0))
    return float(env.dense_reward(env.evaluate())[0])


def _reward_on_success(spec: Spec) -> tuple[float, float]:
    env = _state_env(spec.env_id)
    _success_at(env, 0.0, 0.02)
    info = env.evaluate()
    return float(env.dense_reward(info)[0]), float(env.compute_dense_reward(info)[0])


def _camera(env_id: str, uid: str, render: bool = False):
    settings = _state_env(env_id).sensor_settings
    return next(c for c in (settings.render_cameras if render else settings.cameras) if c.uid == uid)


def _canonical(pose) -> tuple[float, ...]:
    return (*pose[:3], *_sign(pose[3:]))


def _keys_and_sizes(extra: dict) -> tuple[str, ...]:
    return tuple(f"{k}:{v.shape[-1]}" for k, v in extra.items())


def cube_goal_rows(spec: Spec) -> list[Row]:
    eid, src = spec.env_id, spec.source
    s = functools.partial(_samples, eid)
    radius = 0.1
    names = ("tcp_pose:7", "goal_pos:3", "obj_pose:7")
    size = dict(n.split(":") for n in names)
    flat_q = (math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0)  # euler2quat(0, pi/2, 0)
    return [
        # the scene
        Row("max_episode_steps", 50, lambda: gym.spec(eid).max_episode_steps, src),
        Row("cube half size (m, its collision box)", (0.02, 0.02, 0.02),
            lambda: tuple(_state_env(eid).cube.bodies[0].collision_shapes[0].half_size), src),
        Row("cube colour (RGBA)", (12 / 255, 42 / 255, 160 / 255, 1.0),
            lambda: tuple(_visual(eid)[0].cube.entities[0].find_component_by_type(sapien.render.RenderBodyComponent)
                          .render_shapes[0].material.base_color), src),
        Row("task actors in the env state (besides the table scene)", ("cube", "goal_region"),
            lambda: tuple(k for k in sorted(_state_env(eid).get_state_dict()["actors"]) if not k.startswith("table")), src),
        Row("goal_region body: type, collision shapes", ("kinematic", 0),
            lambda: ("kinematic" if _state_env(eid).goal_region.bodies[0].kinematic else "dynamic",
                     len(_state_env(eid).goal_region.bodies[0].collision_shapes)), src),
        Row("goal_region disc radii (m), rim first", [radius * (5 - k) / 5 for k in range(5)],
            lambda: _rings(eid, "radius"), COMMON),
        Row("goal_region disc half thicknesses (m)", [1e-5 / 2 + k * 1e-5 for k in range(5)],
            lambda: _rings(eid, "half_length"), COMMON, tol=1e-9),
        Row("goal_region disc colours (RGBA): red, white, red, white, red", [RED, WHITE, RED, WHITE, RED],
            lambda: _rings(eid, "base_color"), COMMON),
        Row("goal_region hidden from observation cameras", False, lambda: "goal_region" in _visual(eid)[0].world.hidden,
            src + " (the hiding line is commented out)"),
        # randomisation
        Row("cube x at reset (min, max over 384 resets)", (-0.1, 0.1),
            lambda: (float(s()["cube"][:, 0].min()), float(s()["cube"][:, 0].max())), src, tol=0.005),
        Row("cube y at reset (min, max)", (-0.1, 0.1),
            lambda: (float(s()["cube"][:, 1].min()), float(s()["cube"][:, 1].max())), src, tol=0.005),
        Row("cube z at reset (min, max)", (0.02, 0.02),
            lambda: (float(s()["cube"][:, 2].min()), float(s()["cube"][:, 2].max())), src),
        Row("cube orientation at reset (largest turn from identity, rad)", 0.0,
            lambda: float(2 * torch.acos(s()["cube"][:, 3].abs().clamp(max=1)).max()), src, tol=1e-3),
        Row("goal_region - cube at reset: x (min, max)", (spec.goal_dx, spec.goal_dx),
            lambda: (float((s()["goal"][:, 0] - s()["cube"][:, 0]).min()), float((s()["goal"][:, 0] - s()["cube"][:, 0]).max())),
            src, tol=1e-5),
        Row("goal_region - cube at reset: y (min, max)", (0.0, 0.0),
            lambda: (float((s()["goal"][:, 1] - s()["cube"][:, 1]).min()), float((s()["goal"][:, 1] - s()["cube"][:, 1]).max())),
            src, tol=1e-6),
        Row("goal_region z at reset (min, max)", (1e-3, 1e-3),
            lambda: (float(s()["goal"][:, 2].min()), float(s()["goal"][:, 2].max())), src),
        Row("goal_region orientation at reset (every reset)", flat_q,
            lambda: tuple(s()["goal"][0, 3:].tolist()) if (s()["goal"][:, 3:] - s()["goal"][:1, 3:]).abs().max() < 1e-7 else "varies",
            src),
        Row("arm joint noise at reset (std per joint, mean over joints, rad)", 0.02,
            lambda: float(s()["arm_qpos"].std(dim=0).mean()), TABLE_SCENE, tol=0.002),
        # success and fail
        Row("success radius (bisected planar distance, m)", radius,
            lambda: _bisect(lambda d: _success_at(_state_env(eid), d, 0.02), 0.0, 0.5), src, tol=1e-5),
        Row("success with the cube exactly at the radius", False, lambda: _success_at(_state_env(eid), radius, 0.02), src),
        Row("success height limit (bisected cube centre z, m)",
            spec.success_max_z if spec.success_max_z is not None else "none", lambda: _height_limit(eid), src, tol=1e-5),
        Row("fail condition", "none", lambda: _never_fails(eid), src),
        Row("evaluate() keys", ("success",), lambda: tuple(sorted(_state_env(eid).evaluate())), src,
            deviation="every task here reports a fail flag, which step() reads; it is always False here"),
        # observations
        Row("extra observations, state modes (key:size, in order)", tuple(f"{k}:{size[k]}" for k in spec.extra_state),
            lambda: _keys_and_sizes(_state_env(eid).get_obs(_state_env(eid).evaluate())["extra"]), src),
        Row("extra observations, camera modes (key:size, in order)", tuple(f"{k}:{size[k]}" for k in spec.extra_visual),
            lambda: _keys_and_sizes(_visual(eid)[1]["extra"]), src),
        # reward
        Row("dense reward on success", spec.max_reward, lambda: _reward_on_success(spec)[0], src),
        Row("normalised dense reward on success", 1.0, lambda: _reward_on_success(spec)[1], src),
        Row("dense reward, TCP 0.1 m from the push pose", 1 - math.tanh(0.5), lambda: _reward_far(spec), src, tol=1e-5),
        Row("dense reward vs ManiSkill's terms on 64 sampled states (max |difference|)", 0.0,
            lambda: _reward_gap(spec, normalised=False), src, tol=1e-5),
        Row("normalised dense reward vs ManiSkill's (max |difference|)", 0.0,
            lambda: _reward_gap(spec, normalised=True), src, tol=1e-5),
        # cameras
        Row("scene observation cameras", ("base_camera",),
            lambda: tuple(c.uid for c in _state_env(eid).sensor_settings.cameras if c.mount is None), src),
        Row("base_camera pose (x, y, z, qw, qx, qy, qz)", maniskill_look_at(*spec.base_eye_target),
            lambda: _canonical(_camera(eid, "base_camera").pose), src, tol=1e-5),
        Row("base_camera (width, height, fov, near, far)", (128, 128, math.pi / 2, 0.01, 100.0),
            lambda: (lambda c: (c.width, c.height, c.fov, c.near, c.far))(_camera(eid, "base_camera")), src),
        Row("render_camera pose", maniskill_look_at((0.6, 0.7, 0.6), (0.0, 0.0, 0.35)),
            lambda: _canonical(_camera(eid, "render_camera", render=True).pose), src, tol=1e-5),
        Row("render_camera (width, height, fov, near, far)", (512, 512, 1.0, 0.01, 100.0),
            lambda: (lambda c: (c.width, c.height, c.fov, c.near, c.far))(_camera(eid, "render_camera", render=True)), src),
    ]


SPEC = Spec(
    env_id="PushCube-v1",
    source="mani_skill/envs/tasks/tabletop/push_cube.py",
    goal_dx=0.2,
    success_max_z=0.02 + 5e-3,
    extra_state=("tcp_pose", "goal_pos", "obj_pose"),
    extra_visual=("tcp_pose",),
    push_offset=(-0.025, 0.0, 0.0),
    z_term=True,
    max_reward=4.0,
    base_eye_target=((0.3, 0.0, 0.6), (-0.1, 0.0, 0.1)),
)

TABLE = Table(
    title=SPEC.env_id,
    env_id=SPEC.env_id,
    rows=cube_goal_rows(SPEC),
    notes="Ranges are measured over 384 seeded resets; the draws themselves are ManiSkill's (see Seeded initial states).",
)

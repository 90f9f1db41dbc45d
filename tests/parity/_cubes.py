"""Measurements the tabletop tasks' parity tables share: envs built once, resets sampled over many
seeds, the table scene, cameras and boundary checks through set_state_dict."""

from __future__ import annotations

import functools
import math

import gymnasium as gym
import numpy as np
import torch

import envs  # noqa: F401  (registers)
from envs.core.pose import quat_apply, quat_to_axis_angle
from envs.tasks.common import TABLE_SCENE_QPOS
from tests.parity import Row
from tests.parity._tabletop import put as place

TABLE_SCENE = "mani_skill/utils/scene_builder/table/scene_builder.py"
COMMON = "mani_skill/utils/building/actors/common.py"
PANDA = "mani_skill/agents/robots/panda/panda.py"
SAMPLES = 256  # envs reset once with seeds 0..SAMPLES-1: distribution bounds within ~1 cm
RANGE_TOL = 0.01


@functools.lru_cache(maxsize=None)
def env(env_id: str, n: int = 2, **kwargs):
    """An unwrapped env of n envs, reset with seed 0 (kept for the tables' lifetime)."""
    e = gym.make(env_id, num_envs=n, **kwargs).unwrapped
    e.reset(seed=0)
    return e


@functools.lru_cache(maxsize=None)
def sampled(env_id: str) -> dict:
    """Initial states of SAMPLES seeded resets: actor poses and robot qpos."""
    e = env(env_id, SAMPLES)
    e.reset(seed=0)
    return {
        "actors": {name: g.pose().clone() for name, g in e.world.actors.items()},
        "qpos": [a.qpos.clone() for a in e.agents],
        # the table scene's start: a lone robot's own table-scene joints, else its rest keyframe
        "keyframe": [torch.tensor(TABLE_SCENE_QPOS.get(a.spec.uid, a.spec.rest_qpos) if len(e.agents) == 1 else a.spec.rest_qpos)
                     for a in e.agents],
        "arm": [a.arm for a in e.agents],
    }


def bounds(values: torch.Tensor) -> tuple[float, float]:
    return (round(float(values.min()), 3), round(float(values.max()), 3))


def yaw_spread(quat: torch.Tensor) -> tuple[float, float]:
    """(min, max) of the yaw in [0, 2 pi) of (N, 4) quaternions turned about z only."""
    yaw = torch.remainder(quat_to_axis_angle(quat)[:, 2], 2 * math.pi)
    return bounds(yaw)


def tilt(quat: torch.Tensor) -> float:
    """The largest turn about x or y in (N, 4) quaternions (0: only yaw)."""
    return float(quat[:, 1:3].abs().max())


def forward(pose) -> tuple[float, ...]:
    """The unit viewing direction (camera x) of a pose (x, y, z, qw, qx, qy, qz)."""
    q = torch.tensor(pose[3:], dtype=torch.float32)[None]
    return tuple(round(v, 6) for v in quat_apply(q, torch.tensor([[1.0, 0.0, 0.0]]))[0].tolist())


def unit(eye, target) -> tuple[float, ...]:
    d = np.asarray(target, float) - np.asarray(eye, float)
    return tuple(round(float(v), 6) for v in d / np.linalg.norm(d))


def camera_rows(get, uid: str, eye, target, width: int, height: int, fov: float, source: str) -> list[Row]:
    """Rows of one camera: `get()` returns our CameraConfig."""
    return [
        Row(f"{uid} eye (look_at)", tuple(eye), lambda: tuple(round(v, 6) for v in get().pose[:3]), source),
        Row(f"{uid} viewing direction (look_at target - eye)", unit(eye, target), lambda: forward(get().pose), source, tol=1e-5),
        Row(f"{uid} width x height", (width, height), lambda: (get().width, get().height), source),
        Row(f"{uid} fov (rad)", fov, lambda: get().fov, source),
        Row(f"{uid} near, far", (0.01, 100), lambda: (get().near, get().far), source),
    ]


def camera(env_id: str, uid: str, render: bool = False):
    e = env(env_id)
    configs = e._default_render_camera_configs() if render else e._default_sensor_configs()
    return lambda: next(c for c in configs if c.uid == uid)


def table_rows(env_id: str) -> list[Row]:
    """The table scene as TableSceneBuilder builds it."""

    def table():
        return env(env_id).world.actors["table-workspace"]

    def box():
        shape = table().bodies[0].collision_shapes[0]
        return tuple(round(float(v), 6) for v in shape.half_size)

    def box_local_z():
        return round(float(table().bodies[0].collision_shapes[0].local_pose.p[2]), 6)

    def ground_top():
        g = env(env_id).world.actors["ground"]
        shape = g.bodies[0].collision_shapes[0]
        return round(float(g.pose()[0, 2]) + float(shape.half_size[2]), 5)

    return [
        Row("table actor (name, in the env state)", ("table-workspace", True),
            lambda: ("table-workspace", "table-workspace" in env(env_id).get_state_dict()["actors"]), TABLE_SCENE),
        Row("table body", "kinematic", lambda: "kinematic" if getattr(table().bodies[0], "kinematic", False) else "static", TABLE_SCENE,
            deviation="static, and in the env state alike: a kinematic table made restored states replay differently "
                      "in SAPIEN's CPU PhysX"),
        Row("table collision box half size (table frame)", (1.209, 0.6045, 0.45982145), box, TABLE_SCENE),
        Row("table collision box centre z (table frame)", 0.45982145, box_local_z, TABLE_SCENE),
        Row("table pose p", (-0.12, 0.0, -0.9196429), lambda: tuple(round(v, 6) for v in table().pose()[0, :3].tolist()), TABLE_SCENE),
        Row("table pose q (a quarter turn about z)", (0.7071068, 0.0, 0.0, 0.7071068),
            lambda: tuple(round(v, 6) for v in table().pose()[0, 3:].tolist()), TABLE_SCENE, tol=1e-6),
        Row("table top z", 0.0, lambda: round(float(table().pose()[0, 2]) + 2 * box_local_z(), 6), TABLE_SCENE),
        Row("ground altitude", -0.919643, ground_top, TABLE_SCENE, tol=1e-5,
            deviation="a 4 x 4 m box per env, its top at the ground's altitude: all envs share one PhysX scene, "
                      "where an infinite plane would pair with every body"),
    ]


def robot_rows(env_id: str, k: int, root: tuple, keyframe: tuple, source: str = TABLE_SCENE) -> list[Row]:
    """Robot k's base pose and its start: keyframe + N(0, 0.02) per arm joint, fingers open."""

    def start():
        s = sampled(env_id)
        return s["qpos"][k], s["keyframe"][k], s["arm"][k]

    def mean():
        q, key, arm = start()
        return tuple(round(v, 3) for v in q.mean(0).tolist())

    def noise():
        q, key, arm = start()
        return round(float((q[:, arm] - key[arm]).std()), 3)

    def pose():
        a = env(env_id).agents[k]
        return tuple(round(v, 6) for v in a.group.root_pose()[0].tolist())

    return [
        Row(f"robot {k} base pose (p, q)", root, pose, source, tol=1e-5),
        Row(f"robot {k} start qpos (mean over {SAMPLES} resets)", keyframe, mean, source, tol=0.006),
        Row(f"robot {k} start noise: std of arm joints (rad)", 0.02, noise, source, tol=0.002),
        Row(f"robot {k} start fingers", (0.04, 0.04), lambda: tuple(round(v, 4) for v in start()[0][:, -2:].max(0).values.tolist()), source),
    ]


def put(e, actors: dict, qvel: dict | None = None) -> dict:
    """Reset e with seed 0, set the named actors' poses (N, 7) at rest (and robots' qvel) through
    set_state_dict, and evaluate."""
    e.reset(seed=0)
    for name, pose in actors.items():
        place(e, name, pose)
    state = e.get_state_dict()
    for name, v in (qvel or {}).items():
        s = state["articulations"][name].clone()
        d = e.world.articulations[name].dof
        s[:, 13 + d : 13 + 2 * d] = v
        state["articulations"][name] = s
    e.set_state_dict(state)
    return e.evaluate()


def reward_at(e, actors: dict) -> tuple[float, float]:
    """Env 0's dense and normalised dense reward with the actors placed as `put` places them."""
    info = put(e, actors)
    return float(e.raw_dense_reward(info)[0]), float(e.compute_dense_reward(info)[0])


def at(pos: torch.Tensor, quat=(1.0, 0.0, 0.0, 0.0)) -> torch.Tensor:
    return torch.cat((pos, torch.tensor(quat).expand(len(pos), 4)), 1)

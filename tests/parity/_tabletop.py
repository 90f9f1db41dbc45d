"""Measuring helpers shared by the parity tables of the peg and charger tasks: a built env per
id, values sampled over many seeded resets, cameras, and placing an actor through
set_state_dict (for the success-threshold rows and tests/test_peg_tasks.py)."""

from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

import gymnasium as gym
import numpy as np
import torch

import envs  # noqa: F401  (registers the tasks)
from envs.core.pose import quat_apply
from envs.modes import ObsMode
from tests.parity import Row

N_ENVS = 8
N_RESETS = 40  # x N_ENVS samples per distribution


@functools.lru_cache(maxsize=None)
def env(env_id: str):
    return gym.make(env_id, num_envs=N_ENVS, obs_mode="state_dict").unwrapped


@functools.lru_cache(maxsize=None)
def samples(env_id: str) -> dict[str, torch.Tensor]:
    """Every actor's pose (R, 7) and the arm's qpos (R, n) over N_RESETS seeded resets."""
    base = env(env_id)
    out: dict[str, list] = {}
    for s in range(N_RESETS):
        base.reset(seed=1000 + s * N_ENVS)
        state = base.get_state_dict()
        for name, v in state["actors"].items():
            out.setdefault(name, []).append(v[:, :7].clone())
        out.setdefault("qpos", []).append(base.agent.qpos[:, base.agent.arm].clone())
    base.reset(seed=0)
    return {k: torch.cat(v) for k, v in out.items()}


def yaw(q: torch.Tensor) -> torch.Tensor:
    """(R,) yaw of quaternions (R, 4) turned about z only, in [0, 2 pi)."""
    x = quat_apply(q, torch.tensor([1.0, 0.0, 0.0]).expand(len(q), 3))
    return torch.atan2(x[:, 1], x[:, 0]) % (2 * math.pi)


def span(values: torch.Tensor, digits: int = 3) -> tuple[float, float]:
    return (round(float(values.min()), digits), round(float(values.max()), digits))


def range_rows(env_id: str, actor: str, what: str, bounds: Sequence[tuple[str, tuple[float, float], Callable]], source: str) -> list[Row]:
    """Rows comparing ManiSkill's uniform bounds with the span of our samples (within 1 cm, or
    2 % of a wider range: N_ENVS x N_RESETS draws come that close to both ends)."""
    rows = []
    for name, lo_hi, pick in bounds:
        tol = max(0.01, 0.02 * (lo_hi[1] - lo_hi[0]))
        rows.append(
            Row(f"{what} {name} range (min, max of {N_ENVS * N_RESETS} resets)", lo_hi,
                lambda pick=pick: span(pick(samples(env_id)[actor])), source, tol=tol)
        )
    return rows


def camera(env_id: str, uid: str):
    settings = env(env_id).sensor_settings
    for c in (*settings.cameras, *settings.render_cameras):
        if c.uid == uid:
            return c
    raise KeyError(uid)


def camera_rows(env_id: str, uid: str, eye, target, size: int, fov: float, near: float, far: float,
                source: str, mount: str | None = None) -> list[Row]:
    """A camera placed by look_at(eye, target): its position, viewing direction, size, fov,
    clipping planes (and mount)."""
    forward = np.subtract(target, eye, dtype=float)
    forward = tuple(forward / np.linalg.norm(forward))

    def looks(c) -> tuple:
        q = torch.tensor(c.pose[3:])[None]
        return tuple(quat_apply(q, torch.tensor([[1.0, 0.0, 0.0]]))[0].tolist())

    rows = [
        Row(f"{uid} position", tuple(eye), lambda: camera(env_id, uid).pose[:3], source),
        Row(f"{uid} viewing direction", forward, lambda: looks(camera(env_id, uid)), source),
        Row(f"{uid} width x height", (size, size), lambda: (camera(env_id, uid).width, camera(env_id, uid).height), source),
        Row(f"{uid} fov (rad)", fov, lambda: camera(env_id, uid).fov, source),
        Row(f"{uid} near, far (m)", (near, far), lambda: (camera(env_id, uid).near, camera(env_id, uid).far), source),
    ]
    if mount is not None:
        rows.append(Row(f"{uid} mount", mount, lambda: camera(env_id, uid).mount, source))
    return rows


def extra_keys(env_id: str, mode: ObsMode) -> tuple[str, ...]:
    """The keys of obs["extra"] in obs mode `mode` (no rendering needed: extras are state)."""
    base = env(env_id)
    kept = base.obs_mode
    try:
        base.obs_mode = mode
        return tuple(base._extra_obs(base.evaluate()))
    finally:
        base.obs_mode = kept


def put(base, actor: str, pose: torch.Tensor) -> None:
    """Place `actor` at pose (N, 7) at rest in every env, through set_state_dict."""
    state = base.get_state_dict()
    s = state["actors"][actor].clone()
    s[:, :7] = pose
    s[:, 7:] = 0.0
    state["actors"][actor] = s
    base.set_state_dict(state)


def shapes(group) -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
    """Env 0's collision boxes of an actor group: (half size, centre in the actor's frame), sorted."""
    out = []
    for shape in group.bodies[0].collision_shapes:
        half = tuple(round(float(v), 6) for v in shape.half_size)
        centre = tuple(round(float(v), 6) for v in shape.local_pose.p)
        out.append((half, centre))
    return sorted(out)

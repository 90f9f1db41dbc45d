"""Observation conversion: restore each recorded env state and observe it, batched.

No physics runs: the recorded states are the output's states, bit for bit, and each step's
observation is computed from them (for camera modes: rendered). Episodes of different lengths
share a batch; an episode that has ended keeps its last state until the longest one ends.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
import torch

from envs.modes import ObsMode
from replay.trajectory import Episode

# what a stored observation's arrays mean, written to the output's metadata
OBS_UNITS = {
    "depth": "int16 millimetres along the camera's optical axis, 0 = nothing within [near, far]",
    "rgb": "uint8 RGB",
    "segmentation": "int16 entity id (names: env.unwrapped.segmentation_ids), 0 = nothing",
    "position": "int16 millimetres, OpenGL camera frame (x right, y up, z backward), 0 = nothing",
    "intrinsic_cv": "OpenCV K (3, 3)",
    "extrinsic_cv": "env frame -> OpenCV camera (3, 4)",
    "cam2world_gl": "OpenGL camera -> env frame (4, 4)",
    "xyzw": "float32 metres, env frame; w = 1 on an entity, 0 on the background",
}


def state_at(episodes: list[Episode], t: int) -> dict[str, dict[str, torch.Tensor]]:
    """Every episode's recorded state at step t (its last one past its end), stacked."""
    first = episodes[0].env_states
    return {
        g: {
            name: torch.from_numpy(np.stack([e.env_states[g][name][min(t, e.length)] for e in episodes]))
            for name in first[g]
        }
        for g in first
    }


def _to_numpy(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _to_numpy(v) for k, v in tree.items()}
    return tree.numpy()


def _row(tree: Any, i: int) -> Any:
    if isinstance(tree, dict):
        return {k: _row(v, i) for k, v in tree.items()}
    return tree[i].copy()


def _stack(rows: list) -> Any:
    if isinstance(rows[0], dict):
        return {k: _stack([r[k] for r in rows]) for k in rows[0]}
    return np.stack(rows)


def observe_batch(env, episodes: list[Episode], on_done: Callable[[int], None] | None = None) -> list[Any]:
    """The observation of every recorded state of each episode: per episode a (T + 1, ...) array
    (flat obs modes) or a nested dict of them. `env` is built in the wanted obs mode with
    num_envs >= len(episodes). `on_done(1)` is called as each episode's last state is observed."""
    base = env.unwrapped
    k = len(episodes)
    padded = episodes + [episodes[-1]] * (base.num_envs - k)
    base.reset(seed=[e.seed for e in padded])
    rows: list[list] = [[] for _ in range(k)]
    for t in range(max(e.length for e in episodes) + 1):
        base.set_state_dict(state_at(padded, t))
        info = base.evaluate()
        obs = _to_numpy(base.get_obs(info))
        for i, e in enumerate(episodes):
            if t <= e.length:
                rows[i].append(_row(obs, i))
                if t == e.length and on_done:
                    on_done(1)
    return [_stack(r) for r in rows]


def with_obs(episode: Episode, obs: Any, mode: ObsMode) -> Episode:
    """`episode` with its observations replaced (none: dropped)."""
    return dataclasses.replace(episode, obs=None if mode is ObsMode.NONE else obs)

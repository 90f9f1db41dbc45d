"""Observation conversion: restore each recorded env state and observe it, batched.

No physics runs: the recorded states are the output's states, bit for bit, and each step's
observation is computed from them (for camera modes: rendered). Episodes of different lengths
share a batch; an episode that has ended keeps its last state until the longest one ends.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from envs.core.tree import row, stack, to_numpy
from envs.modes import ObsMode
from replay.batch import start, state_at
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


def observe_batch(env, episodes: list[Episode], on_done: Callable[[int], None] | None = None) -> list[Any]:
    """The observation of every recorded state of each episode: per episode a (T + 1, ...) array
    (flat obs modes) or a nested dict of them. `env` is built in the wanted obs mode with
    num_envs >= len(episodes). `on_done(1)` is called as each episode's last state is observed."""
    base = env.unwrapped
    k = len(episodes)
    eps = start(env, episodes)
    rows: list[list] = [[] for _ in range(k)]
    for t in range(max(e.length for e in episodes) + 1):
        if t:
            base.set_state_dict(state_at(eps, t))
        obs = to_numpy(base.get_obs(base.evaluate()))
        for i, e in enumerate(episodes):
            if t <= e.length:
                rows[i].append(row(obs, i))
                if t == e.length and on_done:
                    on_done(1)
    return [stack(r) for r in rows]


def with_obs(episode: Episode, obs: Any, mode: ObsMode) -> Episode:
    """`episode` with its observations replaced (none: dropped)."""
    return dataclasses.replace(episode, obs=None if mode is ObsMode.NONE else obs)

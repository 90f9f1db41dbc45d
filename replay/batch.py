"""Recorded episodes in one batched env: env i plays episode i from its seed and its recorded
states (a batch with fewer episodes than envs repeats its last episode in the rest). The one
place that loads recorded states into an env and replays recorded actions open loop; `verify`,
`check`, `observe` and `control` build on it."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch

from replay.trajectory import Episode


def padded(episodes: list[Episode], num_envs: int) -> list[Episode]:
    """`episodes` filled up to num_envs with its last one."""
    return episodes + [episodes[-1]] * (num_envs - len(episodes))


def state_at(episodes: list[Episode], t: int) -> dict[str, dict[str, torch.Tensor]]:
    """Every episode's recorded state at step t (its last one past its end), stacked:
    group -> name -> (k, D)."""
    first = episodes[0].env_states
    return {
        g: {name: torch.from_numpy(np.stack([e.env_states[g][name][min(t, e.length)] for e in episodes])) for name in first[g]}
        for g in first
    }


def start(env, episodes: list[Episode]) -> list[Episode]:
    """Resets env (num_envs >= len(episodes)) with each episode's seed and restores its recorded
    initial state; returns the padded episodes, one per env."""
    base = env.unwrapped
    eps = padded(episodes, base.num_envs)
    base.reset(seed=[e.seed for e in eps])
    base.set_state_dict(state_at(eps, 0))
    return eps


def open_loop(env, episodes: list[Episode]) -> Iterator[tuple[int, tuple]]:
    """Steps env through the recorded actions of `episodes` (one per env, as `start` returns
    them; an episode that has ended repeats its last action) until the longest ends: yields
    (t, env.step's result) after each step t."""
    base = env.unwrapped
    action = torch.zeros(base.num_envs, episodes[0].actions.shape[1])
    for t in range(max(e.length for e in episodes)):
        for i, e in enumerate(episodes):
            action[i] = torch.from_numpy(e.actions[min(t, e.length - 1)])
        yield t, base.step(action)

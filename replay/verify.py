"""Open-loop replay of recorded actions from recorded initial states, batched."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import envs  # noqa: F401  (registers)
from envs.core.registry import check_env_id
from replay.trajectory import Episode, TrajectoryFile, batch_env_kwargs


def initial_state(episodes: list[Episode]) -> dict:
    """The recorded first env state of each episode, stacked: group -> name -> (k, D)."""
    first = episodes[0].env_states
    return {
        g: {name: torch.from_numpy(np.stack([e.env_states[g][name][0] for e in episodes])) for name in first[g]}
        for g in first
    }


def replay_actions(env, episodes: list[Episode]) -> list[bool]:
    """Replays each episode's actions in env i (num_envs >= len(episodes)) from its recorded
    initial state; returns whether each one reports success at its last step."""
    base = env.unwrapped
    k = len(episodes)
    padded = episodes + [episodes[-1]] * (base.num_envs - k)
    base.reset(seed=[e.seed for e in padded])
    base.set_state_dict(initial_state(padded))
    lengths = [e.length for e in padded]
    success = [False] * k
    hold = torch.zeros(base.num_envs, padded[0].actions.shape[1])
    for t in range(max(lengths)):
        for i, e in enumerate(padded):
            hold[i] = torch.from_numpy(e.actions[min(t, e.length - 1)])
        _, _, _, _, info = base.step(hold)
        for i in range(k):
            if t == lengths[i] - 1:
                success[i] = bool(info["success"][i])
    return success


def verify_file(path: str | Path, num_envs: int = 16) -> tuple[int, int, list[int]]:
    """Replays every episode open loop from its recorded initial state: (episodes whose replay
    ends as recorded, success or not, episodes, ids that did not)."""
    traj = TrajectoryFile(path)
    ids = [e["episode_id"] for e in traj.episodes]
    if not ids:
        return 0, 0, []
    recorded = {e["episode_id"]: bool(e.get("success")) for e in traj.episodes}
    info = traj.env_info
    kwargs = dict(info["env_kwargs"], obs_mode="none")
    n = max(1, min(num_envs, len(ids)))
    env, built_for, failed = None, None, []
    try:
        for start in range(0, len(ids), n):
            chunk = ids[start : start + n]
            eps = [traj.episode(i, with_obs=False) for i in chunk]
            # replay_actions pads a short chunk with its last episode: build those envs alike
            scene = batch_env_kwargs(eps + [eps[-1]] * (n - len(eps)))
            if env is None or scene != built_for:  # episodes built per env (geometry) need their own envs
                if env is not None:
                    env.close()
                env, built_for = gym.make(check_env_id(info["env_id"]), num_envs=n, **kwargs, **scene), scene
            for i, ok in zip(chunk, replay_actions(env, eps)):
                if ok != recorded[i]:
                    failed.append(i)
    finally:
        if env is not None:
            env.close()
        traj.close()
    return len(ids) - len(failed), len(ids), sorted(failed)

"""Open-loop replay of recorded actions from recorded initial states, batched.

Every batch is replayed in a freshly built env. PhysX keeps state that no API exposes
(re-inserting every entity does not remove it), so an env that has run other episodes can move
the last bits of a contact, which a grasp amplifies. A fresh env of isolated envs
(`PhysicsConfig.isolated`, which demonstration files store in their env kwargs) replays an
episode bit-identically whatever the batch's size, order and other episodes. `demos generate`
records every episode by this same replay (`record_replay`), so verify reproduces every one."""

from __future__ import annotations

from dataclasses import replace
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


def fresh_env(env_id: str, env_kwargs: dict, episodes: list[Episode]):
    """A newly built env with one env per episode, each built as its episode was."""
    return gym.make(check_env_id(env_id), num_envs=len(episodes), **env_kwargs, **batch_env_kwargs(episodes)).unwrapped


def _rows(tree, i: int):
    return {k: _rows(v, i) if isinstance(v, dict) else v[i].numpy().copy() for k, v in tree.items()}


def _stack(rows: list):
    if isinstance(rows[0], dict):
        return {k: _stack([r[k] for r in rows]) for k in rows[0]}
    return np.stack(rows)


def record_replay(env, episodes: list[Episode], record_obs: bool) -> list[Episode]:
    """Each episode as a replay of its actions from its initial state in env (a fresh env with
    num_envs == len(episodes)) runs it: states, rewards, flags and (with record_obs) observations
    of that replay, actions and seeds as given."""
    n = len(episodes)
    if env.num_envs != n:
        raise ValueError(f"record_replay needs one env per episode: {env.num_envs} envs for {n} episodes")
    env.reset(seed=[e.seed for e in episodes])
    env.set_state_dict(initial_state(episodes))
    obs = env.get_obs(env.evaluate()) if record_obs else None
    states = [[_rows(env.get_state_dict(), i)] for i in range(n)]
    observed = [[_rows({"o": obs}, i)["o"]] if record_obs else [] for i in range(n)]
    flags = {k: [[] for _ in range(n)] for k in ("rewards", "success", "fail", "terminated", "truncated")}
    action = torch.zeros(n, episodes[0].actions.shape[1])
    for t in range(max(e.length for e in episodes)):
        for i, e in enumerate(episodes):
            action[i] = torch.from_numpy(e.actions[min(t, e.length - 1)])
        obs, reward, terminated, truncated, info = env.step(action)
        state = env.get_state_dict()
        for i, e in enumerate(episodes):
            if t >= e.length:
                continue
            states[i].append(_rows(state, i))
            if record_obs:
                observed[i].append(_rows({"o": obs}, i)["o"])
            for key, value in (("rewards", reward), ("success", info["success"]), ("fail", info["fail"]),
                               ("terminated", terminated), ("truncated", truncated)):
                flags[key][i].append(value[i].item())
    return [
        replace(
            e, env_states=_stack(states[i]), obs=_stack(observed[i]) if record_obs else e.obs,
            rewards=np.array(flags["rewards"][i], np.float32),
            **{k: np.array(flags[k][i], bool) for k in ("success", "fail", "terminated", "truncated")},
        )
        for i, e in enumerate(episodes)
    ]


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


def verify_file(path: str | Path, num_envs: int = 16, order_seed: int | None = None) -> tuple[int, int, list[int]]:
    """Replays every episode open loop from its recorded initial state, `num_envs` at a time, each
    batch in a fresh env (in file order, or shuffled by `order_seed`): (episodes whose replay ends
    as recorded, success or not, episodes, ids that did not)."""
    traj = TrajectoryFile(path)
    ids = [e["episode_id"] for e in traj.episodes]
    if not ids:
        return 0, 0, []
    if order_seed is not None:
        ids = [ids[k] for k in np.random.default_rng(order_seed).permutation(len(ids))]
    recorded = {e["episode_id"]: bool(e.get("success")) for e in traj.episodes}
    info = traj.env_info
    kwargs = dict(info["env_kwargs"], obs_mode="none")
    n = max(1, min(num_envs, len(ids)))
    failed = []
    try:
        for start in range(0, len(ids), n):
            chunk = ids[start : start + n]
            eps = [traj.episode(i, with_obs=False) for i in chunk]
            env = fresh_env(info["env_id"], kwargs, eps)
            try:
                results = replay_actions(env, eps)
            finally:
                env.close()
            failed += [i for i, ok in zip(chunk, results) if ok != recorded[i]]
    finally:
        traj.close()
    return len(ids) - len(failed), len(ids), sorted(failed)

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

import envs  # noqa: F401  (registers)
from envs.core.registry import check_env_id
from envs.core.tree import row, stack
from replay.batch import open_loop, start
from replay.trajectory import Episode, TrajectoryFile, batch_env_kwargs


def fresh_env(env_id: str, env_kwargs: dict, episodes: list[Episode]):
    """A newly built env with one env per episode, each built as its episode was."""
    return gym.make(check_env_id(env_id), num_envs=len(episodes), **env_kwargs, **batch_env_kwargs(episodes)).unwrapped


def record_replay(env, episodes: list[Episode], record_obs: bool) -> list[Episode]:
    """Each episode as a replay of its actions from its initial state in env (a fresh env with
    num_envs == len(episodes)) runs it: states, rewards, flags and (with record_obs) observations
    of that replay, actions and seeds as given."""
    n = len(episodes)
    if env.num_envs != n:
        raise ValueError(f"record_replay needs one env per episode: {env.num_envs} envs for {n} episodes")
    start(env, episodes)
    obs = env.get_obs(env.evaluate()) if record_obs else None
    states = [[row(env.get_state_dict(), i)] for i in range(n)]
    observed = [[row({"o": obs}, i)["o"]] if record_obs else [] for i in range(n)]
    flags = {k: [[] for _ in range(n)] for k in ("rewards", "success", "fail", "terminated", "truncated")}
    for t, (obs, reward, terminated, truncated, info) in open_loop(env, episodes):
        state = env.get_state_dict()
        for i, e in enumerate(episodes):
            if t >= e.length:
                continue
            states[i].append(row(state, i))
            if record_obs:
                observed[i].append(row({"o": obs}, i)["o"])
            for key, value in (("rewards", reward), ("success", info["success"]), ("fail", info["fail"]),
                               ("terminated", terminated), ("truncated", truncated)):
                flags[key][i].append(value[i].item())
    return [
        replace(
            e, env_states=stack(states[i]), obs=stack(observed[i]) if record_obs else e.obs,
            rewards=np.array(flags["rewards"][i], np.float32),
            **{k: np.array(flags[k][i], bool) for k in ("success", "fail", "terminated", "truncated")},
        )
        for i, e in enumerate(episodes)
    ]


def replay_actions(env, episodes: list[Episode]) -> list[bool]:
    """Replays each episode's actions in env i (num_envs >= len(episodes)) from its recorded
    initial state; returns whether each one reports success at its last step."""
    success = [False] * len(episodes)
    for t, (*_, info) in open_loop(env, start(env, episodes)):
        for i, e in enumerate(episodes):
            if t == e.length - 1:
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
        for first in range(0, len(ids), n):
            chunk = ids[first : first + n]
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

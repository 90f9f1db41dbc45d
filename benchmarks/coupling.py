"""Coupling between envs: does an env's physics depend on the batch it runs in?

    python -m benchmarks.coupling FILE [--episodes 64] [--configs today shared enhanced isolated]
        [--speed-envs 64 --speed-steps 200]

FILE is a demonstration file (`demos generate`). Each of its first `--episodes` episodes is
replayed open loop (its recorded initial state, then its actions; past its end, its last action
again) for T steps, T the longest episode, in batches of different composition:

* alone: every episode in its own freshly built one-env env (the reference);
* batch 16 / batch 64: in file order, 16 or 64 envs a batch, each batch in a fresh env;
* shuffled 16: a seeded permutation, 16 envs a batch, each in a fresh env, so every episode has
  other neighbours and another place in the batch;
* shuffled 16, reused env: the same batches run one after another in one env, so every episode
  also follows others (the state PhysX keeps from earlier episodes).

For every physics configuration it prints the largest absolute difference of any env-state
number (poses, velocities, joint positions, ... ) from the reference after T steps and at any
step, and how many episodes end (at their own last step) with another success than the one the
file records. Then env-steps/s of each configuration: PickCube-v1, `--speed-envs` envs, random
pd_joint_delta_pos actions, ended episodes reset in the timed loop; the envs are built in one
process and stepped in turn, ten steps at a time, so each sees the same machine load; the
last column is the ratio to the first configuration.

Configurations (envs.core.world.PhysicsConfig):
  today      one shared PhysX system, SAPIEN's defaults (10 position iterations, contact offset
             0.01 m, restitution 0.1)
  shared     one shared PhysX system, ManiSkill 3.0.1's settings
  enhanced   shared, ManiSkill's settings, PhysX enhanced determinism on
  isolated   one PhysX system per env, ManiSkill's settings (the default)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

import envs  # noqa: F401  (registers)
from envs.core.registry import check_env_id
from replay.batch import start
from replay.trajectory import Episode, TrajectoryFile, batch_env_kwargs

CONFIGS: dict[str, dict] = {
    "today": {"isolated": False, "solver_position_iterations": 10, "contact_offset": 0.01, "restitution": 0.1},
    "shared": {"isolated": False},
    "enhanced": {"isolated": False, "enable_enhanced_determinism": True},
    "isolated": {"isolated": True},
}


def _flat(state: dict) -> np.ndarray:  # (N, D)
    return np.concatenate([v.reshape(v.shape[0], -1).numpy() for g in state.values() for v in g.values()], 1)


def rollout(env, episodes: list[Episode], steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(k, T + 1, D) env states and (k,) success at each episode's own last step, of k episodes
    replayed together in env (num_envs == k)."""
    base = env.unwrapped
    start(env, episodes)
    states = [_flat(base.get_state_dict())]
    success = np.zeros(len(episodes), bool)
    action = torch.zeros(len(episodes), episodes[0].actions.shape[1])
    for t in range(steps):
        for i, e in enumerate(episodes):
            action[i] = torch.from_numpy(e.actions[min(t, e.length - 1)])
        _, _, _, _, info = base.step(action)
        states.append(_flat(base.get_state_dict()))
        for i, e in enumerate(episodes):
            if t == e.length - 1:
                success[i] = bool(info["success"][i])
    return np.stack(states, 1), success


def _make(env_id: str, kwargs: dict, n: int, episodes: list[Episode], physics: dict):
    return gym.make(env_id, num_envs=n, physics=physics, **kwargs, **batch_env_kwargs(episodes))


def compositions(n: int, seed: int) -> dict[str, list[list[int]]]:
    order = np.random.default_rng(seed).permutation(n).tolist()
    chunks = lambda ids, k: [ids[s : s + k] for s in range(0, len(ids), k) if len(ids[s : s + k]) == k]
    return {"batch 16": chunks(list(range(n)), 16), "batch 64": chunks(list(range(n)), 64), "shuffled 16": chunks(order, 16),
            "shuffled 16, reused env": chunks(order, 16)}


def coupling(path: Path, count: int, physics: dict, seed: int) -> list[tuple[str, float, float, int, int]]:
    """Rows (composition, max |diff| after T, max |diff| at any step, outcome mismatches, episodes)."""
    traj = TrajectoryFile(path)
    info = traj.env_info
    env_id = check_env_id(info["env_id"])
    kwargs = {k: v for k, v in info["env_kwargs"].items() if k != "physics"}  # the configuration's own
    kwargs["obs_mode"] = "none"
    ids = [e["episode_id"] for e in traj.episodes][:count]
    eps = [traj.episode(i, with_obs=False) for i in ids]
    recorded = np.array([bool(e.success[-1]) for e in eps])
    steps = max(e.length for e in eps)
    ref, ref_ok = [], []
    for e in eps:  # alone, each in a fresh env
        env = _make(env_id, kwargs, 1, [e], physics)
        s, ok = rollout(env, [e], steps)
        env.close()
        ref.append(s[0])
        ref_ok.append(ok[0])
    ref = np.stack(ref)
    rows = [("alone", 0.0, 0.0, int((np.array(ref_ok) != recorded).sum()), len(eps))]
    for name, batches in compositions(len(eps), seed).items():
        if not batches:
            continue
        got = np.zeros_like(ref)
        ok = np.zeros(len(eps), bool)
        covered = []
        env = None
        for batch in batches:
            chosen = [eps[i] for i in batch]
            if env is None or "reused" not in name or any(batch_env_kwargs(chosen).values()):
                if env is not None:
                    env.close()
                env = _make(env_id, kwargs, len(batch), chosen, physics)
            s, o = rollout(env, chosen, steps)
            got[batch], ok[batch] = s, o
            covered += batch
        env.close()
        diff = np.abs(got[covered] - ref[covered])
        rows.append((name, float(diff[:, -1].max()), float(diff.max()), int((ok[covered] != recorded[covered]).sum()), len(covered)))
    traj.close()
    return rows


def speed(configs: list[str], num_envs: int, steps: int) -> dict[str, float]:
    """env-steps/s per configuration, stepped in turn ten steps at a time."""
    made = {c: gym.make("PickCube-v1", num_envs=num_envs, physics=CONFIGS[c]) for c in configs}
    spent = dict.fromkeys(configs, 0.0)
    rng = np.random.default_rng(0)
    for env in made.values():
        env.unwrapped.reset(seed=0)
    for _ in range(max(1, steps // 10)):
        for c, env in made.items():
            base = env.unwrapped
            actions = torch.from_numpy(rng.uniform(-1, 1, base.action_space.shape).astype(np.float32))
            start = time.perf_counter()
            for _ in range(10):
                _, _, terminated, truncated, _ = base.step(actions)
                done = terminated | truncated
                if done.any():
                    base.reset(options={"env_idx": torch.nonzero(done).flatten()})
            spent[c] += time.perf_counter() - start
    for env in made.values():
        env.close()
    return {c: num_envs * max(1, steps // 10) * 10 / spent[c] for c in configs}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks.coupling", description=__doc__.split("\n")[0])
    p.add_argument("file", type=Path, help="a demonstration file (demos generate)")
    p.add_argument("--episodes", type=int, default=64, help="its first episodes to replay")
    p.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled order")
    p.add_argument("--speed-envs", type=int, default=64)
    p.add_argument("--speed-steps", type=int, default=200, help="timed env.step calls per configuration (0: skip)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print("| physics | composition | max diff after T | max diff, any step | outcome ≠ recorded | episodes |")
    print("|---|---|---|---|---|---|")
    for c in args.configs if args.episodes > 0 else ():
        for name, final, peak, wrong, n in coupling(args.file, args.episodes, CONFIGS[c], args.seed):
            print(f"| {c} | {name} | {final:.2e} | {peak:.2e} | {wrong} | {n} |", flush=True)
    if args.speed_steps > 0:
        fps = speed(args.configs, args.speed_envs, args.speed_steps)
        first = fps[args.configs[0]]
        print(f"\n| physics | N | env-steps/s | / {args.configs[0]} |\n|---|---|---|---|")
        for c in args.configs:
            print(f"| {c} | {args.speed_envs} | {fps[c]:,.0f} | {fps[c] / first:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Roll any policy in the batched simulator: every env at once, under torch.inference_mode().

Episodes run for the env's full length (no early stop): success_at_end is the success flag at the
last step, success_once whether it was ever set; both come with a 95 % Wilson interval. Episode
length is the step of first success (the full length for episodes that never succeed). `stages`
holds, for every other boolean flag of the task's info (PickCube: is_grasped, is_obj_placed,
is_robot_static), the share of episodes in which it was ever set: where the failures happen;
`per_episode` the three per-episode lists in seed order. A batch's sampling noise is seeded by its
first episode seed, so one checkpoint evaluated twice on the same seeds gives the same episodes."""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch

import envs  # noqa: F401  (registers the tasks)
from envs.executor import Executor, Lost, make_pool, parse_executor
from envs.modes import ObsMode
from policies.data import ObsSpec
from policies.policy import Policy


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a success rate."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def make_eval_env(env: dict[str, Any], spec: ObsSpec, num_envs: int, num_workers: int = 1, max_episode_steps: int = 0,
                  video_dir: str | Path | None = None) -> gym.Env:
    """The env a policy trained on `env` (policies.data.env_info) and `spec` acts in."""
    kwargs = dict(env["env_kwargs"])
    steps = max_episode_steps or env.get("max_episode_steps") or None
    if steps:
        kwargs["max_episode_steps"] = steps
    if video_dir:
        kwargs["render_mode"] = "rgb_array"
    made = gym.make(env["env_id"], num_envs=num_envs, num_workers=num_workers, obs_mode=spec.obs_mode,
                    control_mode=env["control_mode"], **kwargs)
    if video_dir:
        from envs.wrappers import RecordVideo

        made = RecordVideo(made, video_dir)
    return made


def _rollout(policy: Policy, sim: gym.Env, seeds: list[int]) -> dict[str, Any]:
    """One batch of episodes, one per env, from `seeds` (as many as the env's envs): per-episode
    lists of success at the end, success once, length and the other flags ever set."""
    num_envs = sim.unwrapped.num_envs
    with torch.inference_mode():
        obs, info = sim.reset(seed=seeds)
        policy.reset(seeds[0])  # the sampling noise too: one checkpoint on one seed acts the same every time
        horizon = int(sim.unwrapped.max_episode_steps)
        ever = torch.zeros(num_envs, dtype=torch.bool)
        first_success = torch.full((num_envs,), horizon)
        flags: dict[str, torch.Tensor] = {}
        for step in range(horizon):
            action = policy.predict_action(obs).float().cpu()
            obs, _, _, _, info = sim.step(action)
            success = info["success"].cpu().bool()
            first_success = torch.where(success & ~ever, torch.tensor(step + 1), first_success)
            ever |= success
            for k, v in info.items():
                if k not in ("success", "fail") and torch.is_tensor(v) and v.dtype == torch.bool and v.shape == (num_envs,):
                    flags[k] = flags.get(k, torch.zeros(num_envs, dtype=torch.bool)) | v.cpu()
    return {"at_end": info["success"].cpu().bool().tolist(), "once": ever.tolist(), "lengths": first_success.tolist(),
            "flags": {k: v.tolist() for k, v in flags.items()}}


@dataclass(frozen=True)
class EvalJob:
    """An evaluation worker (envs/executor.py): its env and its copy of the policy are built once;
    a task is the first seed of a batch of num_envs episodes."""

    policy: Policy  # on the CPU; a worker with CUDA moves its copy there
    env: dict[str, Any]
    num_envs: int
    max_episode_steps: int = 0

    @property
    def render(self) -> bool:
        return ObsMode(self.policy.spec.obs_mode).visual

    def setup(self):
        policy = self.policy.to("cuda" if torch.cuda.is_available() else "cpu").eval()
        sim = make_eval_env(self.env, policy.spec, self.num_envs, 1, self.max_episode_steps)
        return lambda first: _rollout(policy, sim, [first + i for i in range(self.num_envs)])


def evaluate(policy: Policy, env: dict[str, Any], episodes: int, num_envs: int, workers: int | None = 1, seed: int = 100_000,
             max_episode_steps: int = 0, video_dir: str | Path | None = None, executor: str = "local",
             address: str | None = None, keep_minutes: float = 0.0) -> dict[str, Any]:
    """Success rates, their intervals, mean episode length over `episodes` seeds seed, seed + 1, ...
    In this process with `workers` env processes (None: 1), or with `executor` ray on `workers` Ray
    actors (None: the pool's default), each with an env of `num_envs` and its copy of the policy,
    batches of seeds spread over them."""
    kind = parse_executor(executor, address, keep_minutes)
    num_envs = min(num_envs, episodes)
    start = time.monotonic()
    firsts = list(range(seed, seed + episodes, num_envs))
    was_training = policy.training
    policy.eval()
    try:
        if kind is Executor.LOCAL:
            sim = make_eval_env(env, policy.spec, num_envs, min(workers or 1, num_envs), max_episode_steps, video_dir)
            try:
                batches = [_rollout(policy, sim, [first + i for i in range(num_envs)]) for first in firsts]
            finally:
                sim.close()
        else:
            if video_dir:
                raise ValueError("--video needs the local executor (the videos are written where the envs run)")
            batches = _on_pool(kind, EvalJob(copy.deepcopy(policy).cpu(), env, num_envs, max_episode_steps), firsts,
                               workers, address, keep_minutes)
    finally:
        policy.train(was_training)
    at_end, once, lengths = [], [], []
    stages: dict[str, list[bool]] = {}
    for first, batch in zip(firsts, batches):
        keep = min(num_envs, seed + episodes - first)
        at_end += batch["at_end"][:keep]
        once += batch["once"][:keep]
        lengths += batch["lengths"][:keep]
        for k, v in batch["flags"].items():
            stages.setdefault(k, []).extend(v[:keep])
    n = len(at_end)
    out = {"episodes": n, "seed": seed, "episode_len": sum(lengths) / n, "seconds": round(time.monotonic() - start, 1)}
    for name, values in (("success_at_end", at_end), ("success_once", once)):
        out[name] = sum(values) / n
        out[f"{name}_ci95"] = list(wilson(sum(values), n))
    out["stages"] = {k: sum(v) / n for k, v in stages.items() if len(v) == n}
    out["per_episode"] = {"success_at_end": at_end, "success_once": once, "length": lengths}  # in seed order
    return out


def _on_pool(kind: Executor, job: EvalJob, firsts: list[int], workers: int | None, address: str | None,
             keep_minutes: float = 0.0) -> list[dict]:
    """The batches' results in seed order; a batch whose workers kept dying is an error (a success
    rate over the episodes that survived would be biased)."""
    pool = make_pool(kind, job, workers, address=address, keep_minutes=keep_minutes)
    try:
        done: dict[int, dict] = {}
        submitted = 0
        while len(done) < len(firsts):
            while submitted < len(firsts) and pool.idle:
                pool.submit(submitted, firsts[submitted])
                submitted += 1
            k, result = pool.next_result()
            if isinstance(result, Lost):
                raise RuntimeError(f"evaluation batch from seed {firsts[k]}: {result.reason}, retried {pool.retries} times")
            done[k] = result
        return [done[k] for k in range(len(firsts))]
    finally:
        pool.close()


def summary(result: dict[str, Any]) -> str:
    def rate(name: str) -> str:
        lo, hi = result[f"{name}_ci95"]
        return f"{name} {result[name]:.3f} [{lo:.3f}, {hi:.3f}]"

    stages = "".join(f", {k} once {v:.2f}" for k, v in result.get("stages", {}).items())
    return (f"{result['episodes']} episodes: {rate('success_at_end')}, {rate('success_once')}, "
            f"mean episode length {result['episode_len']:.1f}{stages} ({result['seconds']:.0f} s)")

"""Tasks register with gymnasium where they are defined: `@register_env("PickCube-v1", ...)`.

gymnasium's `make` wraps envs in `TimeLimit`, which counts steps for one env; a batched env
counts per env itself, so the registered spec ends with `absorb_time_limit`, which hands the
requested limit to the env and removes the wrapper.
"""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec

TASKS: dict[str, type] = {}


def absorb_time_limit(env: gym.Env) -> gym.Env:
    if isinstance(env, gym.wrappers.TimeLimit):
        limit = env._max_episode_steps
        env = env.env
        env.unwrapped.max_episode_steps = int(limit)
    return env


def register_env(env_id: str, max_episode_steps: int, **kwargs: Any):
    """Class decorator: registers `env_id` with gymnasium (kwargs must be JSON-serialisable)."""

    def deco(cls):
        cls.env_id = env_id
        cls.default_max_episode_steps = max_episode_steps
        gym.register(
            id=env_id,
            entry_point=cls,
            max_episode_steps=max_episode_steps,
            disable_env_checker=True,
            order_enforce=False,
            kwargs=kwargs,
            additional_wrappers=(WrapperSpec("BatchedTimeLimit", f"{__name__}:absorb_time_limit", {}),),
        )
        TASKS[env_id] = cls
        return cls

    return deco


def env_ids() -> list[str]:
    return sorted(TASKS)


def check_env_id(env_id: str) -> str:
    """`env_id`, or a ValueError naming the registered ids. Accepts the id without its version."""
    if env_id in TASKS:
        return env_id
    if f"{env_id}-v1" in TASKS:
        return f"{env_id}-v1"
    raise ValueError(f"unknown env id {env_id!r}; allowed: {', '.join(env_ids())}")


def default_robot_uids(env_id: str) -> str | list[str]:
    """The robot uids `gym.make(env_id)` builds without a robot_uids argument: the task's
    registered default, else the task class's own default."""
    registered = gym.spec(check_env_id(env_id)).kwargs.get("robot_uids")
    if registered is not None:
        return registered
    return inspect.signature(TASKS[check_env_id(env_id)].__init__).parameters["robot_uids"].default

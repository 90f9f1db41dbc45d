"""Batched spaces: the leading dimension of every Box is the env dimension."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


def with_num_envs(space: gym.Space, num_envs: int) -> gym.Space:
    """The same batched space (Box or nested Dict of Boxes) for `num_envs` envs."""
    if isinstance(space, gym.spaces.Dict):
        return gym.spaces.Dict({k: with_num_envs(v, num_envs) for k, v in space.items()})
    if isinstance(space, gym.spaces.Box):
        shape = (num_envs, *space.shape[1:])
        return gym.spaces.Box(np.broadcast_to(space.low[:1], shape), np.broadcast_to(space.high[:1], shape), shape, space.dtype)
    raise TypeError(f"batched spaces are Box or Dict, got {type(space).__name__}")


def single(space: gym.Space) -> gym.Space:
    """One env's space of a batched space (the first env's bounds)."""
    if isinstance(space, gym.spaces.Dict):
        return gym.spaces.Dict({k: single(v) for k, v in space.items()})
    if isinstance(space, gym.spaces.Box):
        return gym.spaces.Box(np.asarray(space.low[0]), np.asarray(space.high[0]), space.shape[1:], space.dtype)
    raise TypeError(f"batched spaces are Box or Dict, got {type(space).__name__}")

"""A Stable-Baselines3 `VecEnv` over a batched env (needs the `sb3` extra: stable-baselines3).

    from stable_baselines3 import PPO
    venv = SB3VecEnv(gym.make("PickCube-v1", num_envs=8, num_workers=2))
    PPO("MlpPolicy", venv).learn(2048)

SB3's conventions: NumPy observations, `dones = terminated | truncated`, an env that is done is
reset within the same step and its last observation is in `infos[i]["terminal_observation"]`,
with `infos[i]["TimeLimit.truncated"]` when only the time limit ended it; `infos[i]["is_success"]`
feeds SB3's success-rate logging. `state_dict` observations become a flat `Dict` space with keys
such as "agent/qpos" (use "MultiInputPolicy"). Wrap in SB3's `VecMonitor` for episode statistics.
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.vec_env import VecEnv

from envs.core.tree import row, to_numpy
from envs.parallel.layout import flatten
from envs.parallel.spaces import single


def _space_leaves(space: gym.Space, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], gym.Space]]:
    if isinstance(space, gym.spaces.Dict):
        return [leaf for k, v in space.items() for leaf in _space_leaves(v, (*prefix, k))]
    return [(prefix, space)]


def _flat_space(space: gym.Space) -> gym.Space:
    """One env's space; a nested Dict becomes one flat Dict keyed by "/"-joined paths."""
    if isinstance(space, gym.spaces.Dict):
        return gym.spaces.Dict({"/".join(path): single(box) for path, box in _space_leaves(space)})
    return single(space)


def _flat_obs(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {"/".join(path): to_numpy(t) for path, t in flatten(obs, ())}
    return to_numpy(obs)


class SB3VecEnv(VecEnv):
    def __init__(self, env: gym.Env):
        self.env = env
        base = env.unwrapped
        super().__init__(base.num_envs, _flat_space(base.observation_space), base.single_action_space)

    def reset(self):
        seeds = self._seeds
        if all(s is None for s in seeds):
            seed = None
        else:  # SB3 seeds env i with seed + i; envs without a seed get a random one
            rng = np.random.default_rng()
            seed = [int(s) if s is not None else int(rng.integers(2**31 - 1)) for s in seeds]
        obs, _ = self.env.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        return _flat_obs(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        obs, reward, terminated, truncated, info = self.env.step(self._actions)
        obs = _flat_obs(obs)
        done = (terminated | truncated).numpy()
        success = info["success"].numpy()
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        idx = np.flatnonzero(done)
        if len(idx):
            for i in idx:
                infos[i] = {
                    "terminal_observation": row(obs, i),
                    "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                    "is_success": bool(success[i]),
                }
            obs = _flat_obs(self.env.reset(options={"env_idx": torch.from_numpy(idx)})[0])
        return obs, reward.numpy().copy(), done, infos

    def close(self) -> None:
        self.env.close()

    # ---- attributes: one batched env stands for all N ---------------------------------------------
    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        value = getattr(self.env.unwrapped, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        setattr(self.env.unwrapped, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        result = getattr(self.env.unwrapped, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices=None) -> Sequence[bool]:
        return [False for _ in self._get_indices(indices)]

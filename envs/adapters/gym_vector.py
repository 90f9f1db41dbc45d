"""A `gymnasium.vector.VectorEnv` view of a batched env (in-process or over worker processes).

    venv = GymVectorEnv(gym.make("PickCube-v1", num_envs=64, num_workers=4))

NumPy in and out, spaces from `gymnasium.vector.utils.batch_space` of the single-env spaces, info
as gymnasium's dict of (N,) arrays with a `_key` mask per key, and autoreset in any of gymnasium's
three modes (default NEXT_STEP, as gymnasium's own vector envs). The batched env has no autoreset
of its own: all envs always step together, so an env due for a reset is stepped with the others
and then reset, which leaves every other env untouched.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from envs.core.tree import row, to_numpy
from envs.parallel.spaces import single


def _vector_info(info: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
    """gymnasium's vector info: each (N,) array with a `_key` array saying which envs have it."""
    out: dict[str, Any] = {}
    for k, v in info.items():
        out[k] = _vector_info(v, mask) if isinstance(v, dict) else v
        out[f"_{k}"] = mask.copy()
    return out


class GymVectorEnv(VectorEnv):
    def __init__(self, env: gym.Env, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP):
        self.env = env
        base = env.unwrapped
        self.num_envs = base.num_envs
        self.single_action_space = base.single_action_space
        self.single_observation_space = single(base.observation_space)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {"autoreset_mode": self.autoreset_mode, "render_modes": []}
        self.spec = base.spec
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._all = np.ones(self.num_envs, dtype=bool)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        """`options={"reset_mask": mask}` resets only those envs (gymnasium's way, for DISABLED
        autoreset); an int seed then seeds env i with seed + i, as gymnasium's vector envs do."""
        super().reset(seed=seed)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is not None:
            idx = np.flatnonzero(np.asarray(mask, dtype=bool))
            if seed is not None and np.isscalar(seed):
                seed = [int(seed) + int(i) for i in idx]
            options["env_idx"] = idx
        obs, info = self.env.reset(seed=seed, options=options)
        if mask is None:
            self._autoreset[:] = False
        else:
            self._autoreset[idx] = False
        return to_numpy(obs), _vector_info(to_numpy(info), self._all)

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        reward, terminated, truncated = reward.numpy().copy(), terminated.numpy().copy(), truncated.numpy().copy()
        if self.autoreset_mode is AutoresetMode.NEXT_STEP and self._autoreset.any():
            idx = np.flatnonzero(self._autoreset)
            obs, info = self.env.reset(options={"env_idx": idx})  # every env's observation, fresh for idx
            reward[idx], terminated[idx], truncated[idx] = 0.0, False, False
        obs, info = to_numpy(obs), _vector_info(to_numpy(info), self._all)
        done = terminated | truncated
        if self.autoreset_mode is AutoresetMode.SAME_STEP and done.any():
            idx = np.flatnonzero(done)
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in idx:
                final_obs[i] = row(obs, i)
            final_info = _vector_info({k: v for k, v in info.items() if not k.startswith("_")}, done)
            new_obs, new_info = self.env.reset(options={"env_idx": idx})
            obs, info = to_numpy(new_obs), _vector_info(to_numpy(new_info), self._all)
            info.update(final_obs=final_obs, _final_obs=done.copy(), final_info=final_info, _final_info=done.copy())
        self._autoreset = done
        return obs, reward, terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        self.env.close()

    def __repr__(self) -> str:
        return f"GymVectorEnv({self.env.unwrapped!r}, autoreset_mode={self.autoreset_mode.value})"

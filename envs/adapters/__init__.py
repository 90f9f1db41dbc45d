"""Views of a batched env for other libraries' APIs.

* `GymVectorEnv`: a `gymnasium.vector.VectorEnv` (NumPy, autoreset).
* `envs.adapters.sb3.SB3VecEnv`: a Stable-Baselines3 `VecEnv` (import it from its module: it needs
  the optional `sb3` extra).
"""

from envs.adapters.gym_vector import GymVectorEnv

__all__ = ["GymVectorEnv"]

import gymnasium as gym
import pytest

import envs  # noqa: F401  (registers)


@pytest.fixture
def make():
    """gym.make that closes what it made."""
    made = []

    def _make(env_id="PickCube-v1", **kwargs):
        env = gym.make(env_id, **kwargs)
        made.append(env)
        return env

    yield _make
    for env in made:
        env.close()

"""The gymnasium VectorEnv view and the Stable-Baselines3 VecEnv, in-process and over workers."""

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from envs.adapters import GymVectorEnv
from envs.modes import ObsMode
from tests.marks import fast_only, slow

WORKERS = [1, 2]


@pytest.fixture
def vector():
    made = []

    def _make(num_workers=1, autoreset_mode=AutoresetMode.NEXT_STEP, **kwargs):
        venv = GymVectorEnv(gym.make("PickCube-v1", num_workers=num_workers, **kwargs), autoreset_mode)
        made.append(venv)
        return venv

    yield _make
    for venv in made:
        venv.close()


@pytest.fixture
def one_torch_thread():
    """SB3 in this process and the workers share two cores: torch's thread pool would oversubscribe."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("num_workers", fast_only(WORKERS, 1))
@pytest.mark.parametrize("obs_mode", [m.value for m in ObsMode if not m.visual])
def test_vector_env_contract(vector, num_workers, obs_mode):
    venv = vector(num_workers, num_envs=4, obs_mode=obs_mode)
    assert isinstance(venv, VectorEnv) and venv.num_envs == 4
    assert venv.observation_space == batch_space(venv.single_observation_space, 4)
    assert venv.action_space == batch_space(venv.single_action_space, 4)
    assert venv.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    obs, info = venv.reset(seed=3)
    again, _ = venv.reset(seed=3)
    assert venv.observation_space.contains(obs)
    assert data_equivalence(obs, again, exact=True)  # seeded resets are deterministic (none: {} both times)
    assert info["elapsed_steps"].tolist() == [0] * 4 and info["_elapsed_steps"].all()
    venv.action_space.seed(0)
    first, *_ = venv.step(venv.action_space.sample())
    kept = copy.deepcopy(first)
    obs, reward, terminated, truncated, info = venv.step(venv.action_space.sample())
    assert venv.observation_space.contains(obs)
    assert isinstance(reward, np.ndarray) and reward.shape == (4,) and reward.dtype == np.float32
    assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
    assert isinstance(info["success"], np.ndarray) and info["success"].shape == (4,)
    assert data_equivalence(kept, first)  # returned data is never reused


@pytest.mark.parametrize("num_workers", fast_only(WORKERS, 1))
def test_next_step_autoreset(vector, num_workers):
    venv = gym.wrappers.vector.RecordEpisodeStatistics(vector(num_workers, num_envs=2, max_episode_steps=3))
    venv.reset(seed=0)
    zero = np.zeros(venv.action_space.shape, np.float32)
    for _ in range(2):
        venv.step(zero)
    obs, reward, terminated, truncated, info = venv.step(zero)
    assert truncated.all() and info["_episode"].all() and (info["episode"]["l"] == 3).all()
    obs, reward, terminated, truncated, info = venv.step(zero)  # the autoreset step
    assert not truncated.any() and (reward == 0).all() and (info["elapsed_steps"] == 0).all()
    venv.step(zero)
    assert (venv.step(zero)[4]["elapsed_steps"] == 2).all()


@pytest.mark.parametrize("num_workers", fast_only(WORKERS, 1))
def test_same_step_autoreset_and_reset_mask(vector, num_workers):
    venv = vector(num_workers, AutoresetMode.SAME_STEP, num_envs=2, max_episode_steps=2)
    venv.reset(seed=0)
    zero = np.zeros(venv.action_space.shape, np.float32)
    obs, _, _, truncated, info = venv.step(zero)
    obs, _, _, truncated, info = venv.step(zero)
    assert truncated.all() and info["_final_obs"].all() and (info["elapsed_steps"] == 0).all()
    assert info["final_obs"][1].shape == venv.single_observation_space.shape
    assert not np.array_equal(info["final_obs"][1], obs[1])
    assert (info["final_info"]["elapsed_steps"] == 2).all()

    venv = vector(num_workers, AutoresetMode.DISABLED, num_envs=2)
    venv.reset(seed=0)
    venv.step(zero)
    obs, info = venv.reset(seed=10, options={"reset_mask": np.array([False, True])})
    assert info["elapsed_steps"].tolist() == [1, 0]
    reference = GymVectorEnv(gym.make("PickCube-v1", num_envs=2))
    assert np.array_equal(obs[1], reference.reset(seed=10)[0][1])  # env 1 seeded with 10 + 1
    reference.close()


def _first_episode_return(model, venv) -> float:
    """Mean over the envs of the reward summed until each env's first episode ends, acting
    deterministically from seeded resets."""
    venv.seed(123)
    obs = venv.reset()
    total, running = np.zeros(venv.num_envs), np.ones(venv.num_envs, bool)
    while running.any():
        obs, reward, done, _ = venv.step(model.predict(obs, deterministic=True)[0])
        total += reward * running
        running &= ~done
    return float(total.mean())


@slow
@pytest.mark.parametrize("num_workers", WORKERS)
def test_sb3_ppo_learns_to_balance_the_cartpole(num_workers, one_torch_thread):
    """PPO trained through the adapter improves: after 8 rollouts of 1024 env steps its policy
    keeps the pole up (about 1 reward per upright step, 100 at most) at least twice as long as the
    untrained one (about 20)."""
    from stable_baselines3 import PPO

    from envs.adapters.sb3 import SB3VecEnv

    env = gym.make("CartpoleBalanceBenchmark-v1", num_envs=8, num_workers=num_workers, control_mode="pd_joint_vel",
                   max_episode_steps=100)
    venv = SB3VecEnv(env)
    try:
        model = PPO("MlpPolicy", venv, n_steps=1024 // 8, batch_size=256, learning_rate=1e-3, seed=0)
        before = _first_episode_return(model, venv)
        model.learn(8 * 1024)
        after = _first_episode_return(model, venv)
        assert model.num_timesteps == 8 * 1024
        assert after > 2 * before, (before, after)
    finally:
        venv.close()


@slow
def test_sb3_terminal_observation_and_dict_obs():
    from envs.adapters.sb3 import SB3VecEnv

    venv = SB3VecEnv(gym.make("PickCube-v1", num_envs=2, num_workers=2, max_episode_steps=2, obs_mode="state_dict"))
    try:
        assert "agent/qpos" in venv.observation_space.spaces
        venv.seed(0)
        obs = venv.reset()
        assert venv.observation_space.contains({k: v[0] for k, v in obs.items()})
        zero = np.zeros((2, *venv.action_space.shape), np.float32)
        _, _, dones, infos = venv.step(zero)
        assert not dones.any()
        obs, _, dones, infos = venv.step(zero)
        assert dones.all() and all(i["TimeLimit.truncated"] for i in infos)
        assert infos[0]["terminal_observation"]["agent/qpos"].shape == (9,)
        assert venv.get_attr("max_episode_steps") == [2, 2]
    finally:
        venv.close()

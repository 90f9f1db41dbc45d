"""Seeded initial states: every task under a ManiSkill id starts where ManiSkill 3.0.1 starts it,
and env k of a batch starts where a one-env reset with its seed does.

The golden values (tests/data/maniskill_initial_states.json) come from ManiSkill 3.0.1 itself: its
one-env CPU env (`num_envs=1`, physx_cpu) after `reset(seed=0)` and `reset(seed=1)`, recorded once
by `benchmarks/maniskill_initial_states.py` (`dump` in a venv with mani_skill 3.0.1, then
`golden --seeds 0 1`); tests/parity/seeding.py reads them (its docstring lists what they hold).
"""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

import envs
from envs.core.registry import TASKS, default_robot_uids
from tests.marks import fast_only
from tests.parity.seeding import GOLDEN, TOLERANCE, differences, isolated, state

# registered ids that are not ManiSkill's tasks, with the reason
NOT_MANISKILL = {
    "CartpoleBalanceBenchmark-v1": "our own simulator benchmark (1 m pole, its own ranges), not the "
    "cart-pole of ManiSkill's examples/benchmarking that shares its id",
}


def test_every_maniskill_task_has_golden_states():
    """A task registered under a ManiSkill id fails here until its golden states are recorded."""
    covered = {case.split("/")[0] for case in GOLDEN}
    for env_id in envs.env_ids():
        assert env_id in covered or env_id in NOT_MANISKILL, f"{env_id}: record its states with benchmarks/maniskill_initial_states.py"


@pytest.mark.parametrize("case", fast_only(sorted(GOLDEN), "PlugCharger-v1/panda_wristcam", "StackCube-v1/panda_wristcam"))
def test_initial_states_match_maniskill(case):
    far = {name: d for name, d in differences(case).items() if d > TOLERANCE}
    assert not far, f"{case}: differs from ManiSkill's start: {far}"


@pytest.mark.parametrize("env_id", fast_only(envs.env_ids(), "StackPyramid-v1"))
def test_env_k_of_a_batch_starts_as_one_env_with_seed_s_plus_k(env_id):
    seeds = [40, 41, 42]
    robots = default_robot_uids(env_id)
    batch = isolated(env_id, seeds, robots)
    try:
        batch.reset(seed=40)
        for k, s in enumerate(seeds):
            one = isolated(env_id, [s], robots)
            one.reset(seed=s)
            alone, in_batch = state(one.unwrapped, 0), state(batch.unwrapped, k)
            one.close()
            assert alone.keys() == in_batch.keys()
            for name in alone:
                assert torch.equal(alone[name], in_batch[name]), (name, k)
        # a partial reset seeds only the envs it resets, each from its own seed
        batch.reset(seed=[7], options={"env_idx": [1]})
        if not TASKS[env_id].seeded_scene_kwargs([7]):  # else env 1's scene stays seed 41's
            one = isolated(env_id, [7], robots)
            one.reset(seed=7)
            alone = state(one.unwrapped, 0)
            one.close()
            for name, value in state(batch.unwrapped, 1).items():
                assert torch.equal(alone[name], value), name
    finally:
        batch.close()


def test_a_new_env_starts_at_maniskills_build_seeds():
    """ManiSkill builds an env with a reset at seed 2022 + k; so do we, whatever the batch."""
    built = gym.make("PickCube-v1", num_envs=2, physics={"isolated": True})
    again = gym.make("PickCube-v1", num_envs=1, physics={"isolated": True})
    try:
        again.reset(seed=2023)
        assert torch.equal(state(built.unwrapped, 1)["actors/cube"], state(again.unwrapped, 0)["actors/cube"])
    finally:
        built.close()
        again.close()


def test_unseeded_resets_draw_fresh_seeds():
    env = gym.make("PickCube-v1", num_envs=2, physics={"isolated": True})
    try:
        env.reset()
        first = env.unwrapped.episode_seeds.clone()
        cube = env.unwrapped.cube.pose().clone()
        env.reset()
        assert not torch.equal(env.unwrapped.episode_seeds, first) and not torch.equal(env.unwrapped.cube.pose(), cube)
        again = gym.make("PickCube-v1", num_envs=1, physics={"isolated": True})
        again.reset(seed=int(env.unwrapped.episode_seeds[1]))  # an unseeded episode replays from its seed
        assert torch.equal(again.unwrapped.cube.pose()[0], env.unwrapped.cube.pose()[1])
        again.close()
    finally:
        env.close()

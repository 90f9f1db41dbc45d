"""Derived policy inputs (dataset.derived): computed from the observation by policies/data.py, the
same numbers whether the observation comes from a demo file (training) or from the env (acting)."""

import numpy as np
import pytest
import torch

from policies.config import DERIVED_INPUTS, DatasetConfig
from policies.data import DERIVED, DemoData, extract, with_derived
from replay.trajectory import Episode, TrajectoryWriter
from tests.synthetic import episode_obs, jittered_rollout

STEPS = 6


def _rollout(env_id: str, n: int):
    """state_dict observations of n envs over STEPS jittered pd_joint_pos steps, and the actions."""
    return jittered_rollout(env_id, n, STEPS, "state_dict", reset_seed=3, std=0.03)


def _write(path, env_id, frames, actions):
    meta = {"env_info": {"env_id": env_id, "max_episode_steps": 50,
                         "env_kwargs": {"obs_mode": "state_dict", "control_mode": "pd_joint_pos"}}}
    with TrajectoryWriter(path, meta) as w:
        for i in range(len(actions)):
            obs = episode_obs(frames, i)
            z = np.zeros(STEPS, bool)
            w.add(Episode(actions=actions[i].numpy(), terminated=z, truncated=z, success=z, fail=z, env_states={}, seed=i,
                          obs=obs), "pd_joint_pos")


def test_config_names_what_the_transform_computes():
    assert tuple(DERIVED) == DERIVED_INPUTS
    with pytest.raises(ValueError, match="dataset.derived \\['tcp_to_nowhere'\\]; allowed: tcp_to_goal_pos, tcp_to_push_pos"):
        DatasetConfig(obs_mode="state_dict", derived=("tcp_to_nowhere",))


@pytest.mark.parametrize("env_id, names", [("PickCube-v1", ("tcp_to_goal_pos",)), ("PushCube-v1", ("tcp_to_goal_pos", "tcp_to_push_pos"))])
def test_train_and_act_inputs_are_equal(tmp_path, env_id, names):
    """The rows DemoData trains on equal what a policy computes from the env's own observations."""
    frames, actions = _rollout(env_id, 2)
    path = tmp_path / "demo.h5"
    _write(path, env_id, frames, actions)
    cfg = DatasetConfig(obs_mode="state_dict", state_keys=("agent/qpos",), derived=names)
    data = DemoData(str(path), cfg)
    spec = data.spec
    assert spec.derived == names and spec.state_dim == 9 + 3 * len(names)
    for t, frame in enumerate(frames):
        acting = extract(frame, spec)["state"]  # (n, D) from the env's tensors
        training = data.state[data.obs_start + t]  # (n, D) from the file
        assert torch.allclose(acting, training, atol=1e-6)
    last = frames[-1]["extra"]
    tcp, goal = last["tcp_pose"][:, :3], last["goal_pos"]
    leaves = with_derived({f"extra/{k}": v for k, v in last.items()}, names)
    assert torch.allclose(leaves["derived/tcp_to_goal_pos"], goal - tcp)
    if "tcp_to_push_pos" in names:  # 4 cm behind the cube's centre, on the line from the goal
        cube = last["obj_pose"][:, :3]
        away = cube[:, :2] - goal[:, :2]
        away = away / away.norm(dim=1, keepdim=True)
        push = torch.cat((cube[:, :2] + 0.04 * away, cube[:, 2:]), 1)
        assert torch.allclose(leaves["derived/tcp_to_push_pos"], push - tcp, atol=1e-6)


def test_missing_entries_and_flat_state_are_clear_errors(tmp_path):
    frames, actions = _rollout("PickCube-v1", 1)
    path = tmp_path / "demo.h5"
    _write(path, "PickCube-v1", frames, actions)
    with pytest.raises(ValueError, match="tcp_to_push_pos needs the observation entries extra/obj_pose"):
        extract({"extra": {k: v for k, v in frames[0]["extra"].items() if k != "obj_pose"}},
                DemoData.peek(str(path), DatasetConfig(obs_mode="state_dict", derived=("tcp_to_push_pos",)))[0])
    with pytest.raises(ValueError, match="dataset.derived needs named observation entries"):
        DemoData.peek(str(path), DatasetConfig(obs_mode="state", derived=("tcp_to_goal_pos",)))

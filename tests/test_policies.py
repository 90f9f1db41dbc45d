"""Policies: config validation, data windows and normaliser, both policy types on state and image
observations (training, save/load, batch not mutated), evaluation, resume and two-process DDP.
Data is made here: short jittered rollouts of PickCube recorded as a trajectory file."""

from __future__ import annotations

import copy
import dataclasses
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from envs.modes import ControlMode
from policies.cli import main as cli
from policies.config import DatasetConfig
from policies.data import DemoData, ObsSpec, gather, still_dims
from policies.evaluate import evaluate, wilson
from policies.normaliser import Normaliser
from policies.kinds import KINDS as REGISTRY
from policies.kinds import build_policy, load_run
from policies.kinds.act import ACTConfig, ACTPolicy, ensemble
from policies.kinds.diffusion import DiffusionConfig
from replay.trajectory import Episode, TrajectoryFile, TrajectoryWriter
from tests.marks import fast_only, render, slow
from tests.synthetic import episode_obs, jittered_rollout

ROOT = Path(__file__).resolve().parents[1]
STEPS = 12  # actions per recorded episode


def _record(path: Path, episodes: int, visual: bool) -> Path:
    """Jittered pd_joint_pos rollouts of PickCube; visual ones get 16 x 16 rgb images, made up
    (training and loading need the layout, not the rendering)."""
    frames, actions = jittered_rollout("PickCube-v1", episodes, STEPS, "state_dict" if visual else "state")
    rng = np.random.default_rng(0)
    meta = {"env_info": {"env_id": "PickCube-v1", "max_episode_steps": 100,
                         "env_kwargs": {"obs_mode": "rgb" if visual else "state", "control_mode": "pd_joint_pos"}}}
    with TrajectoryWriter(path, meta) as w:
        for i in range(episodes):
            ep_obs = episode_obs(frames, i)
            if visual:
                ep_obs["sensor_data"] = {"base_camera": {"rgb": rng.integers(0, 255, (STEPS + 1, 16, 16, 3), dtype=np.uint8)}}
            n = STEPS
            w.add(Episode(actions=actions[i].numpy(), terminated=np.zeros(n, bool), truncated=np.zeros(n, bool),
                          success=np.zeros(n, bool), fail=np.zeros(n, bool), env_states={}, seed=i, obs=ep_obs), "pd_joint_pos")
    return path


@pytest.fixture(scope="module")
def state_file(tmp_path_factory) -> Path:
    return _record(tmp_path_factory.mktemp("demos") / "state.h5", 4, visual=False)


@pytest.fixture(scope="module")
def rgb_file(tmp_path_factory) -> Path:
    return _record(tmp_path_factory.mktemp("demos") / "rgb.h5", 3, visual=True)


# every policy kind's smallest config (a kind registered in policies.kinds.KINDS without one fails here)
TINY = {
    "bc": dict(hidden=(32,)),
    "diffusion": dict(unet_dims=(16, 32), groups=4, step_embed=16, inference_steps=3, pred_horizon=8, action_horizon=4),
    "act": dict(hidden=16, heads=2, feedforward=32, enc_layers=1, dec_layers=1, cvae_layers=1, latent_dim=4,
                pred_horizon=8, action_horizon=1),
}
KINDS = sorted(REGISTRY)


def test_every_policy_kind_has_a_tiny_config():
    assert sorted(TINY) == KINDS


def _tiny(kind: str, data: Path, out: Path, obs_mode: str = "state", **train):
    run = load_run(kind, data=str(data))
    run.dataset = DatasetConfig(obs_mode=obs_mode, val_fraction=0.25)
    run.policy = type(run.policy)(**TINY[kind], image_features=16, warmup_steps=1)
    run.train = type(run.train)(**{"max_steps": 4, "val_every": 2, "batch_size": 8, "val_batches": 1, "out": str(out),
                                   "name": "run", "progress_bar": False, "accelerator": "cpu", **train})
    run.eval = type(run.eval)(episodes=2, num_envs=2, max_episode_steps=6, final_episodes=2)
    return type(run)(**{f: getattr(run, f) for f in ("data", "dataset", "policy", "train", "eval")})


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_round_trips_config_policy_checkpoint(kind, state_file, tmp_path):
    """Registry-driven: a kind's run config builds the kind's own policy, and a checkpoint written
    from it (Lightning's layout: hyperparameters and state dict) loads back as the same kind,
    config and weights."""
    import lightning as L

    from policies.module import PolicyModule, load_policy

    entry = REGISTRY[kind]
    run = _tiny(kind, state_file, tmp_path)
    assert type(run) is entry.run and type(run.policy) is entry.config and run.to_dict()["kind"] == kind == entry.name
    spec, env = DemoData.peek(run.data, run.dataset)
    module = PolicyModule(run.to_dict(), spec.to_dict(), env)
    assert type(module.policy) is entry.policy and module.run_cfg == run
    path = tmp_path / f"{kind}.ckpt"
    torch.save({"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams),
                "pytorch-lightning_version": L.__version__}, path)
    policy, loaded = load_policy(str(path))
    assert loaded.run_cfg.kind == kind and type(policy) is entry.policy and loaded.run_cfg.policy == run.policy
    for k, v in module.eval_policy.state_dict().items():
        assert torch.equal(policy.state_dict()[k], v), k


# ---- configs --------------------------------------------------------------------------------
def test_configs_validate(tmp_path, state_file, capsys):
    with pytest.raises(ValueError, match="dataset.obs_mode 'depth'; allowed: state, state_dict, rgb, rgbd"):
        DatasetConfig(obs_mode="depth")
    with pytest.raises(ValueError, match="action_horizon"):
        DiffusionConfig(obs_horizon=2, pred_horizon=16, action_horizon=16)
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy:\n  lr: 0.001\n  learning_rate: 0.1\n")
    with pytest.raises(ValueError, match="unknown key policy.learning_rate; allowed: .*lr"):
        load_run("diffusion", bad)
    bad.write_text("train:\n  max_steps: many\n")
    with pytest.raises(ValueError, match="train.max_steps: expected int"):
        load_run("bc", bad)
    assert cli(["train", "diffusion", "--config", str(bad), "--data", str(state_file)]) == 2
    assert cli(["train", "diffusion", "--data", str(state_file), "--policy.beta-schedule", "sigmoid"]) == 2
    assert cli(["train", "transformer", "--data", str(state_file)]) == 2
    assert cli(["train", "act", "--data", str(state_file), "--policy.hidden", "10", "--policy.heads", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "error: train.max_steps: expected int, got 'many'",
        "error: policies train diffusion: policy.beta_schedule 'sigmoid'; allowed: cosine, linear"
        " (see policies train diffusion --help)",
        "error: unknown policy 'transformer'; allowed: bc, diffusion, act",
        "error: policies train act: policy.hidden (10) must be a multiple of policy.heads (4) (see policies train act --help)",
    ]
    for cfg in sorted((ROOT / "configs").glob("*.yaml")):  # every shipped config loads and validates
        kind = cfg.name.split("_")[0]
        run = load_run(kind, cfg, data=str(state_file))
        assert isinstance(type(run)(**{f: getattr(run, f) for f in ("data", "dataset", "policy", "train", "eval")}), REGISTRY[kind].run)


# ---- data -----------------------------------------------------------------------------------
def test_windows_pad_at_episode_edges(state_file):
    data = DemoData(str(state_file), DatasetConfig())
    train, val = data.split(0.25, seed=0)
    assert len(val) == 1 and sorted(train + val) == list(range(4)) and data.split(0.25, seed=0) == (train, val)
    table = data.windows([1], obs_horizon=2, pred_horizon=4)
    o0, a0 = data.obs_start[1], data.act_start[1]
    assert table["obs"][0].tolist() == [o0, o0]  # before the start: the first observation repeated
    assert table["actions"][0].tolist() == [a0, a0, a0 + 1, a0 + 2]
    last = STEPS - 1
    assert table["actions"][-1].tolist() == [a0 + last - 1, a0 + last, a0 + last, a0 + last]  # past the end: the last action
    assert table["past_end"][-1].tolist() == [False, False, True, True]
    store = {"state": data.state, "actions": data.actions}
    still = still_dims({**data.env, "control_mode": "pd_joint_delta_pos"}, data.actions.shape[1])  # as if recorded in a delta mode
    held = gather(store, table, torch.tensor([len(table["obs"]) - 1]), still)["actions"][0]
    assert torch.all(held[2:, :-1] == 0) and torch.all(held[2:, -1] == data.actions[a0 + last, -1])


def test_chunks_past_the_end_hold_still_without_a_gripper(tmp_path):
    """A delta-mode dataset of a gripperless robot (panda_stick, DrawTriangle-v1, pd_ee_delta_pos:
    3 dims, all the arm's): past an episode's end every dim is zero, none repeated as a gripper's
    would be; a robot with a gripper repeats its gripper dim; absolute modes repeat everything."""
    from envs.controllers import ARM_CONTROLLERS
    from envs.robots import get_robot

    n, mode = 2, "pd_ee_delta_pos"
    env = gym.make("DrawTriangle-v1", num_envs=n, obs_mode="state", control_mode=mode)
    obs, _ = env.reset(seed=0)
    assert env.unwrapped.controller.action_dim == env.unwrapped.controller.arm_dim == ARM_CONTROLLERS[ControlMode(mode)].width(get_robot("panda_stick"))
    rng = np.random.default_rng(0)
    observed, actions = [obs], []
    for _ in range(STEPS):
        a = torch.as_tensor(rng.uniform(-0.5, 0.5, (n, 3)), dtype=torch.float32)
        obs, *_ = env.step(a)
        observed.append(obs)
        actions.append(a)
    env.close()
    acts = torch.stack(actions, 1)  # (n, T, 3)
    path = tmp_path / "draw.h5"
    meta = {"env_info": {"env_id": "DrawTriangle-v1", "max_episode_steps": 300,
                         "env_kwargs": {"obs_mode": "state", "control_mode": mode, "robot_uids": "panda_stick"}}}
    z = np.zeros(STEPS, bool)
    with TrajectoryWriter(path, meta) as w:
        for i in range(n):
            w.add(Episode(actions=acts[i].numpy(), terminated=z, truncated=z, success=z, fail=z, env_states={}, seed=i,
                          obs=episode_obs(observed, i)), mode)
    data = DemoData(str(path), DatasetConfig())
    assert data.actions.shape[1] == 3
    still = still_dims(data.env, 3)
    assert still.tolist() == [True, True, True]
    assert still_dims({**data.env, "env_kwargs": {}}, 3).tolist() == [True, True, True]  # robot left out: the task's default
    table = data.windows([0], obs_horizon=2, pred_horizon=4)
    a0, last = data.act_start[0], STEPS - 1
    chunk = gather({"state": data.state, "actions": data.actions}, table, torch.tensor([len(table["obs"]) - 1]), still)["actions"][0]
    assert torch.equal(chunk[:2], data.actions[a0 + last - 1 : a0 + last + 1]) and torch.all(chunk[2:] == 0)
    pick = {"env_id": "PickCube-v1", "env_kwargs": {}}
    assert still_dims({**pick, "control_mode": mode}, 4).tolist() == [True, True, True, False]
    assert still_dims({**pick, "control_mode": "pd_joint_pos"}, 8) is None
    with pytest.raises(ValueError, match="act with 4 dims, not 3"):
        still_dims({**pick, "control_mode": mode}, 3)


def test_perturbed_data_chunks_correct_then_follow_the_plan(state_file, tmp_path):
    """A perturbed conversion (replay convert --action-noise) stores what was executed as actions,
    the corrective label as expert_actions and the noise-free path as reference_actions: a
    training chunk is the label at the current step and the path elsewhere."""
    src = TrajectoryFile(state_file)
    out = tmp_path / "labelled.h5"
    with TrajectoryWriter(out, {"env_info": src.env_info}) as w:
        for e in src:
            w.add(dataclasses.replace(e, expert_actions=e.actions + 0.5, reference_actions=e.actions + 0.25), "pd_joint_pos")
    src.close()
    plain, labelled = DemoData(str(state_file), DatasetConfig()), DemoData(str(out), DatasetConfig())
    assert plain.plan is None
    assert torch.equal(labelled.actions, plain.actions + 0.5) and torch.equal(labelled.plan, plain.actions + 0.25)
    assert torch.equal(labelled.state, plain.state)
    table = labelled.windows([0, 1], obs_horizon=2, pred_horizon=4)
    idx = torch.arange(len(table["obs"]))
    chunk = gather({"state": labelled.state, "actions": labelled.actions, "plan": labelled.plan}, table, idx, None)["actions"]
    truth = plain.actions[table["actions"]]
    assert torch.allclose(chunk[:, 1], truth[:, 1] + 0.5)  # the current step: the corrective label
    assert torch.allclose(chunk[:, [0, 2, 3]], truth[:, [0, 2, 3]] + 0.25)  # the rest: the noise-free path


def test_normaliser_round_trip():
    torch.manual_seed(0)
    actions = torch.rand(500, 4) * torch.tensor([2.0, 10.0, 0.1, 0.0]) - 1  # the last dimension never changes
    states = torch.randn(500, 3) * torch.tensor([5.0, 0.01, 0.0]) + 3
    n = Normaliser(4, 3).fit(actions, states)
    a = n.normalise_action(actions)
    assert a.min() >= -1 - 1e-5 and a.max() <= 1 + 1e-5
    torch.testing.assert_close(n.unnormalise_action(a), actions)
    torch.testing.assert_close(n.unnormalise_state(n.normalise_state(states)), states)
    copy_ = Normaliser(4, 3)
    copy_.load_state_dict(n.state_dict())
    torch.testing.assert_close(copy_.normalise_state(states), n.normalise_state(states))


@pytest.mark.parametrize("obs_mode, kind", fast_only([(o, k) for o in ("state", "rgb") for k in KINDS],
                                                     *[("state", k) for k in KINDS], ("rgb", "bc")))
def test_loss_does_not_mutate_batch(kind, obs_mode, state_file, rgb_file, tmp_path):
    run = _tiny(kind, rgb_file if obs_mode == "rgb" else state_file, tmp_path, obs_mode)
    data = DemoData(run.data, run.dataset)
    policy = build_policy(data.spec, run.policy).train()
    table = data.windows([0, 1], run.policy.obs_horizon, run.policy.pred_horizon)
    batch = gather({"state": data.state, "images": data.images, "actions": data.actions}, table, torch.arange(6), None)
    before = copy.deepcopy(batch)
    policy.loss(batch).backward()
    for k in before:
        assert torch.equal(batch[k], before[k]), k
    assert set(batch) == ({"state", "actions", "images"} if obs_mode == "rgb" else {"state", "actions"})


# ---- training, checkpoints, evaluation --------------------------------------------------------
@slow
@pytest.mark.parametrize("kind", KINDS)
def test_train_checkpoint_eval(kind, state_file, tmp_path, capsys):
    from policies.module import load_policy
    from policies.train import train

    results = train(_tiny(kind, state_file, tmp_path))
    out = Path(results["run"])
    assert results["steps"] == 4 and len(results["eval_history"]) == 2 and results["final"]["episodes"] == 2
    for name in ("config.yaml", "metrics.csv", "results.json", "curves.png", "checkpoints/best.ckpt", "checkpoints/last.ckpt"):
        assert (out / name).is_file(), name
    assert list((out / "tb").glob("events.out.tfevents.*"))
    ckpt = torch.load(out / "checkpoints/last.ckpt", weights_only=False)
    hp = ckpt["hyper_parameters"]
    assert hp["env"]["env_id"] == "PickCube-v1" and hp["env"]["control_mode"] == "pd_joint_pos"
    assert hp["spec"]["obs_mode"] == "state" and hp["run"]["kind"] == kind
    assert any(k.startswith("policy.normaliser.") for k in ckpt["state_dict"])
    assert any(k.startswith("ema.") for k in ckpt["state_dict"]) == (getattr(load_run(kind).policy, "ema_decay", 0.0) > 0)

    # a loaded checkpoint acts exactly as the policy that was saved
    a, _ = load_policy(str(out / "checkpoints/last.ckpt"))
    b, _ = load_policy(str(out / "checkpoints/last.ckpt"))
    env = gym.make("PickCube-v1", num_envs=3, obs_mode="state", control_mode="pd_joint_pos")
    obs, _ = env.reset(seed=5)
    env.close()
    assert not torch.equal(a.normaliser.state_std, torch.ones_like(a.normaliser.state_std))  # stats came along
    acts = []
    for p in (a, b):
        torch.manual_seed(len(acts))  # the global generator does not matter: reset's seed does
        p.reset(seed=1)
        acts.append(torch.stack([p.predict_action(obs) for _ in range(3)]))
    assert acts[0].shape == (3, 3, 8)
    assert torch.equal(acts[0], acts[1])

    # evaluation through the CLI with several envs
    report = tmp_path / "eval.json"
    assert cli(["eval", str(out / "checkpoints/best.ckpt"), "--episodes", "3", "--num-envs", "3", "--max-episode-steps", "5",
                "--device", "cpu", "--json", str(report)]) == 0
    import json

    result = json.loads(report.read_text())
    assert result["episodes"] == 3 and len(result["success_once_ci95"]) == 2
    stages = result["stages"]  # PickCube's flags, each the share of episodes where it was ever set
    assert set(stages) == {"is_obj_placed", "is_robot_static", "is_grasped"}
    assert stages["is_robot_static"] >= result["success_once"] and stages["is_obj_placed"] >= result["success_once"]
    # the executed part of each chunk can be chosen at evaluation, within what the policy predicts
    horizon = min(4, a.cfg.pred_horizon - a.cfg.obs_horizon + 1)
    assert cli(["eval", str(out / "checkpoints/best.ckpt"), "--episodes", "2", "--num-envs", "2", "--max-episode-steps", "3",
                "--device", "cpu", "--action-horizon", str(horizon), "--json", str(report)]) == 0
    assert json.loads(report.read_text())["action_horizon"] == horizon
    assert cli(["eval", str(out / "checkpoints/best.ckpt"), "--device", "cpu", "--action-horizon", "99"]) == 2
    # files that are not our checkpoints: one error line each
    capsys.readouterr()
    foreign = [tmp_path / "text.ckpt", tmp_path / "pickle.ckpt", tmp_path / "data.ckpt"]
    foreign[0].write_text("not a checkpoint\n")
    torch.save({"state_dict": {}}, foreign[1])
    foreign[2].write_bytes((out / "checkpoints/best.ckpt").read_bytes()[:200])  # cut short
    for f in foreign:
        assert cli(["eval", str(f), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith(f"error: {f}: not a checkpoint of `policies train` (") for line, f in zip(err, foreign))


class _CartpoleFeedback(torch.nn.Module):
    """A scripted policy behind the policy interface: the cart-pole feedback law (velocity target
    from the pole's lean and the cart's state) scaled by `gain`; gain 0 leaves the pole to fall."""

    spec = ObsSpec("state", 4, 1)

    def __init__(self, gain: float):
        super().__init__()
        self.gain = gain

    def reset(self, seed: int | None = None) -> None:
        pass

    def predict_action(self, obs: torch.Tensor) -> torch.Tensor:  # obs (N, 4): cart, lean, their rates
        return self.gain * (10 * obs[:, 1:2] + obs[:, 3:4] + 0.5 * obs[:, :1] + obs[:, 2:3]) / 2


def test_evaluate_counts_successes_of_a_policy_that_solves_the_task():
    """The evaluator's numbers on a setup with a known answer: the feedback law balances every
    pole to the step limit (success at the end, first reached at the last step); without it
    every pole falls (no success, the interval's upper end below one)."""
    env = {"env_id": "CartpoleBalanceBenchmark-v1", "env_kwargs": {}, "control_mode": "pd_joint_vel", "max_episode_steps": 60}
    solved = evaluate(_CartpoleFeedback(1.0), env, episodes=4, num_envs=2)
    assert solved["episodes"] == 4 and solved["success_at_end"] == 1.0 and solved["success_once"] == 1.0
    assert solved["episode_len"] == 60 and solved["success_at_end_ci95"] == list(wilson(4, 4))
    fallen = evaluate(_CartpoleFeedback(0.0), env, episodes=4, num_envs=2)
    assert fallen["success_at_end"] == 0.0 and fallen["success_once"] == 0.0 and fallen["success_once_ci95"][1] < 1.0


def test_temporal_ensembling_weights_overlapping_chunks(state_file):
    """ACT acting: a chunk every action_horizon steps; the action at step t is the average of every
    live chunk's action for t with weights exp(-m * i), i = 0 the oldest chunk (ACT's rule)."""
    data = DemoData(str(state_file), DatasetConfig())
    cfg = ACTConfig(**TINY["act"], ensemble_decay=0.5)  # chunks of 8, one per step
    policy = build_policy(data.spec, cfg).eval()
    assert isinstance(policy, ACTPolicy)
    chunks = [torch.randn(2, 8, 8) for _ in range(10)]  # what the network "predicts" at steps 0..9
    calls = iter(chunks)
    policy.predict_chunk = lambda obs: next(calls)
    policy.reset(seed=0)
    obs = data.state[:2]
    for t in range(10):
        got = policy.predict_action(obs)
        live = [(s, chunks[s][:, t - s]) for s in range(t + 1) if t - s < 8]  # oldest first
        w = torch.exp(-0.5 * torch.arange(len(live), dtype=torch.float32))
        want = sum(wi * a for wi, (_, a) in zip(w, live)) / w.sum()
        torch.testing.assert_close(got, want)
        assert len(live) == min(t + 1, 8)
    assert torch.equal(ensemble([torch.ones(1, 3), torch.zeros(1, 3)], 0.0), torch.full((1, 3), 0.5))
    heavier_old = ensemble([torch.ones(1, 1), torch.zeros(1, 1)], 1.0)
    torch.testing.assert_close(heavier_old, torch.full((1, 1), 1 / (1 + math.exp(-1))))

    # every action_horizon steps: chunks from steps 0, 3, 6, ... overlap fewer times
    policy = build_policy(data.spec, dataclasses.replace(cfg, action_horizon=3)).eval()
    calls = iter(chunks)
    policy.predict_chunk = lambda obs: next(calls)
    policy.reset(seed=0)
    for t in range(7):
        got = policy.predict_action(obs)
    live = [chunks[0][:, 6], chunks[1][:, 3], chunks[2][:, 0]]  # the chunks made at steps 0, 3 and 6
    w = torch.exp(-0.5 * torch.arange(3, dtype=torch.float32))
    torch.testing.assert_close(got, sum(wi * a for wi, a in zip(w, live)) / w.sum())
    # off: the chunk's actions executed in turn, as the other policies do
    policy = build_policy(data.spec, dataclasses.replace(cfg, temporal_ensemble=False, action_horizon=3)).eval()
    calls = iter(chunks)
    policy.predict_chunk = lambda obs: next(calls)
    policy.reset(seed=0)
    got = [policy.predict_action(obs) for _ in range(4)]
    assert torch.equal(got[2], chunks[0][:, 2]) and torch.equal(got[3], chunks[1][:, 0])


@slow
@pytest.mark.parametrize("kind", ["diffusion", "act"])
def test_reevaluating_a_checkpoint_gives_the_same_episodes(kind, state_file, tmp_path):
    """Sampling noise (diffusion's initial noise, ACT's sampled latent) is seeded by the evaluation
    seed: the same checkpoint on the same seeds gives the same actions and per-episode results."""
    import json

    from policies.module import load_policy
    from policies.train import train

    run = _tiny(kind, state_file, tmp_path, max_steps=2, val_every=2)
    if kind == "act":
        run.policy = dataclasses.replace(run.policy, sample_latent=True)
    run.eval = type(run.eval)(episodes=0, final_episodes=0)
    ckpt = train(run)["checkpoint"]
    policy, _ = load_policy(ckpt)
    env = gym.make("PickCube-v1", num_envs=2, obs_mode="state", control_mode="pd_joint_pos")
    obs, _ = env.reset(seed=0)
    env.close()
    chunks = {}
    for seed in (7, 7, 8):
        torch.manual_seed(len(chunks))
        policy.reset(seed)
        chunks.setdefault(seed, []).append(policy.predict_chunk(policy.observe(obs)))
    assert torch.equal(chunks[7][0], chunks[7][1]) and not torch.equal(chunks[7][0], chunks[8][0])
    results = []
    for i in range(2):
        torch.manual_seed(100 + i)
        out = tmp_path / f"eval{i}.json"
        assert cli(["eval", ckpt, "--episodes", "3", "--num-envs", "2", "--max-episode-steps", "6", "--device", "cpu",
                    "--json", str(out)]) == 0
        results.append(json.loads(out.read_text()))
    assert len(results[0]["per_episode"]["length"]) == 3
    assert results[0]["per_episode"] == results[1]["per_episode"]
    assert results[0]["success_at_end"] == results[1]["success_at_end"]


@slow
def test_state_dict_policy_sees_only_its_state_keys(rgb_file, tmp_path):
    from policies.module import load_policy
    from policies.train import train

    run = _tiny("bc", rgb_file, tmp_path, "state_dict", max_steps=2, val_every=2)
    run.dataset = DatasetConfig(obs_mode="state_dict", val_fraction=0.25, state_keys=("extra/goal_pos", "agent/qpos"))
    results = train(run)  # its evaluation acts in a state_dict env
    assert results["final"]["episodes"] == 2
    policy, module = load_policy(results["checkpoint"])
    assert module.spec.state_paths == ("agent/qpos", "extra/goal_pos") and module.spec.state_dim == 12
    env = gym.make("PickCube-v1", num_envs=2, obs_mode="state_dict", control_mode="pd_joint_pos")
    obs, _ = env.reset(seed=0)
    policy.reset()
    assert policy.predict_action(obs).shape == (2, 8)
    env.close()
    with pytest.raises(ValueError, match="name none of the data's entries"):
        DemoData.peek(str(rgb_file), DatasetConfig(obs_mode="state_dict", state_keys=("extra/nothing",)))
    with pytest.raises(ValueError, match="use dataset.obs_mode state_dict"):
        DemoData.peek(str(rgb_file), DatasetConfig(obs_mode="state"))


@slow
def test_rgb_policy_trains_and_acts(rgb_file, tmp_path):
    from policies.module import load_policy
    from policies.train import train

    run = _tiny("diffusion", rgb_file, tmp_path, "rgb", max_steps=2, val_every=2)
    run.eval = type(run.eval)(episodes=0, final_episodes=0)
    results = train(run)
    policy, module = load_policy(results["checkpoint"])
    assert module.spec.cameras == ("base_camera",) and module.spec.image_shape == (3, 16, 16)
    assert "agent/qpos" in module.spec.state_paths and "extra/goal_pos" in module.spec.state_paths
    assert "extra/obj_pose" not in module.spec.state_paths  # no privileged object pose next to the images
    obs = {"agent": {"qpos": torch.zeros(2, 9), "qvel": torch.zeros(2, 9)},
           "extra": {"tcp_pose": torch.zeros(2, 7), "goal_pos": torch.zeros(2, 3), "obj_pose": torch.zeros(2, 7)},
           "sensor_data": {"base_camera": {"rgb": torch.zeros(2, 16, 16, 3, dtype=torch.uint8)}}}
    policy.reset()
    assert policy.predict_action(obs).shape == (2, 8)


@render  # its evaluation acts in an rgb env
@slow
@pytest.mark.parametrize("kind", KINDS)
def test_aux_targets_teach_the_image_encoder(kind, rgb_file, tmp_path):
    """dataset.aux_keys: recorded entries the image features learn to predict in training (the
    current step's), a loss that reaches the camera encoder; acting never reads them."""
    from policies.module import load_policy
    from policies.train import train

    run = _tiny(kind, rgb_file, tmp_path, "rgb", max_steps=2, val_every=2)
    run.dataset = DatasetConfig(obs_mode="rgb", val_fraction=0.25, aux_keys=("extra/tcp_to_obj_pos",))
    data = DemoData(run.data, run.dataset)
    assert data.spec.aux_paths == ("extra/tcp_to_obj_pos",) and data.spec.aux_dim == 3
    assert "extra/tcp_to_obj_pos" not in data.spec.state_paths  # a target, not an input
    import h5py

    with h5py.File(rgb_file) as f:
        recorded = torch.as_tensor(f["traj_0/obs/extra/tcp_to_obj_pos"][()])
    torch.testing.assert_close(data.aux[: STEPS + 1], recorded)
    table = data.windows([0], run.policy.obs_horizon, run.policy.pred_horizon)
    store = {"state": data.state, "images": data.images, "actions": data.actions, "aux": data.aux}
    batch = gather(store, table, torch.arange(5), None)
    torch.testing.assert_close(batch["aux"], data.aux[table["obs"][:5, -1]])

    policy = build_policy(data.spec, run.policy).train()
    policy.normaliser.fit(data.actions, data.state, data.aux)
    feats = policy.features(batch)
    aux = policy.aux_loss(feats, batch)
    assert aux > 0
    aux.backward()
    assert policy.encoder.cams[0].net[0][0].weight.grad.abs().sum() > 0  # down to the first convolution
    no_aux = dataclasses.replace(run.policy, aux_weight=0.0)
    assert build_policy(data.spec, no_aux).aux_loss(feats, batch) == 0

    results = train(run)
    policy, module = load_policy(results["checkpoint"])
    assert module.spec.aux_dim == 3 and policy.normaliser.aux_std.abs().sum() > 0
    obs = {"agent": {"qpos": torch.zeros(2, 9), "qvel": torch.zeros(2, 9)},  # no tcp_to_obj_pos: not needed to act
           "extra": {"tcp_pose": torch.zeros(2, 7), "goal_pos": torch.zeros(2, 3)},
           "sensor_data": {"base_camera": {"rgb": torch.zeros(2, 16, 16, 3, dtype=torch.uint8)}}}
    policy.reset()
    assert policy.predict_action(obs).shape == (2, 8)
    with pytest.raises(ValueError, match="need an image obs mode"):
        DemoData.peek(str(rgb_file), DatasetConfig(obs_mode="state_dict", aux_keys=("extra/obj_pose",)))
    with pytest.raises(ValueError, match=r"aux_keys \['extra/nothing'\] name none"):
        DemoData.peek(str(rgb_file), DatasetConfig(obs_mode="rgb", aux_keys=("extra/nothing",)))


@slow
def test_all_episodes_for_training_and_state_noise(state_file, tmp_path):
    """dataset.val_fraction 0 trains on every episode (the evaluation still picks the best
    checkpoint); policy.state_noise perturbs the inputs in training only."""
    from policies.train import train

    run = _tiny("diffusion", state_file, tmp_path, max_steps=2, val_every=2)
    run.dataset = DatasetConfig(val_fraction=0.0)
    run.policy.state_noise = 0.1
    results = train(run)
    assert results["final"]["episodes"] == 2 and len(results["eval_history"]) == 1
    assert "val/loss" not in (Path(results["run"]) / "metrics.csv").read_text().splitlines()[0]
    with pytest.raises(ValueError, match="dataset.val_fraction 0 leaves no validation loss"):
        type(run)(data=run.data, dataset=run.dataset, policy=run.policy, train=run.train, eval=type(run.eval)(episodes=0))

    data = DemoData(str(state_file), DatasetConfig())
    policy = build_policy(data.spec, run.policy)
    batch = {"state": data.state[:4, None].repeat(1, 2, 1)}
    policy.train()
    assert not torch.equal(policy.features(batch), policy.features(batch))
    policy.eval()
    assert torch.equal(policy.features(batch), policy.features(batch))


def test_a_fresh_run_never_picks_up_an_old_one(state_file, tmp_path):
    """A run directory holding a checkpoint (also only the one written on Ctrl-C) is refused
    without --train.resume; with no evaluation, the data must leave validation episodes."""
    from policies.train import train

    run = _tiny("bc", state_file, tmp_path, max_steps=2, val_every=2)
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    (tmp_path / "run" / "checkpoints" / "interrupted.ckpt").write_bytes(b"")
    with pytest.raises(ValueError, match="already holds a run"):
        train(run)
    run = _tiny("bc", state_file, tmp_path / "other", max_steps=2, val_every=2)
    run.eval = type(run.eval)(episodes=0, final_episodes=0)
    run.dataset = DatasetConfig(val_fraction=0.25, max_episodes=1)
    with pytest.raises(ValueError, match="leaves none of the 1 episodes for validation"):
        train(run)
    assert not (tmp_path / "other").exists()


def test_video_without_an_mp4_writer_fails_before_training(state_file, tmp_path, no_mp4_writer):
    from policies.train import train

    run = _tiny("bc", state_file, tmp_path, max_steps=2, val_every=2)
    run.eval = type(run.eval)(episodes=2, num_envs=2, video=str(tmp_path / "videos"))
    with pytest.raises(ValueError, match="imageio-ffmpeg"):
        train(run)
    assert not (tmp_path / "run").exists() and not (tmp_path / "videos").exists()


@slow
def test_resume_continues(state_file, tmp_path):
    from policies.train import train

    run = _tiny("bc", state_file, tmp_path, max_steps=2, val_every=2)
    run.eval = type(run.eval)(episodes=2, num_envs=2, max_episode_steps=3, final_episodes=0)
    train(run)
    with pytest.raises(ValueError, match="already holds a run"):
        train(run)
    run.train.max_steps, run.train.resume = 4, True
    resumed = train(run)
    assert resumed["steps"] == 4
    assert [h["step"] for h in resumed["eval_history"]] == [2, 4]  # the evaluation before the resume is kept
    assert (Path(tmp_path) / "run" / "metrics.part0.csv").is_file()


@slow
def test_ddp_two_processes_agree(state_file, tmp_path):
    """Two CPU processes (gloo): after a few steps both hold the same weights; only rank 0 writes."""
    script = tmp_path / "ddp_run.py"
    script.write_text(textwrap.dedent(f"""
        import hashlib, os, sys
        import lightning as L
        import torch
        sys.path.insert(0, {str(ROOT)!r})
        from tests.test_policies import _tiny
        from policies.train import train

        class Digest(L.Callback):
            def on_train_end(self, trainer, module):
                h = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in module.policy.parameters())).hexdigest()
                open(os.path.join({str(tmp_path)!r}, f"rank{{trainer.global_rank}}.txt"), "w").write(h)

        if __name__ == "__main__":
            torch.set_num_threads(1)
            run = _tiny("bc", {str(state_file)!r}, {str(tmp_path / "out")!r}, devices=2, strategy="ddp", max_steps=3, val_every=3)
            run.eval = type(run.eval)(episodes=0, final_episodes=0)
            train(run, callbacks=[Digest()])
    """))
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    digests = [(tmp_path / f"rank{r}.txt").read_text() for r in (0, 1)]
    assert digests[0] == digests[1]
    out = tmp_path / "out" / "run"
    assert len(list((out / "tb").glob("events.out.tfevents.*"))) == 1
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["best.ckpt", "last.ckpt"]
    assert (out / "results.json").is_file() and (out / "metrics.csv").is_file()

"""replay: conversion between obs and control modes, split/subset/merge, bad input.

The data is made here: a handful of PickCube demonstrations from the demos generator."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from demos.generate import GenerateConfig, generate
from envs.core.pose import axis_angle_to_quat, euler_xyz_to_quat, quat_angle, quat_mul
from envs.modes import ControlMode, ObsMode
from replay.cli import main
from replay.control import (
    ActionNoise,
    ConvertLimits,
    ee_delta_pos_action,
    ee_delta_pose_action,
    ee_pose_action,
    joint_delta_pos_action,
    joint_delta_pos_vel_action,
    joint_pos_action,
    joint_pos_vel_action,
    joint_vel_action,
    reference_targets,
    saturate,
    tracker,
)
from replay.convert import ConvertConfig, run
from replay.trajectory import Episode, TrajectoryError, TrajectoryFile, TrajectoryWriter, merge_files, read_meta, split_file, subset_file
from replay.verify import verify_file
from tests.marks import render, slow

N_DEMOS = 4


@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> Path:
    """N_DEMOS PickCube demonstrations (pd_joint_pos). torch runs one thread meanwhile, as the
    `replay` command does: the second only spins on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("replay") / "pick.h5"
    generate(GenerateConfig(task="PickCube", n=N_DEMOS, out=out, num_envs=N_DEMOS, workers=1))
    yield out
    torch.set_num_threads(threads)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copy(src, dst)
    shutil.copy(src.with_suffix(".json"), dst.with_suffix(".json"))
    return dst


# ---- the pure conversion functions ---------------------------------------------------------------


def _poses(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    pos = torch.rand(n, 3, generator=g, dtype=torch.float64)
    quat = axis_angle_to_quat(torch.rand(n, 3, generator=g, dtype=torch.float64) * 2 - 1)
    return torch.cat((pos, quat), 1)


def test_joint_actions_reach_the_reference():
    cur, ref = torch.rand(5, 7, dtype=torch.float64), torch.rand(5, 7, dtype=torch.float64)
    assert torch.equal(joint_pos_action(ref), ref)
    assert torch.allclose(cur + joint_delta_pos_action(cur, ref, 0.1) * 0.1, ref)
    assert torch.allclose(cur + joint_vel_action(cur, ref, 20.0, 1.0) / 20.0, ref)
    assert torch.equal(joint_pos_vel_action(ref), torch.cat((ref, torch.zeros_like(ref)), 1))
    assert torch.allclose(cur + joint_delta_pos_vel_action(cur, ref, 0.1)[:, :7] * 0.1, ref)


def test_reference_of_a_state_without_drive_targets(make):
    """A ManiSkill file's states have no drive targets: a pd_joint_pos source's arm targets after
    each step are its actions (the env's own drive targets), not the qpos, which lags while the
    arm moves; other sources fall back to the qpos."""
    from envs.core.tree import stack, to_numpy

    env = make("PickCube-v1", num_envs=1, obs_mode="none", control_mode="pd_joint_pos").unwrapped
    env.reset(seed=0)
    arm = env.agent.arm
    states = [to_numpy(env.get_state_dict())]
    q0 = states[0]["articulations"]["panda"][0, 13 : 13 + env.agent.dof]
    actions = np.stack([np.concatenate((q0[arm] + 0.05 * (t + 1), [1.0])) for t in range(4)]).astype(np.float32)  # (T, 8)
    for a in actions:
        env.step(torch.from_numpy(a)[None])
        states.append(to_numpy(env.get_state_dict()))
    states = {k: {n: v[:, 0] for n, v in g.items()} for k, g in stack(states).items()}  # (T + 1, D) per name
    truth = states["drive_targets"]["panda"][:, arm]
    theirs = {k: v for k, v in states.items() if k != "drive_targets"}
    z = np.zeros(len(actions), bool)
    ep = Episode(actions, z, z, z, z, theirs, seed=0)
    ref = reference_targets(ep, "panda", arm, env.agent.dof, ControlMode.PD_JOINT_POS)
    assert np.allclose(ref, truth, atol=1e-6)
    lagging = reference_targets(ep, "panda", arm, env.agent.dof)
    assert np.allclose(lagging, theirs["articulations"]["panda"][:, 13:20]) and np.abs(lagging[1:] - truth[1:]).max() > 0.01


def test_ee_delta_pose_action_inverts_the_controller_step():
    cur, ref = _poses(6, 0), _poses(6, 1)
    a = ee_delta_pose_action(cur, ref, pos_scale=0.1, rot_scale=0.1)
    # what PDEEDeltaPose does with the action: translate, then turn by the XYZ Euler angles
    # action * (-0.1) (ManiSkill scales rotations by their lower bound) on the left
    pos = cur[:, :3] + a[:, :3] * 0.1
    rot = quat_mul(euler_xyz_to_quat(a[:, 3:] * -0.1), cur[:, 3:])
    assert torch.allclose(pos, ref[:, :3])
    assert quat_angle(rot, ref[:, 3:]).max() < 1e-6
    assert torch.allclose(ee_delta_pos_action(cur, ref, 0.1), a[:, :3])
    absolute = ee_pose_action(ref)
    assert torch.allclose(absolute[:, :3], ref[:, :3])
    assert quat_angle(euler_xyz_to_quat(absolute[:, 3:]), ref[:, 3:]).max() < 1e-6


@pytest.mark.parametrize("mode", ["pd_ee_target_delta_pose", "pd_ee_delta_pose", "pd_ee_pose"])
def test_ee_action_moves_the_controller_target_onto_the_reference(make, mode):
    """Live: the action computed from where the mode steps from puts the controller's target
    pose on the reference (measured-pose modes: from the TCP measured before the step)."""
    env = make("PickCube-v1", num_envs=2, control_mode=mode)
    env.reset(seed=0)
    base = env.unwrapped
    track = tracker(ControlMode(mode), base.agent, base.controller.arm, base.control_freq)
    ref_q = base.agent.arm_qpos.double() + 0.3 * torch.tensor([0.05, -0.04, 0.03, 0.06, -0.05, 0.04, 0.05], dtype=torch.float64)
    arm, hit = saturate(track.action(track.start(), ref_q).float(), ControlMode(mode))
    assert not hit.any()
    env.step(torch.cat((arm, torch.ones(2, 1)), 1))
    ref = base.agent.kinematics.tcp_pose(ref_q)
    target = base.controller.arm.target_pose.double()
    assert (target[:, :3] - ref[:, :3]).norm(dim=1).max() < 1e-5
    assert quat_angle(target[:, 3:].float(), ref[:, 3:].float()).max() < 2e-3


def test_saturate_keeps_direction_and_flags_rows():
    a = torch.tensor([[0.5, 0.0, 0.0, 0.1, 0.1, 0.1], [3.0, -1.5, 0.0, 0.0, 0.0, 2.0]])
    out, hit = saturate(a, ControlMode.PD_EE_DELTA_POSE)
    assert hit.tolist() == [False, True]
    assert torch.equal(out[0], a[0])
    assert torch.allclose(out[1, :3], torch.tensor([1.0, -0.5, 0.0]))
    assert torch.allclose(out[1, 3:], torch.tensor([0.0, 0.0, 1.0]))
    same, hit = saturate(a, ControlMode.PD_EE_POSE)  # absolute: the controller bounds it
    assert torch.equal(same, a) and not hit.any()


# ---- observation conversion ------------------------------------------------------------------------


@slow
def test_state_obs_conversion_reproduces_recorded_states(demos, tmp_path):
    out = tmp_path / "state.h5"
    report = run(ConvertConfig(file=demos, obs="state", out=out))
    assert (report.converted, report.total, report.failed) == (N_DEMOS, N_DEMOS, [])
    src, dst = TrajectoryFile(demos), TrajectoryFile(out)
    assert dst.env_info["env_kwargs"]["obs_mode"] == "state"
    for a_entry, b_entry in zip(src.episodes, dst.episodes):
        a, b = src.episode(a_entry["episode_id"]), dst.episode(b_entry["episode_id"])
        np.testing.assert_array_equal(a.actions, b.actions)
        for g in a.env_states:
            for name in a.env_states[g]:
                np.testing.assert_array_equal(a.env_states[g][name], b.env_states[g][name])
        assert b.obs.shape[0] == a.length + 1 and b.obs.dtype == np.float32
    assert demos.stat().st_size == src.path.stat().st_size  # the input is untouched


@render
@slow
def test_rgbd_obs_conversion_matches_stepped_rendering(demos, tmp_path, make):
    out = tmp_path / "rgbd.h5"
    report = run(ConvertConfig(file=demos, obs="rgbd", count=2, cam_width=32, cam_height=24, out=out, use_env_states=True))
    assert report.converted == 2
    meta = read_meta(out)
    assert meta["obs_info"]["depth_unit"] == "mm"
    assert meta["env_info"]["env_kwargs"]["sensor_configs"] == {"width": 32, "height": 24}
    ep = TrajectoryFile(demos).episode(0)
    conv = TrajectoryFile(out).episode(0)
    rgb = conv.obs["sensor_data"]["base_camera"]["rgb"]
    assert rgb.shape == (ep.length + 1, 24, 32, 3) and rgb.dtype == np.uint8
    assert conv.obs["sensor_data"]["base_camera"]["depth"].dtype == np.int16
    with h5py.File(out) as f:  # compressed, one chunk holds the whole episode (a band of rows)
        d = f["traj_0/obs/sensor_data/base_camera/rgb"]
        assert d.compression == "gzip" and d.chunks[0] == ep.length + 1
    # the same images as an env stepped with the recorded actions from the initial state
    env = make("PickCube-v1", num_envs=1, obs_mode="rgbd", control_mode="pd_joint_pos",
               sensor_configs={"width": 32, "height": 24}).unwrapped
    env.reset(seed=ep.seed)
    env.set_state_dict({g: {k: torch.from_numpy(v[:1]) for k, v in d.items()} for g, d in ep.env_states.items()})
    for t in range(3):
        obs, *_ = env.step(torch.from_numpy(ep.actions[t : t + 1]))
    np.testing.assert_array_equal(obs["sensor_data"]["base_camera"]["rgb"][0].numpy(), conv.obs["sensor_data"]["base_camera"]["rgb"][3])
    np.testing.assert_array_equal(obs["sensor_data"]["base_camera"]["depth"][0].numpy(), conv.obs["sensor_data"]["base_camera"]["depth"][3])


# ---- control conversion ---------------------------------------------------------------------------------


def _final_object_poses(path: Path) -> list[np.ndarray]:
    f = TrajectoryFile(path)
    return [f.episode(e["episode_id"], with_obs=False).env_states["actors"]["cube"][-1, :7] for e in f.episodes]


@slow
def test_control_round_trip_keeps_final_object_poses(demos, tmp_path):
    delta = tmp_path / "delta.h5"
    report = run(ConvertConfig(file=demos, control="pd_ee_delta_pose", obs="state", out=delta, num_envs=3))
    assert report.converted == N_DEMOS, report.lines()
    assert read_meta(delta)["env_info"]["env_kwargs"]["control_mode"] == "pd_ee_delta_pose"
    ok, total, failed = verify_file(delta)  # the stored actions replay open loop to success
    assert (ok, total) == (N_DEMOS, N_DEMOS), failed
    back = tmp_path / "back.h5"
    assert run(ConvertConfig(file=delta, control="pd_joint_pos", obs="none", out=back)).converted == N_DEMOS
    assert verify_file(back)[0] == N_DEMOS
    for a, b in zip(_final_object_poses(demos), _final_object_poses(back)):
        assert np.linalg.norm(a[:3] - b[:3]) < 0.02
        assert float(quat_angle(torch.from_numpy(a[3:]), torch.from_numpy(b[3:]))) < math.radians(10)


@slow
@pytest.mark.parametrize("mode", ["pd_joint_delta_pos", "pd_ee_pose"])
def test_other_control_modes_convert(demos, tmp_path, mode):
    out = tmp_path / f"{mode}.h5"
    report = run(ConvertConfig(file=demos, control=mode, count=2, out=out))
    assert report.converted == 2, report.lines()
    assert verify_file(out)[0] == 2


@slow
def test_perturbed_conversion_records_corrective_labels(demos, tmp_path):
    """--action-noise: the executed (perturbed) actions are stored and replay; expert_actions are
    the tracker's labels, which undo the previous step's perturbation; batching does not change the noise.
    A target-based mode, whose labels step from the previous target alone (a measured-state mode's
    also see the simulated state, which batching perturbs at rounding level)."""
    clean, noisy, noisy2 = tmp_path / "clean.h5", tmp_path / "noisy.h5", tmp_path / "noisy2.h5"
    assert run(ConvertConfig(file=demos, control="pd_ee_target_delta_pos", out=clean)).converted == N_DEMOS
    noise = ActionNoise(0.03, seed=1)
    report = run(ConvertConfig(file=demos, control="pd_ee_target_delta_pos", obs="state", out=noisy, noise=noise, allow_failure=True))
    run(ConvertConfig(file=demos, control="pd_ee_target_delta_pos", obs="state", out=noisy2, noise=noise, allow_failure=True, num_envs=1))
    assert read_meta(noisy)["conversion"]["action_noise"]["std"] == 0.03
    assert report.converted >= N_DEMOS - 1, report.lines()
    ok, total, failed = verify_file(noisy)  # the perturbed actions, as executed, reproduce each outcome
    assert total == N_DEMOS and ok == N_DEMOS, failed
    c, x, x2 = TrajectoryFile(clean), TrajectoryFile(noisy), TrajectoryFile(noisy2)
    moved = undone = 0.0
    for i in range(N_DEMOS):
        ref, ep, ep2 = c.episode(i), x.episode(i), x2.episode(i)
        assert np.array_equal(ep.actions, ep2.actions) and np.array_equal(ep.expert_actions, ep2.expert_actions)
        assert ep.expert_actions.shape == ep.actions.shape == ep.reference_actions.shape and ep.obs.shape[0] == ep.length + 1
        assert np.array_equal(ep.actions[:, -1], ep.expert_actions[:, -1])  # the gripper is never perturbed
        drift = ep.actions[:, :3] - ep.expert_actions[:, :3]
        k = min(20, ref.length - 1)  # before the grasp: no corrective steps, both runs at the same source step
        moved += np.abs(drift[: k - 1]).mean()
        undone += np.abs(ep.expert_actions[1:k, :3] - ref.actions[1:k, :3] + drift[: k - 1]).mean()
        undone += np.abs(ep.reference_actions[:k, :3] - ref.actions[:k, :3]).mean()  # the path's own steps
    assert moved > 0.005  # the noise did perturb the runs
    assert undone < 0.1 * moved  # each label takes back the previous step's perturbation
    for f in (c, x, x2):
        f.close()


@slow
def test_failures_are_reported_not_dropped(demos, tmp_path):
    bad = _copy(demos, tmp_path / "bad.h5")
    with h5py.File(bad, "r+") as f:
        f["traj_1/actions"][:, -1] = 1.0  # the gripper never closes: no grasp, no success
    out = tmp_path / "out.h5"
    report = run(ConvertConfig(file=bad, control="pd_ee_delta_pose", out=out))
    assert report.converted == N_DEMOS - 1
    assert [i for i, _ in report.failed] == [1]
    assert "tracking lost at step" in report.failed[0][1]
    assert len(read_meta(out)["episodes"]) == N_DEMOS - 1
    kept = tmp_path / "kept.h5"
    report = run(ConvertConfig(file=bad, control="pd_ee_delta_pose", out=kept, allow_failure=True))
    eps = read_meta(kept)["episodes"]
    assert len(eps) == N_DEMOS and not eps[1]["success"] and eps[1]["info"]["source_episode_id"] == 1
    # an obs-only conversion replays the actions first: the corrupt episode is reported too
    report = run(ConvertConfig(file=bad, obs="state", out=tmp_path / "obs.h5"))
    assert [i for i, _ in report.failed] == [1] and "do not reproduce" in report.failed[0][1]
    assert "left the recorded states at step" in report.failed[0][1]


def _every(src: Path, dst: Path, k: int) -> Path:
    """`src` with only every k-th recorded state kept (and the actions leading to them): each
    step then asks for k steps' worth of motion."""
    f = TrajectoryFile(src)
    with TrajectoryWriter(dst, {x: v for x, v in f.meta.items() if x != "episodes"}) as w:
        for entry in f.episodes:
            e = f.episode(entry["episode_id"])
            keep = np.arange(0, e.length + 1, k)
            e.env_states = {g: {n: v[keep] for n, v in d.items()} for g, d in e.env_states.items()}
            steps = keep[1:] - 1
            e.actions, e.success, e.fail = e.actions[steps], e.success[steps], e.fail[steps]
            e.terminated, e.truncated, e.rewards = e.terminated[steps], e.truncated[steps], e.rewards[steps]
            w.add(e, entry["control_mode"])
    return dst


@slow
def test_saturated_steps_get_bounded_corrections(demos, tmp_path):
    fast = _every(demos, tmp_path / "fast.h5", 4)
    limits = ConvertLimits(max_corrections=30)
    out = tmp_path / "o.h5"
    report = run(ConvertConfig(file=fast, control="pd_joint_delta_pos", out=out, limits=limits, allow_failure=True))
    assert report.total == N_DEMOS
    corrections = [e["info"]["corrective_steps"] for e in read_meta(out)["episodes"]]
    assert max(corrections) > 0 and max(corrections) <= 30
    report = run(ConvertConfig(file=fast, control="pd_joint_delta_pos", out=tmp_path / "none.h5",
                               limits=ConvertLimits(max_corrections=0), allow_failure=True))
    assert all(e["info"]["corrective_steps"] == 0 for e in read_meta(tmp_path / "none.h5")["episodes"])


# ---- whole-file operations -----------------------------------------------------------------------------


@slow
def test_split_subset_merge_keep_metadata(demos, tmp_path):
    src_meta = read_meta(demos)
    train, val, n_train, n_val = split_file(demos, 0.25, seed=0, out_dir=tmp_path)
    assert (n_train, n_val) == (3, 1)
    t_meta, v_meta = read_meta(train), read_meta(val)
    assert t_meta["env_info"] == v_meta["env_info"] == src_meta["env_info"]
    assert t_meta["split"]["part"] == "train" and v_meta["split"]["seed"] == 0
    sources = sorted(e["source"]["episode_id"] for e in t_meta["episodes"] + v_meta["episodes"])
    assert sources == list(range(N_DEMOS))  # disjoint, complete, episode-level
    (tmp_path / "again").mkdir()
    again = split_file(demos, 0.25, seed=0, out_dir=tmp_path / "again")[1]
    assert [e["source"] for e in read_meta(again)["episodes"]] == [e["source"] for e in v_meta["episodes"]]  # seeded
    sub = tmp_path / "sub.h5"
    assert subset_file(demos, sub, count=2, success_only=True) == 2
    s_meta = read_meta(sub)
    assert s_meta["env_info"] == src_meta["env_info"] and s_meta["versions"] == src_meta["versions"]
    assert [e["seed"] for e in s_meta["episodes"]] == [e["seed"] for e in src_meta["episodes"][:2]]
    merged = tmp_path / "merged.h5"
    assert merge_files([train, val], merged) == N_DEMOS
    m_meta = read_meta(merged)
    assert m_meta["env_info"] == src_meta["env_info"]
    ep = TrajectoryFile(merged).episode(0)
    np.testing.assert_array_equal(ep.actions, TrajectoryFile(train).episode(0).actions)
    assert verify_file(sub)[0] == 2


@slow
def test_one_merge_behind_both_commands(demos, tmp_path, capsys):
    """`replay merge` and `demos merge` are one merge: OUT must be *.h5 and no input, an existing
    OUT needs --overwrite, inputs must share format version, env id and env kwargs."""
    from demos.cli import main as demos_main

    a = _copy(demos, tmp_path / "a.h5")
    older = _copy(demos, tmp_path / "older.h5")
    meta = read_meta(demos)
    meta["format_version"] = 1
    older.with_suffix(".json").write_text(json.dumps(meta))
    out = tmp_path / "m.h5"
    for command in (main, demos_main):
        assert command(["merge", str(out), str(a), str(demos)]) == 0 and len(read_meta(out)["episodes"]) == 2 * N_DEMOS
        capsys.readouterr()
        for argv, says in ((["merge", str(out), str(a)], "--overwrite"), (["merge", str(tmp_path / "m.txt"), str(a)], ".h5"),
                           (["merge", str(a), str(a), str(demos)], "must not be one of the inputs"),
                           (["merge", str(tmp_path / "n.h5"), str(a), str(older)], "format version 1 vs 2")):
            assert command(argv) == 2, argv
            assert says in capsys.readouterr().err, argv
        assert command(["merge", str(out), str(a), "--overwrite"]) == 0 and len(read_meta(out)["episodes"]) == N_DEMOS
        out.unlink()
        out.with_suffix(".json").unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.h5", "a.json", "older.h5", "older.json"]


def test_only_the_trajectory_package_knows_the_hdf5_layout():
    """One owner of the file format: no other module of the product imports h5py or names an
    episode group."""
    root = Path(__file__).resolve().parents[1]
    owner = root / "replay" / "trajectory"
    layout = re.compile(r"^\s*(?:import|from) h5py\b|traj_\{|[\"']traj_", re.M)
    found = [str(p.relative_to(root)) for pkg in ("envs", "demos", "replay", "policies") for p in sorted((root / pkg).rglob("*.py"))
             if owner not in p.parents and layout.search(p.read_text())]
    assert found == []


@slow
def test_cli_convert_and_split(demos, tmp_path, capsys):
    src = _copy(demos, tmp_path / "in.h5")
    assert main(["convert", str(src), "--control-mode", "pd_ee_delta_pose", "--count", "2", "--no-progress"]) == 0
    out = tmp_path / "in.none.pd_ee_delta_pose.h5"
    assert out.is_file() and "converted 2/2" in capsys.readouterr().out
    assert main(["split", str(src), "--val", "0.5", "--seed", "1"]) == 0
    assert (tmp_path / "in.train.h5").is_file() and (tmp_path / "in.val.h5").is_file()


@slow
def test_env_states_are_maniskills_and_restore_without_our_extras(demos, make):
    """Stored env states carry ManiSkill's names and widths (format_version 2); the same states
    without our drive targets (as a ManiSkill file holds them) restore the same scene."""
    assert read_meta(demos)["format_version"] == 2
    ep = TrajectoryFile(demos).episode(0)
    env = make("PickCube-v1", num_envs=1, control_mode="pd_joint_pos").unwrapped
    assert {k: v.shape[1] for k, v in ep.env_states["articulations"].items()} == {"panda": 13 + 2 * 9}
    assert {"cube", "table-workspace"} <= set(ep.env_states["actors"]) and ep.env_states["drive_targets"]["panda"].shape[1] == 9
    t = ep.length // 2
    row = {g: {k: torch.from_numpy(v[t : t + 1]) for k, v in d.items()} for g, d in ep.env_states.items()}
    env.reset(seed=ep.seed)
    env.set_state_dict({g: row[g] for g in ("actors", "articulations")})
    ours = env.get_state_dict()
    for g in ("actors", "articulations"):
        for k, v in row[g].items():
            assert torch.equal(ours[g][k], v), k
    assert torch.equal(ours["drive_targets"]["panda"], row["articulations"]["panda"][:, 13:22])


# ---- bad input: one line on stderr, non-zero exit, nothing written ------------------------------------


def _bad_inputs(demos: Path, tmp: Path) -> dict[str, list[str]]:
    (tmp / "notes.txt").write_text("hello")
    (tmp / "junk.h5").write_bytes(b"not hdf5")
    (tmp / "junk.json").write_text(json.dumps(read_meta(demos)))
    mismatch = _copy(demos, tmp / "mismatch.h5")
    meta = read_meta(demos)
    meta["episodes"][0]["elapsed_steps"] += 1
    mismatch.with_suffix(".json").write_text(json.dumps(meta))
    missing = _copy(demos, tmp / "missing.h5")
    meta = read_meta(demos)
    meta["episodes"].append({**meta["episodes"][-1], "episode_id": 99})
    missing.with_suffix(".json").write_text(json.dumps(meta))
    unregistered = _copy(demos, tmp / "unreg.h5")
    meta = read_meta(demos)
    meta["env_info"]["env_id"] = "NoSuchTask-v1"
    unregistered.with_suffix(".json").write_text(json.dumps(meta))
    older = _copy(demos, tmp / "older.h5")
    meta = read_meta(demos)
    meta["format_version"] = 1  # env states of before ManiSkill's layout
    older.with_suffix(".json").write_text(json.dumps(meta))
    good = str(_copy(demos, tmp / "good.h5"))
    return {
        "older format": ["convert", str(older), "--obs-mode", "state"],
        "no such file": ["convert", str(tmp / "absent.h5"), "--obs-mode", "state"],
        "not a trajectory": ["convert", str(tmp / "notes.txt"), "--obs-mode", "state"],
        "not hdf5": ["convert", str(tmp / "junk.h5"), "--obs-mode", "state"],
        "length mismatch": ["convert", str(mismatch), "--obs-mode", "state"],
        "missing episode": ["convert", str(missing), "--obs-mode", "state"],
        "unregistered": ["convert", str(unregistered), "--obs-mode", "state"],
        "unknown obs": ["convert", good, "--obs-mode", "thermal"],
        "unknown control": ["convert", good, "--control-mode", "pd_teleport"],
        "unknown control mode": ["convert", good, "--control-mode", "pd_joint_teleport"],
        "split fraction": ["split", good, "--val", "1.5"],
        "noise without control conversion": ["convert", good, "--obs-mode", "state", "--action-noise", "0.1"],
        "negative noise": ["convert", good, "--control-mode", "pd_ee_delta_pos", "--action-noise", "-1"],
    }


@slow
def test_bad_input_one_line_nothing_written(demos, tmp_path, capsys):
    cases = _bad_inputs(demos, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for name, argv in cases.items():
        assert main(argv + ["--no-progress"] if argv[0] == "convert" else argv) == 2, name
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err, (name, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("name, content, says", [
    ("absent.h5", None, "no such file"),
    ("notes.txt", b"hello", "not a readable HDF5 file"),
    ("junk.h5", b"not hdf5", "not a readable HDF5 file"),
    ("empty.h5", "hdf5", "not a trajectory file"),
])
def test_foreign_files_raise_one_value_error_naming_the_file(tmp_path, name, content, says):
    """Every reader refuses a missing or foreign file with a TrajectoryError that starts with the
    path; it is a ValueError, which is what the CLIs turn into their one `error:` line."""
    path = tmp_path / name
    if content == "hdf5":
        h5py.File(path, "w").close()
    elif content is not None:
        path.write_bytes(content)
    for read in (TrajectoryFile, read_meta):
        with pytest.raises(ValueError) as e:
            read(path)
        assert type(e.value) is TrajectoryError and str(e.value).startswith(f"{path}: ") and says in str(e.value)


@slow
def test_worker_processes_give_the_same_episodes(demos, tmp_path):
    one, two = tmp_path / "one.h5", tmp_path / "two.h5"
    run(ConvertConfig(file=demos, control="pd_ee_delta_pose", count=2, num_envs=1, out=one))
    report = run(ConvertConfig(file=demos, control="pd_ee_delta_pose", count=2, num_envs=1, workers=2, out=two))
    assert report.converted == 2
    a, b = TrajectoryFile(one), TrajectoryFile(two)
    for i in range(2):
        np.testing.assert_array_equal(a.episode(i).actions, b.episode(i).actions)
    assert [e["info"]["source_episode_id"] for e in b.episodes] == [0, 1]


@slow
def test_interrupted_conversion_resumes_without_duplicates_or_gaps(demos, tmp_path, monkeypatch, capsys):
    import replay.convert as convert

    whole, out = tmp_path / "whole.h5", tmp_path / "out.h5"
    run(ConvertConfig(file=demos, control="pd_ee_delta_pose", num_envs=1, out=whole))
    real = convert._run_batches

    def interrupted(cfg, batches, on_done):
        gen = real(cfg, batches, on_done)
        for k in range(2):
            yield next(gen)
        raise KeyboardInterrupt

    monkeypatch.setattr(convert, "_run_batches", interrupted)
    argv = ["convert", str(demos), "--control-mode", "pd_ee_delta_pose", "--num-envs", "1", "--out", str(out), "--no-progress"]
    assert main(argv) == 130 and "continue with --resume" in capsys.readouterr().err
    part = tmp_path / "out.pending.h5"
    assert not out.exists() and len(read_meta(part)["episodes"]) == 2
    assert main(argv) == 2 and "pass --resume" in capsys.readouterr().err  # not overwritten by accident
    assert main(argv + ["--resume", "--control-mode", "pd_ee_delta_pos"]) == 2  # other settings: refused
    assert "resume with the same settings" in capsys.readouterr().err and len(read_meta(part)["episodes"]) == 2
    monkeypatch.setattr(convert, "_run_batches", real)
    assert main(argv + ["--resume"]) == 0 and not part.exists()
    a, b = TrajectoryFile(whole), TrajectoryFile(out)
    assert [e["info"]["source_episode_id"] for e in b.episodes] == list(range(N_DEMOS))
    assert [e["episode_id"] for e in b.episodes] == list(range(N_DEMOS))
    for i in range(N_DEMOS):
        np.testing.assert_array_equal(a.episode(i).actions, b.episode(i).actions)


@slow
def test_nothing_converted_writes_nothing(demos, tmp_path, capsys):
    bad = _copy(demos, tmp_path / "bad.h5")
    with h5py.File(bad, "r+") as f:
        f["traj_0/actions"][:, -1] = 1.0  # never grasps
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["convert", str(bad), "--control-mode", "pd_ee_delta_pose", "--count", "1", "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "episode 0: " in captured.out and "nothing written" in captured.err  # the reason is named
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@slow
def test_episodes_bring_their_own_geometry(demos, make):
    from replay.convert import _make

    cfg = ConvertConfig(file=demos, obs="state")
    cfg.env_id = "PegInsertionSide-v1"  # only the env build is under test here
    ep = TrajectoryFile(demos).episode(0, with_obs=False)
    eps = [Episode(**{**vars(ep), "scene_kwargs": {"geometry_seed": [s]}}) for s in (7, 3)]
    env = _make(cfg, ObsMode.NONE, eps)
    try:
        for k, s in enumerate((7, 3)):
            one = make("PegInsertionSide-v1", num_envs=1, geometry_seed=[s]).unwrapped
            assert torch.equal(env.unwrapped.peg_half_sizes[k], one.peg_half_sizes[0])
    finally:
        env.close()


def test_images_compressed_where_rendered_read_back_identical(tmp_path):
    """precompress encodes image arrays as their HDF5 chunks (shuffle + deflate, edge chunks
    zero-filled); written with write_direct_chunk they read back equal, in a file of the same
    size and layout as when h5py compresses them itself."""
    import h5py

    from replay.trajectory import CompressedImages, precompress
    from replay.trajectory.episode import image_storage
    from replay.trajectory.layout import write_tree

    rng = np.random.default_rng(0)
    tree = {"sensor_data": {"c": {"rgb": rng.integers(0, 255, (9, 24, 32, 3), dtype=np.uint8),
                              "depth": rng.integers(0, 3000, (9, 24, 32, 1)).astype(np.int16)}},
            "pointcloud": {"rgb": rng.integers(0, 255, (9, 40, 3), dtype=np.uint8), "xyzw": rng.random((9, 40, 4)).astype(np.float32)},
            "agent": {"qpos": rng.random((9, 4)).astype(np.float32)}}
    packed = precompress(tree)
    assert isinstance(packed["sensor_data"]["c"]["depth"], CompressedImages) and isinstance(packed["agent"]["qpos"], np.ndarray)
    for name, t in (("plain", tree), ("packed", packed)):
        with h5py.File(tmp_path / f"{name}.h5", "w") as f:
            write_tree(f.create_group("obs"), t, image_storage)
    with h5py.File(tmp_path / "plain.h5") as a, h5py.File(tmp_path / "packed.h5") as b:
        for path in ("sensor_data/c/rgb", "sensor_data/c/depth", "pointcloud/rgb", "pointcloud/xyzw", "agent/qpos"):
            x, y = a["obs"][path], b["obs"][path]
            assert np.array_equal(x[()], y[()]) and (x.chunks, x.compression, x.shuffle) == (y.chunks, y.compression, y.shuffle), path
    assert (tmp_path / "plain.h5").stat().st_size == (tmp_path / "packed.h5").stat().st_size

"""Trajectory files in ManiSkill 3.0.1's layout (tests/maniskill_files.py writes them with h5py from
one of ours) go through every tool: demos info/verify, replay convert to another control and obs
mode, policies train with evaluation on, policies eval. A file of a task we lack, or without what
our tools read, is one error line and exit 2 with nothing written. Files we write keep to what
ManiSkill's loader and replay tool read."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import pytest
import torch

from demos.cli import main as demos_main
from demos.generate import GenerateConfig, generate
from policies.cli import main as policies_main
from replay.cli import main as replay_main
from replay.trajectory.maniskill import MANISKILL_ENV_KWARGS, OWN_KWARGS_KEY
from replay.trajectory import TrajectoryFile, read_meta, sidecar_path
from tests.maniskill_files import to_maniskill

N = 2


@pytest.fixture(scope="module")
def ours(tmp_path_factory) -> Path:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("ours") / "pick.h5"
    generate(GenerateConfig(task="PickCube", n=N, out=out, num_envs=N, workers=1))
    yield out
    torch.set_num_threads(threads)


@pytest.fixture
def theirs(ours, tmp_path) -> Path:
    """Our demos as ManiSkill's motion-planning script writes them (pd_joint_pos, obs none)."""
    return to_maniskill(ours, tmp_path / "20250101_000000.h5")


def _err(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_info_verify_note_once(theirs, capsys):
    assert demos_main(["info", str(theirs)]) == 0
    out, err = capsys.readouterr()
    assert f"episodes    {N}" in out and "Traceback" not in err
    notes = err.strip().splitlines()
    assert len(notes) == 1 and notes[0].startswith(f"note: {theirs.name} was written by ManiSkill")
    for key in ("render_mode", "sensor_configs.shader_pack", "human_render_camera_configs", "viewer_camera_configs"):
        assert key in notes[0]
    meta = read_meta(theirs)
    # ManiSkill's one CPU env simulates alone at the origin: so does each of ours in a replay
    assert meta["env_info"]["env_kwargs"] == {"obs_mode": "none", "control_mode": "pd_joint_pos", "sim_backend": "physx_cpu",
                                              "physics": {"isolated": True}}
    assert [e["reset_kwargs"] for e in meta["episodes"]] == [{"seed": e["episode_seed"]} for e in meta["episodes"]]
    assert demos_main(["verify", str(theirs)]) == 0
    assert f"{N}/{N} episodes reproduce" in capsys.readouterr().out


def test_convert_train_eval(theirs, tmp_path, capsys):
    """The round trip: a ManiSkill file -> pd_ee_delta_pos with state obs -> BC with evaluation on
    -> evaluation of its checkpoint; and a file as ManiSkill's replay tool writes it (num_envs,
    reward_mode in its env kwargs) trains the same way."""
    conv = tmp_path / "conv.h5"
    assert replay_main(["convert", str(theirs), "--control-mode", "pd_ee_delta_pos", "--obs-mode", "state", "--out", str(conv), "--no-progress"]) == 0
    assert f"converted {N}/{N} episodes (100.0%)" in capsys.readouterr().out
    f = TrajectoryFile(conv)
    assert f.env_info["env_kwargs"]["control_mode"] == "pd_ee_delta_pos" and all(e["success"] for e in f.episodes)
    f.close()
    replayed = to_maniskill(conv, tmp_path / "conv.ms.h5", replayed=True)
    assert {"num_envs", "reward_mode"} <= set(json.loads(sidecar_path(replayed).read_text())["env_info"]["env_kwargs"])
    run = tmp_path / "runs"
    argv = ["train", "bc", "--data", str(replayed), "--train.max-steps", "2", "--train.val-every", "2", "--train.batch-size", "8",
            "--train.val-batches", "1", "--train.out", str(run), "--train.name", "r", "--train.no-progress-bar",
            "--train.accelerator", "cpu", "--eval.episodes", "2", "--eval.num-envs", "2", "--eval.max-episode-steps", "4",
            "--eval.final-episodes", "2", "--dataset.val-fraction", "0.5", "--policy.hidden", "16"]
    assert policies_main(argv) == 0
    assert "Traceback" not in capsys.readouterr().err
    results = json.loads((run / "r/results.json").read_text())
    assert results["final"]["episodes"] == 2
    assert policies_main(["eval", str(run / "r/checkpoints/last.ckpt"), "--episodes", "2", "--num-envs", "2", "--max-episode-steps", "4"]) == 0
    assert "2 episodes" in capsys.readouterr().out


def test_convert_to_camera_obs(theirs, tmp_path, capsys):
    out = tmp_path / "rgb.h5"
    assert replay_main(["convert", str(theirs), "--obs-mode", "rgb", "--count", "1", "--out", str(out), "--no-progress",
                        "--cam-width", "32", "--cam-height", "32"]) == 0
    f = TrajectoryFile(out)
    ep = f.episode(0)
    assert ep.obs["sensor_data"]["base_camera"]["rgb"].shape == (ep.length + 1, 32, 32, 3)
    f.close()


def test_episodes_past_the_time_limit_convert(ours, tmp_path, capsys):
    """ManiSkill's motion-planning demos step on after their env truncated (PickCube: 70-odd steps
    of a 50-step limit): a conversion follows them to their end, the truncated flags still at the limit."""
    src = to_maniskill(ours, tmp_path / "long.h5", max_episode_steps=20)
    out = tmp_path / "long.ee.h5"
    assert replay_main(["convert", str(src), "--control-mode", "pd_ee_delta_pos", "--count", "1", "--out", str(out), "--no-progress"]) == 0
    assert "converted 1/1 episodes (100.0%)" in capsys.readouterr().out
    f = TrajectoryFile(out)
    ep = f.episode(0)
    assert ep.length > 20 and ep.success[-1] and not ep.truncated[:19].any() and ep.truncated[19:].all()
    f.close()


def _outputs(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


@pytest.mark.parametrize("damage", ["task", "env_states", "actions"])
def test_unreadable_file_is_one_error(theirs, tmp_path, capsys, damage):
    meta = json.loads(sidecar_path(theirs).read_text())
    if damage == "task":
        meta["env_info"]["env_id"] = "PickSingleYCB-v1"
        sidecar_path(theirs).write_text(json.dumps(meta))
        want = "PickSingleYCB-v1"
    else:
        with h5py.File(theirs, "a") as f:
            del f[f"traj_1/{damage}"]
        want = f"traj_1/{damage}"
    before = _outputs(tmp_path)
    for main, argv in ((demos_main, ["info", str(theirs)]), (demos_main, ["verify", str(theirs)]),
                       (replay_main, ["convert", str(theirs), "--control-mode", "pd_ee_delta_pos", "--no-progress"]),
                       (policies_main, ["train", "bc", "--data", str(theirs)])):
        assert main(argv) == 2, argv
        err = _err(capsys)
        assert len(err) == 1 and err[0].startswith("error:") and want in err[0], (argv, err)
    assert _outputs(tmp_path) == before


def test_our_files_keep_to_maniskills_layout(ours):
    """What ManiSkill's gym.make, dataset loader and replay tool (--use-env-states) read from a file:
    env kwargs its BaseEnv takes, per episode obs/actions/terminated/truncated, env states under
    its names (the robot by its uid), reset kwargs that its env.reset takes."""
    side = json.loads(sidecar_path(ours).read_text())
    kwargs = side["env_info"]["env_kwargs"]
    assert set(kwargs) <= MANISKILL_ENV_KWARGS
    assert side["env_info"][OWN_KWARGS_KEY] == {"physics": {"isolated": True}}
    assert read_meta(ours)["env_info"]["env_kwargs"]["physics"] == {"isolated": True}  # ours again when read
    with h5py.File(ours, "r") as f:
        for e in side["episodes"]:
            g = f[f"traj_{e['episode_id']}"]
            assert {"obs", "actions", "terminated", "truncated", "success", "env_states"} <= set(g)
            assert set(g["env_states/articulations"]) == {"panda"}
            assert {"table-workspace", "cube", "goal_site"} <= set(g["env_states/actors"])
            assert set(e["reset_kwargs"]) == {"seed"} and e["reset_kwargs"]["seed"] == e["episode_seed"]


def test_scene_kwargs_apart_from_reset_kwargs(tmp_path):
    """An episode's scene kwargs (PegInsertionSide's geometry seed) are written beside its reset
    kwargs, which stay what ManiSkill's env.reset takes; an entry that kept them inside
    reset_kwargs["env_kwargs"] reads the same."""
    import numpy as np

    from replay.trajectory import Episode, TrajectoryWriter

    path, t = tmp_path / "w.h5", 3
    z = np.zeros(t, bool)
    ep = Episode(np.zeros((t, 8), np.float32), z, z, np.ones(t, bool), z, {"actors": {"a": np.zeros((t + 1, 13), np.float32)}},
                 seed=5, reset_kwargs={"seed": 5}, scene_kwargs={"geometry_seed": [5]})
    with TrajectoryWriter(path, {"env_info": {"env_id": "PegInsertionSide-v1", "env_kwargs": {}, "max_episode_steps": 9}}) as w:
        w.add(ep, "pd_joint_pos")
    side = json.loads(sidecar_path(path).read_text())
    entry = side["episodes"][0]
    assert entry["reset_kwargs"] == {"seed": 5} and entry["scene_kwargs"] == {"geometry_seed": [5]}
    back = TrajectoryFile(path).episode(0, with_obs=False)
    assert back.reset_kwargs == {"seed": 5} and back.scene_kwargs == {"geometry_seed": [5]}
    del entry["scene_kwargs"]
    entry["reset_kwargs"] = {"seed": 5, "env_kwargs": {"geometry_seed": [2022]}}
    sidecar_path(path).write_text(json.dumps(side))
    back = TrajectoryFile(path).episode(0, with_obs=False)
    assert back.reset_kwargs == {"seed": 5} and back.scene_kwargs == {"geometry_seed": [2022]}


def test_peg_insertion_side_scene_from_each_seed(ours, tmp_path, capsys):
    """ManiSkill's one env of PegInsertionSide redraws peg and box from each reset's seed, so a file
    it wrote reads with each episode's scene built from its seed, as our generator builds it
    (`seeded_scene_kwargs`); a batched recording's scenes are not in its file: a note says so."""
    from envs.core.registry import TASKS
    from envs.tasks.peg_insertion_side import draw_geometry

    theirs = to_maniskill(ours, tmp_path / "peg.h5", env_id="PegInsertionSide-v1")
    episodes = read_meta(theirs)["episodes"]
    assert [e["scene_kwargs"] for e in episodes] == [{"geometry_seed": [e["episode_seed"]]} for e in episodes]
    env = TASKS["PegInsertionSide-v1"](num_envs=2, obs_mode="none", **TASKS["PegInsertionSide-v1"].seeded_scene_kwargs([4, 9]))
    try:
        for k, s in enumerate((4, 9)):  # ManiSkill's geometry of reset(seed=s)
            length, radius, _ = draw_geometry(s)
            assert env.peg_half_sizes[k].tolist() == pytest.approx([length, radius, radius])
    finally:
        env.close()
    side = json.loads(sidecar_path(theirs).read_text())
    side["env_info"]["env_kwargs"]["num_envs"] = 4
    sidecar_path(theirs).write_text(json.dumps(side))
    capsys.readouterr()
    meta = read_meta(theirs)
    assert all("scene_kwargs" not in e for e in meta["episodes"])
    assert "physics" not in meta["env_info"]["env_kwargs"]  # a batched recording's envs shared a scene
    assert "batched" in capsys.readouterr().err

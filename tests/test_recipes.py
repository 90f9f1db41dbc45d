"""Training recipes (policies/recipe.py): every shipped recipe loads and validates with its policy
config, names its files by its settings and keeps evaluation seeds off the demo seeds; a tiny
recipe builds its dataset (demos, conversion, a perturbed copy, merge), trains and evaluates end
to end on the CPU, and building again reuses every file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from policies import recipe as recipes
from policies.cli import main as cli
from policies.kinds import KINDS
from policies.train import FINAL_SEED_OFFSET
from replay.trajectory import read_meta
from tests.marks import slow

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "configs" / "recipes").glob("*.yaml"))


def test_shipped_recipes_load_and_evaluate_on_fresh_seeds():
    assert len(SHIPPED) >= 8
    datasets = {}
    for path in SHIPPED:
        r = recipes.load_recipe(path)
        assert r.name == path.stem and r.policy in KINDS and r.config_path.is_file()
        run = r.run_config()
        assert isinstance(run, KINDS[r.policy].run)
        assert run.eval.max_episode_steps > 0, f"{path.name}: the evaluation length is the recipe's to say"
        assert run.train.name == path.stem
        # demos reach success within an evaluation episode (then hold)
        assert r.demos.max_episode_steps == run.eval.max_episode_steps + r.demos.hold, path.name
        assert run.dataset.obs_mode == r.conversion.obs, path.name
        # the demos' seeds (n successes from `seed`, the failed attempts between them) stay far below evaluation's
        assert r.demos.seed + 20 * r.demos.n < min(run.eval.seed, run.eval.seed + FINAL_SEED_OFFSET)
        if run.dataset.mode.visual:  # cameras plus what ManiSkill's camera modes expose: no object state
            assert set(run.dataset.state_keys) <= {"agent", "extra"} and not run.dataset.aux_keys
        datasets.setdefault(recipes.files(r).dataset, set()).add((r.task, r.demos.robot_uids, r.conversion.obs))
    assert all(len(v) == 1 for v in datasets.values())  # one file name, one dataset


def test_file_names_spell_the_settings(tmp_path):
    r = recipes.Recipe(task="PickCube-v1", data_dir=str(tmp_path), perturbed=recipes.PerturbSettings(0.1, (1, 2, 3)))
    f = recipes.files(r)
    assert f.raw.name == "PickCube.pd_joint_pos.n100-seed0.hold25-speed0.5.h5"
    assert f.clean.name == "PickCube.pd_joint_pos.n100-seed0.hold25-speed0.5.state.pd_ee_delta_pos.h5"
    assert [p.name for p in f.noisy] == [f"{f.clean.stem}.noise0.1-{s}.h5" for s in (1, 2, 3)]
    assert f.dataset == f.merged and f.merged.name.endswith(".noise0.1-seeds1-3.h5")
    other = dataclasses.replace(r, demos=recipes.DemoSettings(robot_uids="panda_wristcam", max_episode_steps=200),
                                conversion=recipes.ConversionSettings(obs="rgb", cam_width=64, cam_height=64),
                                perturbed=recipes.PerturbSettings(0.1, (5, 7)))
    g = recipes.files(other)
    assert g.raw.name == "PickCube.panda_wristcam.pd_joint_pos.n100-seed0.hold25-speed0.5-steps200.h5"
    assert g.clean.name.endswith(".rgb.pd_ee_delta_pos.64x64.h5") and g.merged.name.endswith(".noise0.1-seeds5_7.h5")
    clean_only = dataclasses.replace(r, perturbed=recipes.PerturbSettings())
    assert recipes.files(clean_only).dataset == recipes.files(clean_only).clean


def test_bad_recipes_are_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    for text, message in [
        ("task: PickCube-v1\ndemos: {n: 4, hod: 3}\n", "unknown key demos.hod; allowed: "),
        ("task: PickCube-v1\npolicy: transformer\n", "policy 'transformer'; allowed: bc, diffusion, act"),
        ("task: PickCube-v1\nrun: {policy: {unet_dim: [8]}}\n", "unknown key policy.unet_dim"),
        ("task: PickCube-v1\nconfig: configs/nothing.yaml\n", "config configs/nothing.yaml: no such file"),
        ("task: PickCube-v1\ndemos: {n: [4}\n", r"not valid YAML \(line 2, column 14\): "),
        ("task:\tPickCube-v1\n", r"not valid YAML \(line 1, column 6\): found character '\\t'"),
        ("demos: {n: 4}\n", "task is required"),
    ]:
        bad.write_text(text)
        with pytest.raises(ValueError, match=message):
            recipes.load_recipe(bad)
    assert cli(["recipe", "build", str(bad)]) == 2
    assert cli(["recipe", "train", str(bad)]) == 2
    assert cli(["recipe", "build", str(tmp_path / "none.yaml")]) == 2
    binary, tab = tmp_path / "binary.yaml", tmp_path / "tab.yaml"
    binary.write_bytes(b"\x89HDF\r\n\x1a\n\xff\xfe")
    tab.write_text("policy:\tnothing\n")
    assert cli(["recipe", "build", str(binary)]) == 2
    assert cli(["train", "diffusion", "--config", str(tab), "--data", str(tmp_path / "d.h5")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {bad}: task is required (an env id such as PickCube-v1)",
                   "error: policies recipe: unknown action 'train'; allowed: build, run (see policies recipe --help)",
                   f"error: {tmp_path / 'none.yaml'}: no such recipe",
                   f"error: {binary}: not a text file",
                   f"error: {tab}: not valid YAML (line 1, column 8): found character '\\t' that cannot start any token"]


def test_evaluation_seeds_must_not_be_demo_seeds(tmp_path):
    from tests.synthetic import write_ours

    data = write_ours(tmp_path / "d.h5", obs="flat")  # episodes with seeds 0..3
    run = recipes.Recipe(task="PickCube-v1").run_config(data=str(data))
    recipes.check_seeds(data, data, run)
    run.eval.seed = 2
    with pytest.raises(ValueError, match=r"evaluation seeds \[2, 3\] are demo seeds"):
        recipes.check_seeds(data, data, run)


TINY = """\
task: PickCube-v1
policy: diffusion
demos: {n: 4, hold: 1, speed: 1.0, num_envs: 4, workers: 1}
conversion: {obs: state, control: pd_ee_delta_pos, workers: 1}
perturbed: {noise: 0.1, seeds: [1]}
data_dir: DATA
runs_dir: RUNS
run:
  policy: {unet_dims: [16, 32], groups: 4, step_embed: 16, inference_steps: 3, pred_horizon: 8, action_horizon: 4,
           warmup_steps: 1}
  train: {max_steps: 2, val_every: 2, batch_size: 8, val_batches: 1, accelerator: cpu, progress_bar: false}
  eval: {episodes: 2, num_envs: 2, max_episode_steps: 5, final_episodes: 2}
"""


@slow
def test_a_tiny_recipe_builds_runs_and_reuses(tmp_path, capsys):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.replace("DATA", str(tmp_path / "demos")).replace("RUNS", str(tmp_path / "runs")))
    r = recipes.load_recipe(path)
    f = recipes.files(r)
    assert cli(["recipe", "run", str(path), "--train.max-steps", "2"]) == 0
    out = capsys.readouterr().out
    for p in (f.raw, f.clean, *f.noisy, f.merged):
        assert p.is_file(), p
    results = json.loads((tmp_path / "runs" / "tiny" / "results.json").read_text())
    assert results["steps"] == 2 and results["final"]["episodes"] == 2
    episodes = len(read_meta(f.merged)["episodes"])  # the clean 4 and the perturbed copy's (an episode may fail under noise)
    assert 4 < episodes <= 8 and len(read_meta(f.clean)["episodes"]) == 4
    assert results["recipe"] == {"name": "tiny", "file": str(path), "data": str(f.merged), "episodes": episodes}
    assert results["control_mode"] == "pd_ee_delta_pos" and f"generate {f.raw}" in out
    seeds = [e["seed"] for e in read_meta(f.raw)["episodes"]]
    assert len(seeds) == 4 and seeds == sorted(seeds) and seeds[-1] < 100_000  # the evaluation's seeds are others

    # building again runs nothing: every file is reused as it is
    stamps = {p: p.stat().st_mtime_ns for p in (f.raw, f.clean, *f.noisy, f.merged)}
    assert recipes._steps(r, f) == []
    assert cli(["recipe", "build", str(path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == str(f.merged) and lines[:-1] == [f"reusing {f.merged}"]
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    # the finished dataset alone is enough: the files that made it may go
    kept = {p: p.read_bytes() for p in (f.raw, f.clean)}
    f.raw.unlink()
    f.clean.unlink()
    assert cli(["recipe", "build", str(path)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(f.merged) and not f.raw.exists()
    for p, data in kept.items():
        p.write_bytes(data)
    # a lost perturbed copy is made again, the rest reused
    f.noisy[0].unlink()
    f.merged.unlink()
    steps = recipes._steps(r, f)
    assert [[out for _, out in s] for _, s in steps] == [[f.noisy[0]], [f.merged]]
    assert yaml.safe_load(path.read_text())["demos"]["n"] == 4


def test_demos_can_record_past_the_tasks_step_limit(tmp_path):
    """Slow, long-holding demos (recipes' hold 25, speed 0.5) need more than PickCube's 50 steps:
    `demos generate --max-episode-steps` records them in an env with that limit, stored in the file."""
    from demos.generate import GenerateConfig

    cfg = GenerateConfig(task="PickCube", n=1, out=tmp_path / "d.h5", max_episode_steps=200)
    assert cfg.env_kwargs["max_episode_steps"] == 200
    assert "max_episode_steps" not in GenerateConfig(task="PickCube", n=1, out=tmp_path / "e.h5").env_kwargs
    assert GenerateConfig(task="StackCube", n=1, out=tmp_path / "f.h5").env_kwargs["max_episode_steps"] == 100  # its solution's
    with pytest.raises(ValueError, match="--max-episode-steps must be >= 0"):
        GenerateConfig(task="PickCube", n=1, out=tmp_path / "g.h5", max_episode_steps=-1)


def test_wrist_camera_demos_plan_as_a_panda(tmp_path):
    """The wrist-camera recipes record with panda_wristcam (the same arm and hand as panda): its
    solutions and grasp adapter are the panda's."""
    from demos.generate import GenerateConfig
    from demos.grasp import ADAPTERS, adapter_for

    cfg = GenerateConfig(task="PickCube", n=1, out=tmp_path / "d.h5", robot_uids="panda_wristcam")
    assert cfg.env_kwargs["robot_uids"] == "panda_wristcam"
    assert adapter_for("panda_wristcam") == ADAPTERS["panda"]
    with pytest.raises(ValueError, match="unknown robot 'nothing'"):
        adapter_for("nothing")

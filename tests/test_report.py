"""policies.report: the report goes into the given folder, whole, and never into the docs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policies import report


def _run(folder: Path, name: str, success: float | None, recipe: dict | None = None) -> Path:
    run = folder / name
    run.mkdir(parents=True)
    r = {"run": str(run), "env_id": "PickCube-v1", "policy": "diffusion", "obs_mode": "state",
         "control_mode": "pd_joint_pos", "steps": 10, "train_minutes": 0.5, "eval_history": []}
    if recipe:
        r["recipe"] = recipe
    if success is not None:
        r["final"] = {"success_at_end": success, "success_at_end_ci95": [0.1, 0.9], "success_once": success,
                      "success_once_ci95": [0.1, 0.9], "episode_len": 50.0, "episodes": 4}
    (run / "results.json").write_text(json.dumps(r))
    return run


def test_report_written_whole_into_out(tmp_path, capsys):
    recipe = {"name": "d", "file": "configs/recipes/d.yaml", "data": "out/demos/d.h5", "episodes": 1067}
    runs = [_run(tmp_path, "a", 0.75), _run(tmp_path, "b", None), tmp_path / "c", _run(tmp_path, "d", 0.5, recipe)]
    runs[2].mkdir()  # still running: no results.json
    for _ in range(2):  # a second report replaces the first, it does not append
        assert report.main([*map(str, runs), "--out", str(tmp_path), "--note", "test run"]) == 0
    text = (tmp_path / "report.md").read_text()
    assert text.count("| run | env |") == 1 and text.count("test run") == 1
    assert "| a | PickCube-v1 | diffusion | state | pd_joint_pos |  |  | 10 | 0.5 | 0.75 [0.10, 0.90] |" in text
    assert "| d | PickCube-v1 | diffusion | state | pd_joint_pos | `configs/recipes/d.yaml` | 1067 | 10 | 0.5 | 0.50 " in text
    assert "| b | PickCube-v1 |" in text and "no final eval" in text
    assert [r["run"] for r in json.loads((tmp_path / "results.json").read_text())] == [str(runs[i]) for i in (0, 1, 3)]
    assert "c: no results.json" in capsys.readouterr().out
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("bad", ["missing_folder", "foreign_json", "out_is_file"])
def test_report_bad_input(tmp_path, capsys, bad):
    run = _run(tmp_path, "a", 0.5)
    out = tmp_path / "out"
    args = [str(run), "--out", str(out)]
    if bad == "missing_folder":
        args[0] = str(tmp_path / "nope")
    elif bad == "foreign_json":
        (run / "results.json").write_text(json.dumps({"something": "else"}))
    else:
        out.write_text("x")
    assert report.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert not (out.is_dir() and any(out.iterdir()))

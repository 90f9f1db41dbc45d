"""`replay export --format lerobot`: the dataset read back with pyarrow and held to LeRobot's v3.0
layout (docs/FORMAT.md, "LeRobot export"); bad input; interrupted exports."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is a project dependency (pyproject.toml)")
import pyarrow.parquet as pq  # noqa: E402
from PIL import Image  # noqa: E402

from replay.cli import main  # noqa: E402
from replay.trajectory import TrajectoryFile  # noqa: E402
from tests.synthetic import LENGTHS, write_maniskill, write_ours  # noqa: E402
from tests.marks import slow  # noqa: E402

FPS = 20
STAT_KEYS = {"min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"}
DEFAULT_KEYS = ["timestamp", "frame_index", "episode_index", "index", "task_index"]


def export(*args: str) -> int:
    return main(["export", *map(str, args), "--no-progress"])


def read_dataset(root: Path) -> tuple[dict, dict, pa.Table, pa.Table, pa.Table]:
    info = json.loads((root / "meta/info.json").read_text())
    stats = json.loads((root / "meta/stats.json").read_text())
    data = pa.concat_tables(pq.read_table(p) for p in sorted((root / "data").glob("chunk-*/file-*.parquet")))
    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet")
    tasks = pq.read_table(root / "meta/tasks.parquet")
    return info, stats, data, episodes, tasks


def check_layout(root: Path, video: bool) -> tuple[dict, dict, pa.Table, pa.Table, pa.Table]:
    """Every v3.0 rule the dataset must follow, whatever it holds."""
    info, stats, data, episodes, tasks = read_dataset(root)
    assert info["codebase_version"] == "v3.0"
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == ("videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4" if video else None)
    assert info["chunks_size"] == 1000 and info["data_files_size_in_mb"] == 100 and info["video_files_size_in_mb"] == 200
    n, frames = info["total_episodes"], info["total_frames"]
    assert info["splits"] == {"train": f"0:{n}"} and info["total_tasks"] == len(tasks) == 1
    feats = info["features"]
    assert list(feats)[-5:] == DEFAULT_KEYS
    for key in DEFAULT_KEYS:
        assert feats[key] == {"dtype": "float32" if key == "timestamp" else "int64", "shape": [1], "names": None}
    for key, f in feats.items():
        assert set(f) >= {"dtype", "shape", "names"}, key
        assert "/" not in key
        if f["dtype"] in ("image", "video"):
            assert key.startswith("observation.images.") and f["shape"][2] == 3
            assert f["names"] == ["height", "width", "channels"]
        elif f["shape"] != [1]:
            assert len(f["names"]) == f["shape"][0], key
    # data: one column per non-video feature, typed as LeRobot's Hugging Face features map to Arrow
    assert data.column_names == [k for k, f in feats.items() if f["dtype"] != "video"]
    assert data.num_rows == frames
    for key in data.column_names:
        f, t = feats[key], data.schema.field(key).type
        if f["dtype"] == "image":
            assert t == pa.struct([("bytes", pa.binary()), ("path", pa.string())])
        elif f["shape"] == [1]:
            assert t == {"float32": pa.float32(), "int64": pa.int64(), "bool": pa.bool_()}[f["dtype"]], key
        else:
            assert t == pa.list_(pa.float32(), f["shape"][0]), key
    hf = json.loads(pq.read_schema(sorted((root / "data").rglob("*.parquet"))[0]).metadata[b"huggingface"])
    assert set(hf["info"]["features"]) == set(data.column_names)
    col = {k: data[k].to_numpy() for k in DEFAULT_KEYS}
    assert (col["index"] == np.arange(frames)).all()
    # episodes: contiguous, each a run of frames 0..length-1 of one data file
    ep = episodes.to_pydict()
    assert ep["episode_index"] == list(range(n))
    assert ep["meta/episodes/chunk_index"] == [0] * n and ep["meta/episodes/file_index"] == [0] * n
    assert ep["dataset_from_index"][0] == 0 and ep["dataset_to_index"][-1] == frames
    for i in range(n):
        a, b = ep["dataset_from_index"][i], ep["dataset_to_index"][i]
        assert b - a == ep["length"][i] and (i == 0 or a == ep["dataset_to_index"][i - 1])
        assert ep["tasks"][i] == [tasks["task"][0].as_py()]
        assert (col["episode_index"][a:b] == i).all() and (col["frame_index"][a:b] == np.arange(b - a)).all()
        assert np.allclose(col["timestamp"][a:b], np.arange(b - a) / info["fps"])
        assert (col["task_index"][a:b] == 0).all()
        for key, f in feats.items():
            if f["dtype"] == "video":
                assert ep[f"videos/{key}/to_timestamp"][i] - ep[f"videos/{key}/from_timestamp"][i] == pytest.approx((b - a) / info["fps"])
    # stats: every feature, LeRobot's statistics and shapes
    assert set(stats) == set(feats)
    for key, f in feats.items():
        shape = (3, 1, 1) if f["dtype"] in ("image", "video") else tuple(f["shape"])
        assert set(stats[key]) == STAT_KEYS, key
        for s, v in stats[key].items():
            assert np.shape(v) == ((1,) if s == "count" else shape), (key, s)
            assert np.shape(ep[f"stats/{key}/{s}"][0]) == ((1,) if s == "count" else shape), (key, s)
        assert stats[key]["count"] == [frames]
    # tasks: pandas reads `task` as the index (LeRobot looks tasks up by text)
    pandas_meta = json.loads(tasks.schema.metadata[b"pandas"])
    assert pandas_meta["index_columns"] == ["task"] and tasks["task_index"].to_pylist() == [0]
    return info, stats, data, episodes, tasks


def test_export_images_hold_every_field(tmp_path):
    src = write_ours(tmp_path / "demo.h5")
    out = tmp_path / "ds"
    assert export(src, "--format", "lerobot", "--out", out, "--fps", FPS, "--task", "pick the cube") == 0
    info, stats, data, episodes, tasks = check_layout(out, video=False)
    assert not (tmp_path / "ds.partial").exists()
    assert info["fps"] == FPS and info["robot_type"] == "panda"
    assert info["total_episodes"] == len(LENGTHS) and info["total_frames"] == sum(LENGTHS)
    assert tasks["task"].to_pylist() == ["pick the cube"]
    feats = info["features"]
    assert feats["observation.state"]["names"] == [f"qpos_{i}" for i in range(9)] + [f"qvel_{i}" for i in range(9)]
    assert feats["observation.environment_state"]["names"] == ["goal_pos_0", "goal_pos_1", "goal_pos_2", "is_grasped"]
    assert feats["observation.images.base_camera"] == {"dtype": "image", "shape": [16, 24, 3], "names": ["height", "width", "channels"]}
    assert feats["action"]["shape"] == [8]
    # every value is the source's, frame t = observation t and action t (the last observation dropped)
    traj = TrajectoryFile(src)
    start = 0
    for i, e in enumerate(traj):
        rows = slice(start, start + e.length)
        state = np.concatenate([e.obs["agent"]["qpos"], e.obs["agent"]["qvel"]], 1)[: e.length]
        assert np.array_equal(np.stack(data["observation.state"].to_numpy(zero_copy_only=False)[rows]), state)
        env_state = np.concatenate([e.obs["extra"]["goal_pos"], e.obs["extra"]["is_grasped"]], 1)[: e.length]
        assert np.array_equal(np.stack(data["observation.environment_state"].to_numpy(zero_copy_only=False)[rows]), env_state)
        assert np.array_equal(np.stack(data["action"].to_numpy(zero_copy_only=False)[rows]), e.actions)
        assert np.array_equal(data["next.reward"].to_numpy()[rows], e.rewards)
        assert np.array_equal(data["next.success"].to_numpy(zero_copy_only=False)[rows], e.success)
        done = data["next.done"].to_numpy(zero_copy_only=False)[rows]
        assert done[-1] and not done[:-1].any()
        for cam in ("base_camera", "hand_camera"):
            cells = data[f"observation.images.{cam}"].to_pylist()[rows]
            got = np.stack([np.asarray(Image.open(io.BytesIO(c["bytes"]))) for c in cells])
            assert np.array_equal(got, e.obs["cameras"][cam]["rgb"][: e.length])  # PNG: lossless
        assert episodes["length"][i].as_py() == e.length
        start += e.length
    traj.close()
    # statistics are exact
    actions = np.stack(data["action"].to_numpy(zero_copy_only=False))
    assert np.allclose(stats["action"]["mean"], actions.mean(0)) and np.allclose(stats["action"]["std"], actions.std(0))
    assert np.allclose(stats["action"]["q50"], np.quantile(actions, 0.5, axis=0))
    assert np.allclose(stats["index"]["max"], [sum(LENGTHS) - 1])
    rgb = np.stack([np.asarray(Image.open(io.BytesIO(c["bytes"]))) for c in data["observation.images.base_camera"].to_pylist()])
    assert np.allclose(np.ravel(stats["observation.images.base_camera"]["mean"]), rgb.reshape(-1, 3).mean(0) / 255)
    assert np.allclose(np.ravel(stats["observation.images.base_camera"]["max"]), rgb.reshape(-1, 3).max(0) / 255)


@slow  # encodes video
def test_export_video_mp4_files(tmp_path):
    import imageio_ffmpeg

    src = write_ours(tmp_path / "demo.h5")
    out = tmp_path / "ds"
    assert export(src, "--out", out, "--fps", FPS, "--task", "pick", "--video", "--camera", "hand_camera") == 0
    info, stats, data, episodes, _ = check_layout(out, video=True)
    key = "observation.images.hand_camera"
    assert [k for k, f in info["features"].items() if f["dtype"] in ("image", "video")] == [key]
    f = info["features"][key]
    assert f["dtype"] == "video" and f["info"]["video.codec"] == "av1" and f["info"]["video.fps"] == FPS
    assert f["info"]["video.height"] == 16 and f["info"]["video.width"] == 24 and f["info"]["video.pix_fmt"] == "yuv420p"
    mp4 = out / f"videos/{key}/chunk-000/file-000.mp4"
    assert sorted(p.relative_to(out).as_posix() for p in (out / "videos").rglob("*") if p.is_file()) == [mp4.relative_to(out).as_posix()]
    reader = imageio_ffmpeg.read_frames(str(mp4))
    meta = next(reader)
    assert meta["size"] == (24, 16) and meta["fps"] == FPS
    decoded = np.stack([np.frombuffer(b, np.uint8).reshape(16, 24, 3) for b in reader])
    assert len(decoded) == sum(LENGTHS)
    ep = episodes.to_pydict()
    traj = TrajectoryFile(src)
    for i, e in enumerate(traj):
        first = round(ep[f"videos/{key}/from_timestamp"][i] * FPS)
        got = decoded[first:first + e.length].astype(int)
        want = e.obs["cameras"]["hand_camera"]["rgb"][: e.length].astype(int)
        err = np.abs(got[:, None] - want[None]).mean(axis=(2, 3, 4))  # (decoded, source) frame pairs
        assert (err.argmin(1) == np.arange(e.length)).all()  # each decoded frame is its own source frame's
        assert err.diagonal().mean() < 8  # lossy AV1 at LeRobot's crf 30
    traj.close()


def test_export_flat_state_and_defaults_from_the_task(tmp_path):
    src = write_ours(tmp_path / "demo.h5", obs="flat")
    out = tmp_path / "ds"
    assert export(src, "--out", out) == 0
    info, _, data, _, tasks = check_layout(out, video=False)
    assert info["fps"] == 20  # PickCube-v1's control frequency
    assert tasks["task"].to_pylist() == ['Pick up the red 4 cm "cube" from the table and bring its centre to the "goal_site" '
                                         "(a green sphere of the goal threshold's radius, hidden from observation cameras), then hold still."]
    assert info["features"]["observation.state"]["shape"] == [42]
    assert "observation.environment_state" not in info["features"]
    assert not any(k.startswith("observation.images.") for k in info["features"])


def test_export_maniskill_layout(tmp_path):
    src = write_maniskill(tmp_path / "ms.h5")
    out = tmp_path / "ds"
    assert export(src, "--out", out, "--fps", 30, "--task", "pick") == 0
    info, _, data, _, _ = check_layout(out, video=False)
    assert info["fps"] == 30 and info["total_episodes"] == len(LENGTHS)
    assert info["features"]["observation.images.base_camera"]["shape"] == [16, 24, 3]
    assert info["features"]["observation.state"]["shape"] == [18]


@pytest.mark.parametrize("case", ["no_obs", "unknown_camera", "camera_of_flat_state", "video_without_cameras", "exists"])
def test_bad_input_is_one_error_line_and_writes_nothing(tmp_path, capsys, case):
    src = write_ours(tmp_path / "demo.h5", obs={"no_obs": "none", "camera_of_flat_state": "flat", "video_without_cameras": "flat"}.get(case, "dict"))
    out = tmp_path / "ds"
    args = [src, "--out", out, "--fps", FPS, "--task", "t"]
    if case == "exists":
        out.mkdir()
        (out / "mine.txt").write_text("keep")
    extra = {"unknown_camera": ["--camera", "wrist"], "camera_of_flat_state": ["--camera", "base_camera"],
             "video_without_cameras": ["--video"]}.get(case, [])
    capsys.readouterr()
    assert export(*args, *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    expect = {"no_obs": "no observations", "unknown_camera": "unknown camera 'wrist'", "camera_of_flat_state": "no cameras",
              "video_without_cameras": "no camera", "exists": "--overwrite"}[case]
    assert expect in err
    if case == "unknown_camera":
        assert "base_camera, hand_camera" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["demo.h5", "demo.json"] + (["ds"] if case == "exists" else []))
    if case == "exists":
        assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_interrupted_export_leaves_no_dataset(tmp_path, monkeypatch):
    import replay.lerobot as lr

    src = write_ours(tmp_path / "demo.h5")
    out = tmp_path / "ds"
    out.mkdir()
    (out / "old.txt").write_text("the previous export")
    calls = []
    real = lr._Exporter._episode

    def interrupt(self, eid):
        calls.append(eid)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, eid)

    monkeypatch.setattr(lr._Exporter, "_episode", interrupt)
    with pytest.raises(KeyboardInterrupt):
        lr.export_lerobot(lr.ExportConfig(src, out, fps=FPS, task="t", overwrite=True))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.h5", "demo.json", "ds"]
    assert [p.name for p in out.iterdir()] == ["old.txt"]  # the previous dataset is untouched
    monkeypatch.setattr(lr._Exporter, "_episode", real)
    lr.export_lerobot(lr.ExportConfig(src, out, fps=FPS, task="t", overwrite=True))
    check_layout(out, video=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.h5", "demo.json", "ds"]


@slow
def test_sigkilled_export_leaves_no_dataset(tmp_path):
    """A real kill mid-export: OUT never appears; the next export removes the leftover and completes."""
    src = write_ours(tmp_path / "demo.h5", lengths=(60,) * 40)
    out = tmp_path / "ds"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "replay.cli", "export", str(src), "--out", str(out), "--fps", "20", "--task", "t", "--no-progress"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    partial = tmp_path / "ds.partial"
    deadline = time.monotonic() + 120
    while not list(partial.glob("data/chunk-000/*.parquet")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the export ended before it could be killed: " + proc.stderr.read().decode()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    assert not out.exists() and partial.is_dir()
    assert export(src, "--out", out, "--fps", FPS, "--task", "t") == 0
    assert not partial.exists()
    assert check_layout(out, video=False)[0]["total_episodes"] == 40

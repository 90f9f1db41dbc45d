"""`demos generate / list / info / verify / merge` and the trajectory file format (docs/FORMAT.md).

Every task with a motion-planning solution gets a small generation (module fixture), checked
against the tables of docs/FORMAT.md and replayed by verify. Durability: a real generation
process is SIGKILLed and resumed; a writer process is SIGKILLed at random moments; a group
without commit mark is ignored. Bad input: one stderr line, non-zero exit, nothing written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from demos.cli import main
from demos.generate import GenerateConfig, generate
from demos.solutions import SOLUTIONS
from envs.core.registry import env_ids
from replay.trajectory import Episode, TrajectoryError, TrajectoryFile, TrajectoryWriter, parts_dir, pending_path, read_meta, sidecar_path
from replay.verify import fresh_env, record_replay, verify_file
from tests.marks import slow

ROOT = Path(__file__).resolve().parents[1]
TASKS = sorted(SOLUTIONS)
QUICK = "LiftPegUpright-v1"  # the task of the tests of the commands themselves: short episodes, small states
N = 2


def _gen(task: str, out: Path, n: int = N, **kw) -> Path:
    kw = {"num_envs": 2, "workers": 1, **kw}
    generate(GenerateConfig(task=task, n=n, out=out, **kw))
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """One small state-obs generation per task with a solution."""
    root = tmp_path_factory.mktemp("made")
    return {task: _gen(task, root / f"{task}.h5", obs_mode="state") for task in TASKS}


def _doc_rows(section: str) -> list[list[str]]:
    """Table rows (cells without backticks) of one section of docs/FORMAT.md."""
    text = (ROOT / "docs" / "FORMAT.md").read_text()
    body = text.split(section, 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip().strip("`") for c in line.strip().strip("|").split("|")] for line in body.splitlines() if line.startswith("| `")]
    assert rows, f"no table in {section}"
    return rows


def _check_shape(got: tuple, doc: str, t: int, what: str) -> None:
    """`doc` like "(T + 1, 13)", "(T,)", "(T, A)", "(T + 1, 13 + 2 dof)" against an array shape."""
    dims = [d.strip() for d in doc.strip("()").split(",") if d.strip()]
    assert len(got) == len(dims), (what, got, doc)
    for size, dim in zip(got, dims):
        if dim in ("T", "T + 1"):
            assert size == t + (dim == "T + 1"), (what, got, doc)
        elif dim == "13 + 2 dof":
            assert size > 13 and (size - 13) % 2 == 0, (what, got, doc)
        elif dim.isdigit():
            assert size == int(dim), (what, got, doc)
        else:  # A, D: any width
            assert size > 0, (what, got, doc)


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "Traceback" not in err[0], err
    return err[0]


def _snapshot(*paths: Path) -> dict:
    return {p: p.read_bytes() if p.exists() else None for p in paths}


# ---- layout, success flags, verify -----------------------------------------------------------------
@slow
@pytest.mark.parametrize("task", TASKS)
def test_file_layout_matches_format_doc(made, task):
    path = made[task]
    assert not parts_dir(path).exists() and not pending_path(path).exists()
    meta = json.loads(sidecar_path(path).read_text())
    with h5py.File(path, "r") as f:
        assert json.loads(f.attrs["meta"]) == {k: v for k, v in meta.items() if k != "episodes"}
        assert sorted(f.keys()) == sorted(f"traj_{i}" for i in range(N))
        for e in meta["episodes"]:
            g = f[f"traj_{e['episode_id']}"]
            t = e["elapsed_steps"]
            assert json.loads(g.attrs["meta"]) == e
            for path_, kind, dtype, shape, required, note in _doc_rows("### Episode group"):
                if kind != "dataset" or (required == "no" and path_.split("/")[1] not in g):
                    continue
                parent, leaf = path_.split("/", 1)[1].rsplit("/", 1) if path_.count("/") > 1 else ("", path_.split("/")[1])
                names = (list(g[parent]) if parent in g else []) if leaf.startswith("<") else [leaf]
                assert names or "only for tasks that have them" in note, path_
                for name in names:
                    d = g[f"{parent}/{name}" if parent else name]
                    assert d.dtype == np.dtype(dtype), (path_, d.dtype)
                    _check_shape(d.shape, shape, t, path_)
            assert set(g["env_states"]) >= {"actors", "articulations"} and len(g["env_states/actors"]) > 0
            states = []
            g["env_states"].visititems(lambda _, o: states.append(o) if isinstance(o, h5py.Dataset) else None)
            assert all(d.compression == "gzip" and d.shuffle and d.chunks == d.shape for d in states)
    for key, _, required, _ in _doc_rows("## JSON sidecar"):
        if required != "yes":
            continue
        if key.startswith("episodes[]."):
            assert all(key[11:] in e for e in meta["episodes"]), key
        else:
            node = meta
            for part in key.split("."):
                node = node[part]
    assert meta["source_type"] == "motionplanning" and meta["env_info"]["env_id"] == task
    assert meta["env_info"]["env_kwargs"]["control_mode"] == "pd_joint_pos"
    assert {"sapien", "mplib", "torch", "numpy", "h5py"} <= set(meta["versions"])


@slow
@pytest.mark.parametrize("task", TASKS)
def test_saved_episodes_succeed_and_verify_reproduces_them(made, task):
    traj = TrajectoryFile(made[task])
    for e, ep in zip(traj.episodes, traj):
        assert e["success"] and ep.success[-1] and ep.terminated[-1] and not ep.truncated.any()
        assert ep.obs.shape[0] == ep.length + 1
    assert [e["episode_id"] for e in traj.episodes] == list(range(N))
    assert len({e["seed"] for e in traj.episodes}) == N
    traj.close()
    assert verify_file(made[task], num_envs=2) == (N, N, [])


def _assert_fresh_replay_equals(kwargs: dict, episodes: list, label: str, env_id: str = "PickCube-v1") -> None:
    """The episodes' actions replayed together in a fresh env give their recorded env states bit
    for bit, and their success."""
    env = fresh_env(env_id, kwargs, episodes)
    try:
        replayed = record_replay(env, episodes, record_obs=False)
    finally:
        env.close()
    for want, got in zip(episodes, replayed):
        for group, entries in want.env_states.items():
            for name, value in entries.items():
                np.testing.assert_array_equal(got.env_states[group][name], value, err_msg=f"{label} {group}/{name}")
        assert (got.success == want.success).all()


@slow
def test_every_episode_replays_bit_identically_in_shuffled_batches(tmp_path):
    """Episodes generated in one batch replay, in fresh envs of other sizes and in another order
    (each next to other episodes, at another index), to exactly their recorded states, so
    verify reproduces every one."""
    path = _gen("PickCube-v1", tmp_path / "p.h5", n=4, num_envs=4)
    assert read_meta(path)["env_info"]["env_kwargs"]["physics"] == {"isolated": True}
    traj = TrajectoryFile(path)
    episodes = {e["episode_id"]: traj.episode(e["episode_id"], with_obs=False) for e in traj.episodes}
    kwargs = dict(traj.env_info["env_kwargs"], obs_mode="none")
    traj.close()
    for batch in ([3, 0, 2], [1], [2, 1]):
        _assert_fresh_replay_equals(kwargs, [episodes[i] for i in batch], str(batch))
    assert verify_file(path, num_envs=3, order_seed=1) == (4, 4, [])


@slow
def test_the_same_seeds_give_the_same_episodes_in_any_batches(tmp_path):
    """Which attempts a run makes and how it batches them does not change its episodes: one
    worker with a batch of 3 against two workers sharing the 4 attempts a run of 3 makes (two
    batches of 2, not two whole batches of 4)."""
    def episodes(path):
        f = TrajectoryFile(path)
        try:
            return [(e["seed"], f.episode(e["episode_id"], with_obs=False).actions) for e in f.episodes]
        finally:
            f.close()

    one = generate(GenerateConfig(task="PickCube", n=3, out=tmp_path / "one.h5", num_envs=3, workers=1))
    two = generate(GenerateConfig(task="PickCube", n=3, out=tmp_path / "two.h5", num_envs=4, workers=2))
    assert one.attempts == 3 and two.attempts == 4  # ceil(1.05 * 3) attempts shared out: 2 + 2
    a, b = episodes(tmp_path / "one.h5"), episodes(tmp_path / "two.h5")
    assert [s for s, _ in a] == [s for s, _ in b]
    for (_, x), (_, y) in zip(a, b):
        np.testing.assert_array_equal(x, y)


@slow
def test_cli_list_info_verify(made, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(task in out for task in TASKS)
    task = QUICK
    assert main(["info", str(made[task])]) == 0
    out = capsys.readouterr().out
    assert f"episodes    {N}  success 100.0%" in out and task in out and '"control_mode": "pd_joint_pos"' in out
    assert re.search(r"length\s+min \d+", out) and "MiB" in out
    assert main(["verify", str(made[task]), "--num-envs", "2"]) == 0
    assert f"{N}/{N} episodes reproduce" in capsys.readouterr().out


# ---- durability -------------------------------------------------------------------------------------
def _ids(path: Path) -> list[int]:
    return [e["episode_id"] for e in read_meta(path)["episodes"]]


@slow
def test_sigkilled_generation_resumes_without_duplicates_or_gaps(tmp_path):
    out = tmp_path / "pick.h5"
    cmd = [sys.executable, "-m", "demos.cli", "generate", "PickCube", "--n", "8", "--num-envs", "2", "--workers", "1", "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (out.exists() and len(_ids(out)) >= 2):
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    killed = _ids(out)  # readable right after the kill
    assert 2 <= len(killed) < 8 and killed == list(range(len(killed)))
    assert main(["generate", "PickCube", "--n", "4", "--out", str(out)]) == 2  # exists: refused
    _gen("PickCube", out, n=len(killed) + 2, resume=True)
    meta = read_meta(out)
    assert _ids(out) == list(range(len(killed) + 2))
    assert len({e["seed"] for e in meta["episodes"]}) == len(killed) + 2
    assert [e["info"]["attempt"] for e in meta["episodes"]] == sorted({e["info"]["attempt"] for e in meta["episodes"]})
    assert not parts_dir(out).exists()


WRITER = """
import sys, numpy as np
from replay.trajectory import Episode, TrajectoryWriter
w = TrajectoryWriter(sys.argv[1], {"env_info": {"env_id": "X", "env_kwargs": {}, "max_episode_steps": 9}}, resume=True)
rng = np.random.default_rng(int(sys.argv[2]))
print("ready", flush=True)
while True:
    t = int(rng.integers(20, 60))
    ep = Episode(rng.random((t, 8), dtype=np.float32), np.zeros(t, bool), np.zeros(t, bool), np.ones(t, bool),
                 np.zeros(t, bool), {"actors": {"cube": rng.random((t + 1, 13), dtype=np.float32)}}, seed=w.num_episodes)
    w.add_batch([ep] * int(rng.integers(1, 4)), "pd_joint_pos")
"""


@slow
def test_writer_killed_at_random_moments_leaves_a_readable_file(tmp_path):
    path = tmp_path / "w.h5"
    rng = np.random.default_rng(0)
    counts = []
    for k in range(6):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(k)], cwd=ROOT, stdout=subprocess.PIPE)
        proc.stdout.readline()
        time.sleep(rng.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        ids = _ids(path)
        assert ids == list(range(len(ids))) and len(ids) >= (counts[-1] if counts else 0)
        traj = TrajectoryFile(path)
        assert all(ep.length + 1 == len(ep.env_states["actors"]["cube"]) for ep in traj)
        traj.close()
        counts.append(len(ids))
    assert counts[-1] > 0
    moved = tmp_path / "moved" / "w.h5"  # an unfinished file without its .parts folder
    moved.parent.mkdir()
    shutil.copy(path, moved)
    with pytest.raises(TrajectoryError, match="w.h5.parts folder"):
        read_meta(moved)
    with TrajectoryWriter(path, {}, resume=True):
        pass  # consolidates
    assert _ids(path) == list(range(counts[-1])) and not parts_dir(path).exists()


def _episode(t: int = 5, seed: int = 0) -> Episode:
    z = np.zeros(t, bool)
    return Episode(np.zeros((t, 8), np.float32), z, z, np.ones(t, bool), z, {"actors": {"a": np.zeros((t + 1, 13), np.float32)}}, seed=seed)


def test_uncommitted_group_and_stale_sidecar(tmp_path):
    path = tmp_path / "x.h5"
    with TrajectoryWriter(path, {"env_info": {"env_id": "X", "env_kwargs": {}}}) as w:
        w.add_batch([_episode(seed=0), _episode(seed=1)], "pd_joint_pos")
    stale = sidecar_path(path).read_text()
    with h5py.File(path, "a") as f:  # a group written without its commit mark, as by a run killed mid-episode
        f.create_group("traj_2").create_dataset("actions", data=np.zeros((3, 8)))
    assert _ids(path) == [0, 1]
    with TrajectoryWriter(path, {}, resume=True) as w:
        assert w.add(_episode(seed=2), "pd_joint_pos") == 2
    with h5py.File(path, "r") as f:
        assert json.loads(f["traj_2"].attrs["meta"])["seed"] == 2 and f["traj_2/actions"].shape == (5, 8)
    sidecar_path(path).write_text(stale)  # lists 2 of 3 episodes
    assert _ids(path) == [0, 1, 2]
    sidecar_path(path).unlink()
    assert _ids(path) == [0, 1, 2]


def test_env_states_are_stored_compressed_and_read_back_equal(tmp_path):
    """Env states (many small, mostly constant arrays: a drawing task's ink dots) are deflated over
    the shuffle filter, one chunk each, in HDF5 1.10's compact format: a file holding 500 such
    actors per episode is a small fraction of their raw size, through segments and consolidation,
    and reads back bit for bit."""
    t, rng = 200, np.random.default_rng(0)
    z = np.zeros(t, bool)
    dots = np.tile(np.array([0.0, 0.0, -0.003, 0.7071068, 0.0, 0.7071068, 0.0] + [0.0] * 6, np.float32), (t + 1, 1))
    states = {"actors": {f"dot_{k}": dots.copy() for k in range(500)},
              "articulations": {"arm": rng.random((t + 1, 27), dtype=np.float32)}}
    states["actors"]["dot_7"][50:, :3] = [0.1, -0.2, 0.0215]  # drawn at step 50
    eps = [Episode(rng.random((t, 7), dtype=np.float32), z, z, np.ones(t, bool), z, states, seed=s) for s in range(2)]
    path = tmp_path / "x.h5"
    with TrajectoryWriter(path, {"env_info": {"env_id": "X", "env_kwargs": {}}}) as w:
        w.add_batch(eps[:1], "pd_joint_pos")
        w.add_batch(eps[1:], "pd_joint_pos")
    raw = sum(a.nbytes for g in states.values() for a in g.values()) * len(eps)
    assert path.stat().st_size < raw / 20, (path.stat().st_size, raw)
    with h5py.File(path, "r") as f:
        d = f["traj_1/env_states/actors/dot_7"]
        assert (d.compression, d.shuffle, d.chunks) == ("gzip", True, (t + 1, 13))
    for ep in TrajectoryFile(path):
        for group, arrays in states.items():
            for name, a in arrays.items():
                assert np.array_equal(ep.env_states[group][name], a), (group, name)


# ---- overwrite, shards, merge -----------------------------------------------------------------------
@slow
def test_overwrite_keeps_the_old_file_until_the_new_one_is_complete(made, tmp_path, monkeypatch):
    out = tmp_path / "p.h5"
    shutil.copy(made[QUICK], out)
    shutil.copy(sidecar_path(made[QUICK]), sidecar_path(out))
    before = _snapshot(out, sidecar_path(out))

    def broken(*a, **k):
        raise RuntimeError("simulated crash while starting")

    monkeypatch.setattr("demos.generate.make_pool", broken)
    with pytest.raises(RuntimeError):
        generate(GenerateConfig(task=QUICK, n=1, out=out, overwrite=True, workers=1, num_envs=2))
    assert _snapshot(out, sidecar_path(out)) == before
    assert not pending_path(out).exists() and not sidecar_path(pending_path(out)).exists()


@slow
def test_shards_are_disjoint_and_merge_renumbers(made, tmp_path, capsys):
    task = QUICK
    a, b = tmp_path / "a.h5", tmp_path / "b.h5"
    shutil.copy(made[task], b)  # b exists: shard 1 overwrites it
    shutil.copy(sidecar_path(made[task]), sidecar_path(b))
    _gen(task, a, shard=(0, 2))
    _gen(task, b, shard=(1, 2), overwrite=True)
    sa, sb = [[e["seed"] for e in read_meta(p)["episodes"]] for p in (a, b)]
    assert all(s % 2 == 0 for s in sa) and all(s % 2 == 1 for s in sb)
    out = tmp_path / "m.h5"
    assert main(["merge", str(out), str(a), str(b)]) == 0
    meta = read_meta(out)
    assert [e["episode_id"] for e in meta["episodes"]] == list(range(2 * N))
    assert [e["seed"] for e in meta["episodes"]] == sa + sb
    assert [e["source"] for e in meta["episodes"]][N] == {"file": "b.h5", "episode_id": 0}
    assert [m["generation"]["shard"] for m in meta["merged_from"]] == [[0, 2], [1, 2]]
    assert meta["env_info"] == read_meta(a)["env_info"]
    with h5py.File(out, "r") as f, h5py.File(b, "r") as fb:
        assert np.array_equal(f[f"traj_{N}/actions"][()], fb["traj_0/actions"][()])
        assert json.loads(f[f"traj_{N}"].attrs["meta"])["episode_id"] == N
    capsys.readouterr()
    assert verify_file(out, num_envs=4) == (2 * N, 2 * N, [])


def _retag(src: Path, dst: Path, **env_info) -> Path:
    """A copy of src claiming other env_info (as a file of another task or control mode would)."""
    shutil.copy(src, dst)
    meta = json.loads(sidecar_path(src).read_text())
    for key, value in env_info.items():
        if key in ("control_mode", "obs_mode"):
            meta["env_info"]["env_kwargs"][key] = value
        else:
            meta["env_info"][key] = value
    sidecar_path(dst).write_text(json.dumps(meta))
    with h5py.File(dst, "a") as f:
        f.attrs["meta"] = json.dumps({k: v for k, v in meta.items() if k != "episodes"})
    return dst


@slow
@pytest.mark.parametrize("change", [{"env_id": "PushCube-v1"}, {"control_mode": "pd_ee_delta_pose"}, {"obs_mode": "none"}])
def test_merge_refuses_different_env_or_modes(made, tmp_path, capsys, change):
    src = made[QUICK]
    other = _retag(src, tmp_path / "other.h5", **change)
    out = tmp_path / "m.h5"
    assert main(["merge", str(out), str(src), str(other)]) == 2
    line = _one_error_line(capsys)
    assert "cannot merge" in line and str(next(iter(change.values()))) in line
    assert not out.exists() and not (tmp_path / "m.h5.tmp").exists()


@slow
def test_hold_and_speed_shape_the_demos(made, tmp_path):
    """--hold K: the episode ends after K successful steps in a row, the robot held still over
    them; --speed s: slower plans, more steps. Both are kept in the file's generation settings."""
    task = "PickCube-v1"
    base = TrajectoryFile(made[task])
    # PickCube's episodes last 50 steps: a slower plan and a hold of 4 still fit
    slow = TrajectoryFile(_gen(task, tmp_path / "slow.h5", obs_mode="state", hold=4, speed=0.8))
    gen = read_meta(slow.path)["generation"]
    assert gen["hold"] == 4 and gen["speed"] == 0.8
    for e_base, e_slow in zip(base.episodes, slow.episodes):
        assert e_base["seed"] == e_slow["seed"]
        fast_ep, slow_ep = base.episode(e_base["episode_id"], False), slow.episode(e_slow["episode_id"], False)
        assert fast_ep.success[-1] and fast_ep.success.sum() == 1  # default: ends at first success
        assert slow_ep.success[-4:].all() and len(slow_ep.actions) > len(fast_ep.actions) + 4
        arm = slow_ep.actions[-4:, :-1]
        assert np.abs(arm - arm[0]).max() < 1e-6  # pd_joint_pos targets held over the hold
    assert verify_file(slow.path, num_envs=2) == (N, N, [])


@slow
def test_a_run_where_nothing_succeeds_stops_with_the_reason(tmp_path, monkeypatch):
    """Demos too slow for the task's episode length never succeed: the run stops after a few
    batches with the most common reason, and leaves no file behind."""
    import demos.generate as gen

    monkeypatch.setattr(gen, "HOPELESS_ATTEMPTS", 8)
    out = tmp_path / "slow.h5"
    with pytest.raises(ValueError, match=r"no attempt succeeded in (\d+); the most common failure \(\1 of them\): solution took \d+ steps > max_episode_steps 50") as stop:
        _gen("PickCube-v1", out, n=2, workers=2, speed=0.25, hold=10)
    assert 8 <= int(re.search(r"in (\d+);", str(stop.value)).group(1)) < 8 + 2 * 2  # stopped within a round of batches
    assert list(tmp_path.iterdir()) == []


# ---- bad input ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, says",
    [
        (["generate", "NoSuchTask", "--n", "2"], "unknown env id"),
        (["generate", next(e for e in env_ids() if e not in SOLUTIONS), "--n", "2"], "no motion-planning solution"),
        (["generate", "PickCube", "--n", "0"], "--n must be a positive"),
        (["generate", "PickCube", "--n", "-3"], "--n must be a positive"),
        (["generate", "PickCube", "--n", "2", "--shard", "2/2"], "--shard"),
        (["generate", "PickCube", "--n", "2", "--shard", "x"], "expected i/K"),
        (["generate", "PickCube", "--n", "2", "--obs-mode", "rgb"], "none or state"),
        (["generate", "PickCube", "--n", "2", "--resume", "--overwrite"], "exclude each other"),
        (["generate", "PickCube", "--n", "2", "--out", "/proc/demos/x.h5"], "cannot write"),
        (["generate", "PickCube", "--n", "2", "--out", "{tmp}/file.txt/x.h5"], "not a directory"),
        (["generate", "PickCube", "--n", "2", "--out", "{tmp}/x.json"], ".h5"),
        (["generate", "PickCube", "--n", "2", "--hold", "0"], "--hold"),
        (["generate", "PickCube", "--n", "2", "--speed", "2"], "--speed"),
        (["generate", "PickCube", "--n", "2", "--speed", "fast"], "error parsing --speed"),
    ],
)
def test_generate_bad_input_one_line(tmp_path, capsys, args, says):
    (tmp_path / "file.txt").write_text("x")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(args) == 2
    line = _one_error_line(capsys)
    assert says in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


@slow
def test_generate_refuses_an_existing_output(made, tmp_path, capsys):
    out = tmp_path / "p.h5"
    shutil.copy(made[QUICK], out)
    shutil.copy(sidecar_path(made[QUICK]), sidecar_path(out))
    before = _snapshot(out, sidecar_path(out))
    assert main(["generate", QUICK, "--n", "2", "--out", str(out)]) == 2
    assert "--resume" in _one_error_line(capsys) and _snapshot(out, sidecar_path(out)) == before
    merged = _retag(out, tmp_path / "q.h5", control_mode="pd_ee_delta_pose")
    assert main(["generate", QUICK, "--n", "9", "--out", str(merged), "--resume"]) == 2  # other settings
    assert "resume with the same settings" in _one_error_line(capsys)


def _foreign_files(tmp_path: Path, made: dict) -> dict[str, Path]:
    files = {}
    files["text"] = tmp_path / "notes.txt"
    files["text"].write_text("not a trajectory\n")
    files["random h5"] = tmp_path / "random.h5"
    with h5py.File(files["random h5"], "w") as f:
        f["x"] = np.arange(3)
    files["text named .h5 with sidecar"] = tmp_path / "fake.h5"
    files["text named .h5 with sidecar"].write_text("hello")
    shutil.copy(sidecar_path(made[QUICK]), tmp_path / "fake.json")
    files["truncated"] = tmp_path / "cut.h5"
    data = made[QUICK].read_bytes()
    files["truncated"].write_bytes(data[: len(data) // 2])
    files["foreign json"] = tmp_path / "other.h5"
    with h5py.File(files["foreign json"], "w") as f:
        f["traj_0/actions"] = np.zeros((2, 2))
    (tmp_path / "other.json").write_text('{"name": "something else"}')
    files["missing"] = tmp_path / "absent.h5"
    return files


@slow
@pytest.mark.parametrize("command", ["info", "verify", "merge"])
def test_corrupt_or_foreign_files_one_line(made, tmp_path, capsys, command):
    for what, path in _foreign_files(tmp_path, made).items():
        out = tmp_path / "merged.h5"
        args = {"info": ["info", str(path)], "verify": ["verify", str(path)], "merge": ["merge", str(out), str(made[QUICK]), str(path)]}[command]
        assert main(args) == 2, what
        _one_error_line(capsys)
        assert not out.exists() and not (tmp_path / "merged.h5.tmp").exists(), what


@slow
def test_cli_process_exit_code_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.h5"
    bad.write_text("garbage")
    for args in (["info", str(bad)], ["generate", "NoSuchTask", "--n", "1"]):
        r = subprocess.run([sys.executable, "-m", "demos.cli", *args], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


# ---- the runner and the planner -----------------------------------------------------------------------
def _tcp_turns(kinematics, arm_rows: np.ndarray) -> torch.Tensor:
    """(T,) the TCP's turn (rad) from each row of arm joint positions (T + 1, n) to the next."""
    tcp = kinematics.tcp_pose(torch.from_numpy(np.asarray(arm_rows)).double())
    return 2 * torch.acos((tcp[1:, 3:] * tcp[:-1, 3:]).sum(1).abs().clamp(max=1))


@pytest.mark.parametrize("task", [pytest.param(t, marks=() if t == "PickCube-v1" else slow) for t in TASKS])
def test_a_batch_runs_each_episode_as_its_replay(task, tmp_path):
    """Each env goes through the stages at its own pace in a fresh env, never restored to a saved
    state, so the states the run records (the demo as saved) are exactly those a replay of its
    actions in another fresh env reaches (closed-loop corrections measured in the run then hold
    in the replay)."""
    import gymnasium as gym

    from demos.grasp import adapter_for
    from demos.pool import PlannerPool
    from demos.runner import Runner

    solution = SOLUTIONS[task]
    kwargs = GenerateConfig(task=task, n=1, out=tmp_path / "unused.h5").env_kwargs  # as generate builds its envs
    kwargs["obs_mode"] = "none"
    env = gym.make(task, num_envs=2, **kwargs).unwrapped
    pool = PlannerPool(1, warm=solution.robots[0])
    try:
        outcomes = Runner(env, solution, pool, adapter_for(solution.robots[0]), record_obs=False).run([5, 6])
        eps = [o.episode for o in outcomes if o.episode is not None]
        if solution.turn_limit is not None:  # the TCP's targets turn no faster than the solution allows
            for ep in eps:
                turns = _tcp_turns(env.agent.kinematics, ep.actions[:, env.agent.arm])
                assert turns.max() <= solution.turn_limit / env.control_freq + 1e-3
    finally:
        env.close()
        pool.close()
    assert any(o.success for o in outcomes) and eps, [o.reason for o in outcomes]
    if task == "PickCube-v1":  # seeds whose picks take different times: neither waited for the other
        assert all(o.success for o in outcomes) and eps[0].length != eps[1].length
    _assert_fresh_replay_equals(kwargs, eps, "run", task)


def test_a_planner_crash_fails_only_the_request_that_crashed_it(monkeypatch):
    """A planner takes a group's requests in one message; when it dies on one of them, the group
    is planned again request by request: only the request that kills a planner fails, and the
    others get their plans, in request order."""
    import os

    from demos.planner import PlanRequest
    from demos.pool import PlannerPool, _Planners

    def plan(self, req):  # the planners are forked from this process: they plan this way
        if req.robot_uid == "crash":
            os._exit(3)
        return np.full((1, 7), req.qpos[0], dtype=np.float32), "Success"

    monkeypatch.setattr(_Planners, "plan", plan)
    requests = [PlanRequest(uid, (float(k),), (0.0,) * 7) for k, uid in enumerate(["ok", "ok", "crash", "ok"])]
    with PlannerPool(1) as pool:
        out = pool.map(requests)
        again = pool.map(requests[:2])
    assert [why for _, why in out[:2] + out[3:]] == ["Success"] * 3 and [t[0, 0] for t, _ in out[:2] + out[3:]] == [0, 1, 3]
    assert out[2][0] is None and out[2][1].startswith("planner process died") and "exit code 3" in out[2][1]
    assert pool.crashes == 1 and [t[0, 0] for t, _ in again] == [0, 1]


def test_planner_goes_to_the_first_reachable_goal():
    from demos.planner import ArmPlanner, PlanRequest
    from envs.robots import get_robot

    planner = ArmPlanner("panda")
    qpos = np.asarray(get_robot("panda").rest_qpos, dtype=np.float64)
    pin = planner.planner.pinocchio_model
    ee = planner.planner.link_name_2_idx[planner.planner.move_group]
    pin.compute_forward_kinematics(qpos)
    start = pin.get_link_pose(ee)
    near = (*(np.asarray(start.p) + [0.05, 0.0, -0.05]), *start.q)
    far = (3.0, 0.0, 0.5, *start.q)
    traj, why = planner.plan(PlanRequest("panda", tuple(qpos), far))
    assert traj is None and why
    traj, why = planner.plan(PlanRequest("panda", tuple(qpos), far, fallbacks=(near,)))
    assert traj is not None, why
    end = qpos.copy()
    end[planner.planner.move_group_joint_indices] = traj[-1]
    pin.compute_forward_kinematics(end)
    np.testing.assert_allclose(pin.get_link_pose(ee).p, near[:3], atol=2e-3)


def test_a_turn_limit_slows_the_plan_and_keeps_its_path():
    """A plan held to a turn limit is the full-speed plan's path, resampled slower."""
    from demos.planner import ArmPlanner, PlanRequest
    from envs.core.pose import quat_mul
    from envs.robots import get_robot
    from envs.robots.kinematics import ChainKinematics

    spec = get_robot("panda")
    planner = ArmPlanner("panda")
    qpos = np.asarray(spec.rest_qpos, dtype=np.float64)
    pin = planner.planner.pinocchio_model
    pin.compute_forward_kinematics(qpos)
    start = pin.get_link_pose(planner.planner.link_name_2_idx[planner.planner.move_group])
    group = planner.planner.move_group_joint_indices
    half = np.radians(60) / 2  # a 60 degree turn about the vertical, 5 cm down
    turned = quat_mul(torch.tensor([[np.cos(half), 0, 0, np.sin(half)]]), torch.tensor(np.asarray(start.q))[None]).numpy()[0]
    goal = (*(np.asarray(start.p) + [0.0, 0.0, -0.05]), *turned)

    kin = ChainKinematics(spec.model, spec.tcp_link, spec.arm_indices)

    def turns(traj):
        return _tcp_turns(kin, np.vstack((qpos[group][None], traj))).numpy()

    fast, _ = planner.plan(PlanRequest("panda", tuple(qpos), goal))
    slow, _ = planner.plan(PlanRequest("panda", tuple(qpos), goal, turn_limit=0.8))
    assert turns(fast).max() > 0.05  # full speed turns faster than the limit asks: the limit has work to do
    assert turns(slow).max() <= 0.8 * 0.05 + 1e-3 and len(slow) > len(fast)
    np.testing.assert_allclose(slow[-1], fast[-1], atol=1e-5)  # the same path to the same end
    assert abs(turns(slow).sum() - turns(fast).sum()) < 0.02


def test_a_plan_depends_on_its_request_alone():
    """A box on the straight line to the goal leaves it to RRTConnect, whose sampling is random:
    the same request gives the same plan in another planner and after other requests, so
    generation's episodes do not depend on which worker planned them or in what order."""
    from demos.planner import ArmPlanner, Box, PlanRequest
    from envs.robots import get_robot

    qpos = np.asarray(get_robot("panda").rest_qpos, dtype=np.float64)
    first = ArmPlanner("panda")
    pin = first.planner.pinocchio_model
    pin.compute_forward_kinematics(qpos)
    start = pin.get_link_pose(first.planner.link_name_2_idx[first.planner.move_group])
    p, q = np.asarray(start.p), tuple(start.q)
    box = Box("box", (*(p + [0.0, 0.15, -0.05]), 1.0, 0.0, 0.0, 0.0), (0.03, 0.03, 0.03))

    def request(dz):
        return PlanRequest("panda", tuple(qpos), (*(p + [0.0, 0.3, dz]), *q), obstacles=(box,))

    first._set_obstacles(request(-0.1).obstacles, None)
    assert "collision" in first._plan_straight(first._mplib.Pose(request(-0.1).goal[:3], q), qpos, 0.05, 1.0)["status"]
    a, why = first.plan(request(-0.1))
    assert a is not None, why
    first.plan(request(-0.08))
    again, _ = first.plan(request(-0.1))
    other, _ = ArmPlanner("panda").plan(request(-0.1))
    np.testing.assert_array_equal(a, again)
    np.testing.assert_array_equal(a, other)


def test_mplib_is_imported_without_toppra_or_pyplot_and_both_still_work():
    """mplib imports toppra, which times RRT paths (and imports SciPy's interpolation), and toppra
    imports matplotlib.pyplot for plots a planner never draws: both are imported at their first
    use instead, and then work as imported: an RRT plan in a fresh process, then pyplot."""
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from demos.planner import ArmPlanner, Box, PlanRequest, import_mplib\n"
        "from envs.robots import get_robot\n"
        "import_mplib()\n"
        "assert not {'scipy.interpolate', 'matplotlib.figure'} & set(sys.modules), 'imported at once'\n"
        "planner = ArmPlanner('panda')\n"
        "qpos = np.asarray(get_robot('panda').rest_qpos, dtype=np.float64)\n"
        "pin = planner.planner.pinocchio_model\n"
        "pin.compute_forward_kinematics(qpos)\n"
        "start = pin.get_link_pose(planner.planner.link_name_2_idx[planner.planner.move_group])\n"
        "p = np.asarray(start.p)\n"
        "box = Box('box', (*(p + [0.0, 0.15, -0.05]), 1.0, 0.0, 0.0, 0.0), (0.03, 0.03, 0.03))\n"
        "goal = (*(p + [0.0, 0.3, -0.1]), *start.q)\n"
        "traj, why = planner.plan(PlanRequest('panda', tuple(qpos), goal, obstacles=(box,)))\n"
        "assert traj is not None and 'scipy.interpolate' in sys.modules, why  # by RRT, timed by toppra\n"
        "assert 'matplotlib.figure' not in sys.modules\n"
        "import matplotlib\n"
        "matplotlib.use('Agg')\n"
        "import matplotlib.pyplot as plt\n"
        "import toppra.algorithm.algorithm as a\n"
        "fig = plt.figure()\n"
        "a.plt.plot([0, 1], [0, 1])\n"
        "assert plt.gcf() is fig and type(sys.modules['matplotlib.pyplot']).__name__ == 'module'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

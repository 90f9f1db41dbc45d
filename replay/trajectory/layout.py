"""Where a trajectory file's pieces live and how an episode is laid out in HDF5 (docs/FORMAT.md):
the one module that names `traj_<i>` groups and opens HDF5 files.

Names beside a file NAME.h5: its JSON sidecar NAME.json; NAME.h5.parts/, the segments of an
unfinished file (writer.py); NAME.pending.h5, a run's output until it may replace NAME.h5
(files.py); NAME.h5.tmp (NAME.json.tmp), a file written whole before it atomically replaces
NAME.h5 (NAME.json). Each episode group carries its sidecar entry as attribute "meta" (its commit
mark); the root group carries the header (the sidecar without its episode list) as "meta".
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import h5py
import numpy as np

from replay.trajectory import maniskill
from replay.trajectory.episode import CompressedImages, Demo, Episode, TrajectoryError, image_storage, state_storage


# ---- names -------------------------------------------------------------------------------------------
def group_name(episode_id: int) -> str:
    return f"traj_{episode_id}"


def sidecar_path(path: str | Path) -> Path:
    return Path(path).with_suffix(".json")


def parts_dir(path: str | Path) -> Path:
    """Where an unfinished file keeps its segments."""
    path = Path(path)
    return path.with_name(path.name + ".parts")


def pending_path(out: str | Path) -> Path:
    """Where a run writes a file that may replace `out` only once it is complete."""
    out = Path(out)
    return out.with_name(out.stem + ".pending" + out.suffix)


def tmp_path(path: str | Path) -> Path:
    """The name a file is written under before it replaces `path` (fsync, rename)."""
    path = Path(path)
    return path.with_name(path.name + ".tmp")


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomically(tmp: Path, path: Path) -> None:
    """`tmp`, fsynced, becomes `path`."""
    fsync_file(tmp)
    os.replace(tmp, path)


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = tmp_path(path)
    with open(tmp, "w") as f:
        json.dump(maniskill.split_own_kwargs(data), f, indent=1)  # env_kwargs that ManiSkill's gym.make takes
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ---- HDF5 ---------------------------------------------------------------------------------------------
# Files are written in HDF5 1.10's format (read by HDF5 >= 1.10, every h5py 3): its object headers and
# one-chunk datasets take ~0.2 KB of metadata a dataset where the oldest format takes ~3 KB, which
# outweighs the data itself for a task with many small actors (the drawing tasks' ink dots).
WRITE_LIBVER = ("v110", "latest")


def open_h5(path: Path, mode: str = "r") -> h5py.File:
    """The HDF5 file; a TrajectoryError when it is locked or not HDF5. Mode "w" creates it."""
    try:
        return h5py.File(path, mode) if mode == "r" else h5py.File(path, mode, libver=WRITE_LIBVER)
    except OSError as e:
        if "lock" in str(e):
            raise TrajectoryError(f"{path}: in use by another process that writes it ({e})") from None
        if mode != "r":
            raise TrajectoryError(f"{path}: cannot write ({e})") from None
        raise TrajectoryError(f"{path}: not a readable HDF5 file ({e})") from None


Storage = Callable[[np.ndarray], "dict[str, Any] | None"]


def _plain(value: np.ndarray) -> None:
    return None


def write_tree(group: h5py.Group, tree: dict[str, Any], storage: Storage) -> None:
    """Writes a tree of arrays, each with the dataset options `storage` gives it."""
    for key, value in tree.items():
        if isinstance(value, dict):
            write_tree(group.create_group(key), value, storage)
        elif isinstance(value, CompressedImages):
            value.write(group, key)
        else:
            value = np.asarray(value)
            group.create_dataset(key, data=value, **((storage(value) if value.size else None) or {}))


def _read_tree(group: h5py.Group) -> dict[str, Any]:
    return {k: _read_tree(v) if isinstance(v, h5py.Group) else v[()] for k, v in group.items()}


def _read_obs(node: h5py.Group | h5py.Dataset) -> Any:
    return _read_tree(node) if isinstance(node, h5py.Group) else node[()]


def write_header(f: h5py.File, header: dict) -> None:
    f.attrs["meta"] = json.dumps(maniskill.split_own_kwargs(header))  # as the sidecar stores it


def write_episode(f: h5py.Group, episode: Episode, entry: dict, compress: bool) -> None:
    g = f.create_group(group_name(entry["episode_id"]))
    g.create_dataset("actions", data=episode.actions.astype(np.float32))
    for key in ("expert_actions", "reference_actions"):
        if getattr(episode, key) is not None:
            g.create_dataset(key, data=getattr(episode, key).astype(np.float32))
    for key in ("terminated", "truncated", "success", "fail"):
        g.create_dataset(key, data=np.asarray(getattr(episode, key), dtype=bool))
    if episode.rewards is not None:
        g.create_dataset("rewards", data=episode.rewards.astype(np.float32))
    write_tree(g.create_group("env_states"), episode.env_states, state_storage)
    if isinstance(episode.obs, dict):
        write_tree(g.create_group("obs"), episode.obs, image_storage if compress else _plain)
    elif episode.obs is not None:  # a flat obs mode (state): one (T + 1, D) dataset
        g.create_dataset("obs", data=np.asarray(episode.obs))
    else:  # obs mode none: an empty group, as ManiSkill records its empty observation dict
        g.create_group("obs")
    g.attrs["meta"] = json.dumps(entry)  # the commit mark


def _has_obs(g: h5py.Group) -> bool:
    """Whether an episode group holds observations (obs mode none: no `obs`, or an empty group)."""
    return "obs" in g and (isinstance(g["obs"], h5py.Dataset) or len(g["obs"]) > 0)


def _optional(g: h5py.Group, key: str) -> np.ndarray | None:
    return g[key][()] if key in g else None


def read_episode(f: h5py.File, entry: dict, with_obs: bool) -> Episode:
    g = f[group_name(entry["episode_id"])]
    return Episode(
        actions=g["actions"][()],
        terminated=g["terminated"][()],
        truncated=g["truncated"][()],
        success=g["success"][()],
        fail=g["fail"][()] if "fail" in g else np.zeros(len(g["actions"]), bool),
        env_states=_read_tree(g["env_states"]),
        seed=entry.get("seed", entry.get("episode_seed", 0)),
        reset_kwargs={k: v for k, v in entry.get("reset_kwargs", {}).items() if k != "env_kwargs"},
        # files of earlier writers kept the scene kwargs in reset_kwargs, which ManiSkill's env.reset refuses
        scene_kwargs=entry.get("scene_kwargs") or entry.get("reset_kwargs", {}).get("env_kwargs", {}),
        rewards=_optional(g, "rewards"),
        obs=_read_obs(g["obs"]) if with_obs and _has_obs(g) else None,
        info=entry.get("info", {}),
        expert_actions=_optional(g, "expert_actions"),
        reference_actions=_optional(g, "reference_actions"),
    )


def read_demo(f: h5py.File, episode_id: int, with_obs: bool) -> Demo:
    g = f[group_name(episode_id)]
    obs = _read_obs(g["obs"]) if with_obs and _has_obs(g) else None
    return Demo(obs, g["actions"][()], _optional(g, "expert_actions"), _optional(g, "reference_actions"))


def copy_episode(src: h5py.File, episode_id: int, dst: h5py.File, new_entry: dict | None = None) -> None:
    """Copies episode `episode_id` of `src` into `dst`, as it is or as episode `new_entry` (its
    id and commit mark)."""
    name = group_name(episode_id if new_entry is None else new_entry["episode_id"])
    src.copy(src[group_name(episode_id)], dst, name=name)
    if new_entry is not None:
        dst[name].attrs["meta"] = json.dumps(new_entry)


def link_episode(f: h5py.File, episode_id: int, segment: str) -> None:
    """Episode `episode_id` of container `f` as an external link into file `segment` (a path
    relative to the container's folder). Made with HDF5's own call, as h5py.ExternalLink makes
    it (the same bytes) at a quarter of the cost: a commit links every episode again."""
    name = group_name(episode_id).encode()
    f.id.links.create_external(name, os.fsencode(segment), b"/" + name)


def linked_segment(f: h5py.File, episode_id: int) -> str | None:
    """The file name an episode of a container links to, or None where the file holds it itself."""
    link = f.get(group_name(episode_id), getlink=True)
    return Path(link.filename).name if isinstance(link, h5py.ExternalLink) else None


# ---- metadata ---------------------------------------------------------------------------------------
def _read_sidecar(side: Path) -> tuple[dict | None, str | None]:
    """(sidecar, None), (None, why it is unusable), or (None, None) when there is none."""
    if not side.is_file():
        return None, None
    try:
        with open(side) as f:
            meta = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return None, f"{side}: not valid JSON ({e})"
    if not isinstance(meta, dict) or not isinstance(meta.get("env_info"), dict) or not isinstance(meta.get("episodes"), list):
        return None, f"{side}: lacks env_info/episodes: not a trajectory sidecar"
    return meta, None


def _header(f: h5py.File) -> dict | None:
    try:
        header = json.loads(f.attrs["meta"]) if "meta" in f.attrs else None
    except (json.JSONDecodeError, TypeError):
        return None
    return header if isinstance(header, dict) and isinstance(header.get("env_info"), dict) else None


def _group_names(f: h5py.File) -> list[str]:
    return [k for k in f.keys() if k.startswith(group_name(""))]


def read_meta(path: str | Path) -> dict:
    """The metadata of a trajectory file: its sidecar, checked against the HDF5 file, or rebuilt
    from the file's header and commit marks when the sidecar is stale, missing or another run's.
    A file ManiSkill wrote is read as ours (`maniskill.adopt`)."""
    path = Path(path)
    if not path.is_file():
        raise TrajectoryError(f"{path}: no such file")
    side, why = _read_sidecar(sidecar_path(path))
    with open_h5(path) as f:
        try:
            names = _group_names(f)
            header = _header(f)
            if header is not None:
                ids = [e.get("episode_id") for e in side["episodes"]] if side else None
                if side and side.get("run_id") == header.get("run_id") and ids == list(range(len(names))):
                    return maniskill.merge_own_kwargs(side)
                # a dangling link raises KeyError below
                return maniskill.merge_own_kwargs({**header, "episodes": _committed(f)})
            if side is None:
                raise TrajectoryError(why or f"{path}: no trajectory header and no JSON sidecar {sidecar_path(path).name}: not a trajectory file")
            missing = [e.get("episode_id") for e in side["episodes"] if group_name(e.get("episode_id")) not in f]
            if missing:
                raise TrajectoryError(f"{path}: sidecar lists episodes missing from the HDF5 file: {missing[:5]}")
            if len(names) > len(side["episodes"]):  # committed groups the sidecar does not list yet
                side["episodes"] = _committed(f)
            return maniskill.adopt(side, f, path) if maniskill.is_maniskill(side) else maniskill.merge_own_kwargs(side)
        except (KeyError, RuntimeError, OSError) as e:
            raise TrajectoryError(
                f"{path}: damaged trajectory file, or an unfinished one away from its {parts_dir(path).name} folder ({e})"
            ) from None


def _committed(f: h5py.File) -> list[dict]:
    """Entries of the contiguous run of committed episodes traj_0, traj_1, ... (commit marks)."""
    out: list[dict] = []
    while group_name(len(out)) in f and "meta" in f[group_name(len(out))].attrs:
        try:
            out.append(json.loads(f[group_name(len(out))].attrs["meta"]))
        except json.JSONDecodeError:
            break
    return out


def check_sidecar(path: str | Path) -> None:
    """Refuses a file whose JSON sidecar does not describe its HDF5 file: the same episodes, each
    with its actions and env states, of the listed lengths. (`read_meta` may rebuild the metadata
    from the file's own marks; whoever rewrites the episodes refuses a disagreement, since one of
    the two is wrong.)"""
    path = Path(path)
    side = sidecar_path(path)
    try:
        listed = json.loads(side.read_text())["episodes"] if side.is_file() else read_meta(path)["episodes"]
        listed = [(int(e["episode_id"]), e.get("elapsed_steps")) for e in listed]
    except (ValueError, KeyError, TypeError) as e:
        raise TrajectoryError(f"{side}: unreadable episode list ({e})") from None
    with open_h5(path) as f:
        n_groups = len(_group_names(f))
        if n_groups != len(listed):
            raise TrajectoryError(f"{path}: the HDF5 file holds {n_groups} episodes, its sidecar lists {len(listed)}")
        for eid, steps in listed:
            g = f.get(group_name(eid))
            if g is None or "actions" not in g or "env_states" not in g:
                raise TrajectoryError(f"{path}: sidecar lists episode {eid}, which the HDF5 file lacks or holds incomplete")
            n = g["actions"].shape[0]
            if steps is not None and n != steps:
                raise TrajectoryError(f"{path}: sidecar says episode {eid} has {steps} steps, the HDF5 file {n}")


"""Trajectory files: HDF5 episodes + a JSON sidecar, as specified in docs/FORMAT.md.

`TrajectoryWriter` appends committed episodes and makes each durable before the next: the
episode's group is written, its sidecar entry is stored as the group's "meta" attribute (the
commit mark, written last) and the HDF5 file is flushed. The JSON sidecar is rewritten
atomically every few seconds and at close; a reader that finds committed groups the sidecar
does not list yet (the run was killed in between) takes their entries from the commit marks.
`TrajectoryWriter(..., resume=True)` drops anything written past the last committed episode and
continues with the next id.

`TrajectoryFile` reads lazily: the HDF5 file is opened on first access in the process that uses
it, so DataLoader workers forked later each open their own handle.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import h5py
import numpy as np

FORMAT_VERSION = 1


class TrajectoryError(ValueError):
    """A file that is missing, not a trajectory file, or inconsistent with its sidecar."""


@dataclass
class Episode:
    """One episode in memory. Arrays are numpy; T = number of actions."""

    actions: np.ndarray  # (T, A) float32
    terminated: np.ndarray  # (T,) bool
    truncated: np.ndarray  # (T,) bool
    success: np.ndarray  # (T,) bool
    fail: np.ndarray  # (T,) bool
    env_states: dict[str, dict[str, np.ndarray]]  # group -> name -> (T + 1, D)
    seed: int
    reset_kwargs: dict[str, Any] = field(default_factory=dict)
    rewards: np.ndarray | None = None  # (T,) float32
    obs: dict[str, Any] | None = None  # nested dict of (T + 1, ...) arrays
    info: dict[str, Any] = field(default_factory=dict)  # JSON-serialisable extras

    @property
    def length(self) -> int:
        return int(self.actions.shape[0])


def sidecar_path(path: str | Path) -> Path:
    return Path(path).with_suffix(".json")


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


IMAGE_ROWS_PER_CHUNK = 16  # image rows per chunk: see image_storage
IMAGE_GZIP_LEVEL = 6


def image_storage(value: np.ndarray) -> dict[str, Any] | None:
    """h5py dataset options for one episode's images, or None for other arrays. Images are
    (T + 1, H, W, C) uint8 (colour) or int16 (depth, segmentation); (T + 1, P, C) uint8 (point
    colours) too. Each chunk holds the whole episode for a band of 16 image rows, so one frame's
    band lies a few KB after the previous frame's and deflate's 32 KB window finds what did not
    change between frames (measured in docs/PERFORMANCE.md: about 2x smaller than whole frames
    per chunk). int16 gets the shuffle filter (high and low bytes compressed apart)."""
    if value.dtype not in (np.uint8, np.int16) or value.ndim < 3 or (value.ndim == 3 and value.dtype != np.uint8):
        return None
    chunks = (value.shape[0], min(IMAGE_ROWS_PER_CHUNK, value.shape[1]), *value.shape[2:])
    return {"chunks": chunks, "compression": "gzip", "compression_opts": IMAGE_GZIP_LEVEL, "shuffle": value.dtype == np.int16}


def _write_tree(group: h5py.Group, tree: dict[str, Any], compress: bool) -> None:
    for key, value in tree.items():
        if isinstance(value, dict):
            _write_tree(group.create_group(key), value, compress)
        else:
            value = np.asarray(value)
            images = image_storage(value) if compress and value.size else None
            group.create_dataset(key, data=value, **(images or {}))


def _read_tree(group: h5py.Group) -> dict[str, Any]:
    return {k: _read_tree(v) if isinstance(v, h5py.Group) else v[()] for k, v in group.items()}


def _read_obs(node: h5py.Group | h5py.Dataset) -> Any:
    return _read_tree(node) if isinstance(node, h5py.Group) else node[()]


def read_meta(path: str | Path) -> dict:
    """The sidecar of a trajectory file, checked against the HDF5 file beside it."""
    path = Path(path)
    if not path.is_file():
        raise TrajectoryError(f"{path}: no such file")
    side = sidecar_path(path)
    if not side.is_file():
        raise TrajectoryError(f"{path}: no JSON sidecar {side.name} beside it: not a trajectory file")
    try:
        with open(side) as f:
            meta = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TrajectoryError(f"{side}: not valid JSON ({e})") from None
    if not isinstance(meta, dict) or "env_info" not in meta or "episodes" not in meta:
        raise TrajectoryError(f"{side}: lacks env_info/episodes: not a trajectory sidecar")
    try:
        with h5py.File(path, "r") as f:
            missing = [e["episode_id"] for e in meta["episodes"] if f"traj_{e['episode_id']}" not in f]
            if not missing and len(f.keys()) > len(meta["episodes"]):
                meta["episodes"] = _committed(f)
    except OSError as e:
        raise TrajectoryError(f"{path}: not a readable HDF5 file ({e})") from None
    if missing:
        raise TrajectoryError(f"{path}: sidecar lists episodes missing from the HDF5 file: {missing[:5]}")
    return meta


def _committed(f: h5py.File) -> list[dict]:
    """Entries of the contiguous run of committed episodes traj_0, traj_1, ... (commit marks)."""
    out = []
    while f"traj_{len(out)}" in f and "meta" in f[f"traj_{len(out)}"].attrs:
        out.append(json.loads(f[f"traj_{len(out)}"].attrs["meta"]))
    return out


class TrajectoryWriter:
    """Appends episodes to `path` (+ its sidecar). `meta` holds env_info, source_type and the
    like; episodes are numbered from 0, or after the last committed one with resume=True."""

    SIDECAR_EVERY = 5.0  # seconds between sidecar rewrites

    def __init__(self, path: str | Path, meta: dict, resume: bool = False, compress_images: bool = True):
        self.path = Path(path)
        self.sidecar = sidecar_path(self.path)
        self.compress = compress_images
        self._last_sidecar = time.monotonic()
        if resume and self.path.exists():
            self.meta = read_meta(self.path)
            self._file = h5py.File(self.path, "a")
            self.meta["episodes"] = _committed(self._file)
            committed = {f"traj_{e['episode_id']}" for e in self.meta["episodes"]}
            for name in [k for k in self._file.keys() if k not in committed]:
                del self._file[name]  # written after the last commit: the run died mid-episode
            self._file.flush()
            _write_json_atomic(self.sidecar, self.meta)
        else:
            self.meta = {**meta, "format_version": FORMAT_VERSION, "episodes": []}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = h5py.File(self.path, "w")
            _write_json_atomic(self.sidecar, self.meta)

    @property
    def num_episodes(self) -> int:
        return len(self.meta["episodes"])

    def add(self, episode: Episode, control_mode: str) -> int:
        eid = self.num_episodes
        g = self._file.create_group(f"traj_{eid}")
        g.create_dataset("actions", data=episode.actions.astype(np.float32))
        for key in ("terminated", "truncated", "success", "fail"):
            g.create_dataset(key, data=np.asarray(getattr(episode, key), dtype=bool))
        if episode.rewards is not None:
            g.create_dataset("rewards", data=episode.rewards.astype(np.float32))
        _write_tree(g.create_group("env_states"), episode.env_states, compress=False)
        if isinstance(episode.obs, dict):
            _write_tree(g.create_group("obs"), episode.obs, compress=self.compress)
        elif episode.obs is not None:  # a flat obs mode (state): one (T + 1, D) dataset
            g.create_dataset("obs", data=np.asarray(episode.obs))
        entry = {
            "episode_id": eid,
            "seed": int(episode.seed),
            "episode_seed": int(episode.seed),
            "reset_kwargs": episode.reset_kwargs or {"seed": int(episode.seed)},
            "control_mode": control_mode,
            "elapsed_steps": episode.length,
            "success": bool(episode.success[-1]) if episode.length else False,
            **({"info": episode.info} if episode.info else {}),
        }
        g.attrs["meta"] = json.dumps(entry)  # the commit mark
        self._file.flush()
        self.meta["episodes"].append(entry)
        if time.monotonic() - self._last_sidecar > self.SIDECAR_EVERY:
            self.write_sidecar()
        return eid

    def write_sidecar(self) -> None:
        _write_json_atomic(self.sidecar, self.meta)
        self._last_sidecar = time.monotonic()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self.write_sidecar()

    def __enter__(self) -> "TrajectoryWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TrajectoryFile:
    """Read access to a trajectory file; the HDF5 handle opens lazily (fork-safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.meta = read_meta(self.path)
        self._file: h5py.File | None = None
        self._pid = -1

    @property
    def h5(self) -> h5py.File:
        if self._file is None or self._pid != os.getpid():
            self._file = h5py.File(self.path, "r")
            self._pid = os.getpid()
        return self._file

    @property
    def episodes(self) -> list[dict]:
        return self.meta["episodes"]

    @property
    def env_info(self) -> dict:
        return self.meta["env_info"]

    def __len__(self) -> int:
        return len(self.episodes)

    def episode(self, episode_id: int, with_obs: bool = True) -> Episode:
        entry = next((e for e in self.episodes if e["episode_id"] == episode_id), None)
        if entry is None:
            raise TrajectoryError(f"{self.path}: no episode {episode_id}")
        g = self.h5[f"traj_{episode_id}"]
        return Episode(
            actions=g["actions"][()],
            terminated=g["terminated"][()],
            truncated=g["truncated"][()],
            success=g["success"][()],
            fail=g["fail"][()] if "fail" in g else np.zeros(len(g["actions"]), bool),
            env_states=_read_tree(g["env_states"]),
            seed=entry.get("seed", entry.get("episode_seed", 0)),
            reset_kwargs=entry.get("reset_kwargs", {}),
            rewards=g["rewards"][()] if "rewards" in g else None,
            obs=_read_obs(g["obs"]) if with_obs and "obs" in g else None,
            info=entry.get("info", {}),
        )

    def __iter__(self) -> Iterator[Episode]:
        for e in self.episodes:
            yield self.episode(e["episode_id"])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

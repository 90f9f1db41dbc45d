"""Trajectory files: HDF5 episodes + a JSON sidecar, as specified in docs/FORMAT.md.

Writing never modifies committed data in place, so a process killed at any moment (SIGKILL)
leaves a readable file. HDF5 rewrites its own metadata in place when a group is added, and a kill
during that write can corrupt the groups already there, so `TrajectoryWriter` works like this:

- a commit writes the new episodes into a segment file `OUT.h5.parts/seg_<first id>.h5` under a
  temporary name, fsyncs and renames it, then replaces OUT.h5 by a small *container* whose
  `traj_<i>` entries are external links into the segments (temporary name, fsync, rename). That
  last rename is the commit; h5py follows the links, so readers see ordinary groups.
- `close()` consolidates: every episode is copied into one self-contained file, which replaces
  the container (temporary name, rename); then the segments are removed.
- Each episode group carries its sidecar entry as attribute "meta" (its commit mark) and the root
  group carries the header (the sidecar without its episode list) as attribute "meta", so the HDF5
  file describes itself. The JSON sidecar is rewritten atomically every few seconds and at close;
  a reader whose sidecar is stale, missing or from another run rebuilds it from the marks.
- `add()` stages an episode and commits when enough are staged or enough time has passed;
  `add_batch()` commits at once. `TrajectoryWriter(..., resume=True)` continues after the last
  committed episode; an interrupted consolidation or commit leaves only temporary files, which the
  next writer removes.

`TrajectoryFile` reads lazily: the HDF5 file is opened on first access in the process that uses
it, so DataLoader workers forked later each open their own handle.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import h5py
import numpy as np

from replay import maniskill

FORMAT_VERSION = 2  # 2: env states as ManiSkill names and lays them out (docs/FORMAT.md)


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
    obs: dict[str, Any] | np.ndarray | None = None  # (T + 1, D) flat state, or a nested dict of (T + 1, ...) arrays
    info: dict[str, Any] = field(default_factory=dict)  # JSON-serialisable extras
    expert_actions: np.ndarray | None = None  # (T, A) float32: noise-free labels of a perturbed conversion
    reference_actions: np.ndarray | None = None  # (T, A) float32: its source path's own steps

    @property
    def length(self) -> int:
        return int(self.actions.shape[0])


def sidecar_path(path: str | Path) -> Path:
    return Path(path).with_suffix(".json")


def parts_dir(path: str | Path) -> Path:
    """Where an unfinished file keeps its segments."""
    path = Path(path)
    return path.with_name(path.name + ".parts")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(maniskill.split_own_kwargs(data), f, indent=1)  # env_kwargs ManiSkill's gym.make takes
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
    change between frames (an 86-frame episode of two 128 x 128 rgbd cameras: 310 KB against
    519 KB with whole frames per chunk). int16 gets the shuffle filter (high and low bytes compressed apart)."""
    if value.dtype not in (np.uint8, np.int16) or value.ndim < 3 or (value.ndim == 3 and value.dtype != np.uint8):
        return None
    chunks = (value.shape[0], min(IMAGE_ROWS_PER_CHUNK, value.shape[1]), *value.shape[2:])
    return {"chunks": chunks, "compression": "gzip", "compression_opts": IMAGE_GZIP_LEVEL, "shuffle": value.dtype == np.int16}


@dataclass
class CompressedImages:
    """An image array already encoded as its HDF5 chunks (the filters of `image_storage`: shuffle
    for int16, then deflate), so that whoever writes the file only copies bytes. Made where the
    images are made (`precompress`, in conversion workers); written with `write_direct_chunk`."""

    shape: tuple[int, ...]
    dtype: np.dtype
    storage: dict[str, Any]
    chunks: list[tuple[tuple[int, ...], bytes]]  # (offset, filtered bytes)

    @classmethod
    def encode(cls, value: np.ndarray, storage: dict[str, Any]) -> "CompressedImages":
        shape, size = value.shape, storage["chunks"]
        out = []
        for offset in itertools.product(*(range(0, n, c) for n, c in zip(shape, size))):
            block = value[tuple(slice(o, o + c) for o, c in zip(offset, size))]
            if block.shape != tuple(size):  # an edge chunk is stored whole, zero-filled
                full = np.zeros(size, value.dtype)
                full[tuple(slice(0, n) for n in block.shape)] = block
                block = full
            raw = np.ascontiguousarray(block).view(np.uint8).reshape(-1, value.dtype.itemsize)
            data = (raw.T if storage["shuffle"] else raw).tobytes()
            out.append((offset, zlib.compress(data, storage["compression_opts"])))
        return cls(tuple(shape), value.dtype, storage, out)

    def write(self, group: h5py.Group, key: str) -> None:
        ds = group.create_dataset(key, shape=self.shape, dtype=self.dtype, **self.storage)
        for offset, data in self.chunks:
            ds.id.write_direct_chunk(offset, data)


def precompress(tree: Any) -> Any:
    """An observation tree with every image array (see `image_storage`) encoded as CompressedImages."""
    if isinstance(tree, dict):
        return {k: precompress(v) for k, v in tree.items()}
    if isinstance(tree, np.ndarray) and tree.size:
        storage = image_storage(tree)
        if storage is not None:
            return CompressedImages.encode(tree, storage)
    return tree


def _write_tree(group: h5py.Group, tree: dict[str, Any], compress: bool) -> None:
    for key, value in tree.items():
        if isinstance(value, dict):
            _write_tree(group.create_group(key), value, compress)
        elif isinstance(value, CompressedImages):
            value.write(group, key)
        else:
            value = np.asarray(value)
            images = image_storage(value) if compress and value.size else None
            group.create_dataset(key, data=value, **(images or {}))


def _read_tree(group: h5py.Group) -> dict[str, Any]:
    return {k: _read_tree(v) if isinstance(v, h5py.Group) else v[()] for k, v in group.items()}


def _read_obs(node: h5py.Group | h5py.Dataset) -> Any:
    return _read_tree(node) if isinstance(node, h5py.Group) else node[()]


def episode_entry(episode_id: int, episode: Episode, control_mode: str) -> dict:
    """The episode's sidecar entry (also its commit mark)."""
    return {
        "episode_id": episode_id,
        "seed": int(episode.seed),
        "episode_seed": int(episode.seed),
        "reset_kwargs": episode.reset_kwargs or {"seed": int(episode.seed)},
        "control_mode": control_mode,
        "elapsed_steps": episode.length,
        "success": bool(episode.success[-1]) if episode.length else False,
        **({"info": episode.info} if episode.info else {}),
    }


def _write_episode(f: h5py.Group, episode: Episode, entry: dict, compress: bool) -> None:
    g = f.create_group(f"traj_{entry['episode_id']}")
    g.create_dataset("actions", data=episode.actions.astype(np.float32))
    for key in ("expert_actions", "reference_actions"):
        if getattr(episode, key) is not None:
            g.create_dataset(key, data=getattr(episode, key).astype(np.float32))
    for key in ("terminated", "truncated", "success", "fail"):
        g.create_dataset(key, data=np.asarray(getattr(episode, key), dtype=bool))
    if episode.rewards is not None:
        g.create_dataset("rewards", data=episode.rewards.astype(np.float32))
    _write_tree(g.create_group("env_states"), episode.env_states, compress=False)
    if isinstance(episode.obs, dict):
        _write_tree(g.create_group("obs"), episode.obs, compress=compress)
    elif episode.obs is not None:  # a flat obs mode (state): one (T + 1, D) dataset
        g.create_dataset("obs", data=np.asarray(episode.obs))
    else:  # obs mode none: an empty group, as ManiSkill records its empty observation dict
        g.create_group("obs")
    g.attrs["meta"] = json.dumps(entry)  # the commit mark


def _open_h5(path: Path, mode: str = "r") -> h5py.File:
    try:
        return h5py.File(path, mode)
    except OSError as e:
        if "lock" in str(e):
            raise TrajectoryError(f"{path}: in use by another process that writes it ({e})") from None
        raise TrajectoryError(f"{path}: not a readable HDF5 file ({e})") from None


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


def has_obs(g: h5py.Group) -> bool:
    """Whether an episode group holds observations (obs mode none: no `obs`, or an empty group)."""
    return "obs" in g and (isinstance(g["obs"], h5py.Dataset) or len(g["obs"]) > 0)


def read_meta(path: str | Path) -> dict:
    """The metadata of a trajectory file: its sidecar, checked against the HDF5 file, or rebuilt
    from the file's header and commit marks when the sidecar is stale, missing or another run's.
    A file ManiSkill wrote is read as ours (`replay.maniskill.adopt`)."""
    path = Path(path)
    if not path.is_file():
        raise TrajectoryError(f"{path}: no such file")
    side, why = _read_sidecar(sidecar_path(path))
    with _open_h5(path) as f:
        try:
            names = [k for k in f.keys() if k.startswith("traj_")]
            header = _header(f)
            if header is not None:
                ids = [e.get("episode_id") for e in side["episodes"]] if side else None
                if side and side.get("run_id") == header.get("run_id") and ids == list(range(len(names))):
                    return maniskill.merge_own_kwargs(side)
                return maniskill.merge_own_kwargs({**header, "episodes": _committed(f)})  # a dangling link raises KeyError below
            if side is None:
                raise TrajectoryError(why or f"{path}: no trajectory header and no JSON sidecar {sidecar_path(path).name}: not a trajectory file")
            missing = [e.get("episode_id") for e in side["episodes"] if f"traj_{e.get('episode_id')}" not in f]
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
    out = []
    while f"traj_{len(out)}" in f and "meta" in f[f"traj_{len(out)}"].attrs:
        try:
            out.append(json.loads(f[f"traj_{len(out)}"].attrs["meta"]))
        except json.JSONDecodeError:
            break
    return out


def batch_env_kwargs(episodes: list[Episode]) -> dict[str, list]:
    """gym.make kwargs that rebuild these episodes' envs in one batch, env i for episode i: the
    one-env lists a task that draws geometry per env records in reset_kwargs["env_kwargs"]
    (docs/FORMAT.md; PegInsertionSide: {"geometry_seed": [g]}), concatenated. Empty for tasks
    that record none."""
    per_env = [e.reset_kwargs.get("env_kwargs", {}) for e in episodes]
    kwargs: dict[str, list] = {}
    for key in sorted({k for kw in per_env for k in kw}):
        if not all(key in kw for kw in per_env):
            raise TrajectoryError(f"episodes {[e.seed for e in episodes]} disagree on whether they record env kwarg {key!r}")
        kwargs[key] = [v for kw in per_env for v in kw[key]]
    return kwargs


class TrajectoryWriter:
    """Appends episodes to `path` (+ its sidecar). `meta` holds env_info, source_type and the
    like; episodes are numbered from 0, or after the last committed one with resume=True."""

    SIDECAR_EVERY = 5.0  # seconds between sidecar rewrites
    COMMIT_EVERY = 2.0  # add(): seconds between commits ...
    COMMIT_STAGED = 16  # ... or this many staged episodes

    def __init__(self, path: str | Path, meta: dict, resume: bool = False, compress_images: bool = True):
        self.path = Path(path)
        self.sidecar = sidecar_path(self.path)
        self.parts = parts_dir(self.path)
        self.compress = compress_images
        self._tmp = self.path.with_name(self.path.name + ".tmp")
        self._staged: list[tuple[Episode, dict]] = []
        self._last_commit = self._last_sidecar = time.monotonic()
        self._closed = False
        self._tmp.unlink(missing_ok=True)  # a container write or consolidation that was killed
        if resume and self.path.exists():
            self.meta = read_meta(self.path)
            self.meta.setdefault("run_id", uuid.uuid4().hex)
            self._segments = self._segments_in_file()
        else:
            self.meta = {**meta, "format_version": FORMAT_VERSION, "run_id": uuid.uuid4().hex, "episodes": []}
            self._segments = []
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._write_file([])
        self._clear_parts(keep={s for s in self._segments if s})
        self.write_sidecar()

    @property
    def header(self) -> dict:
        """The root header as stored: the sidecar without episodes, in its on-disk form."""
        return maniskill.split_own_kwargs({k: v for k, v in self.meta.items() if k != "episodes"})

    @property
    def num_episodes(self) -> int:
        """Committed plus staged episodes (the id the next one gets)."""
        return len(self.meta["episodes"]) + len(self._staged)

    def add(self, episode: Episode, control_mode: str) -> int:
        """Stages an episode; commits the staged ones when enough time passed or enough are staged."""
        eid = self.add_staged(episode, control_mode)
        if len(self._staged) >= self.COMMIT_STAGED or time.monotonic() - self._last_commit > self.COMMIT_EVERY:
            self.commit()
        return eid

    def add_batch(self, episodes: list[Episode], control_mode: str) -> list[int]:
        """Stages the episodes and commits: when this returns they are durable."""
        ids = [self.add_staged(e, control_mode) for e in episodes]
        self.commit()
        return ids

    def add_staged(self, episode: Episode, control_mode: str) -> int:
        """Stages an episode without committing; `commit()` (or close) makes it durable."""
        eid = self.num_episodes
        self._staged.append((episode, episode_entry(eid, episode, control_mode)))
        return eid

    def commit(self) -> None:
        """Makes the staged episodes durable: a new segment file, then a new container."""
        self._last_commit = time.monotonic()
        if not self._staged:
            return
        self._absorb_base()
        first = self._staged[0][1]["episode_id"]
        seg = f"seg_{first:06d}.h5"
        self.parts.mkdir(exist_ok=True)
        tmp = self.parts / (seg + ".tmp")
        with h5py.File(tmp, "w") as f:
            for episode, entry in self._staged:
                _write_episode(f, episode, entry, self.compress)
        _fsync(tmp)
        os.replace(tmp, self.parts / seg)
        segments = self._segments + [seg] * len(self._staged)
        self._write_file(segments)
        self._segments = segments
        self.meta["episodes"] += [entry for _, entry in self._staged]
        self._staged = []
        if time.monotonic() - self._last_sidecar > self.SIDECAR_EVERY:
            self.write_sidecar()

    def write_sidecar(self) -> None:
        _write_json_atomic(self.sidecar, self.meta)
        self._last_sidecar = time.monotonic()

    def close(self) -> None:
        """Commits what is staged and consolidates the file (no more segments)."""
        if self._closed:
            return
        self._closed = True
        self.commit()
        if any(self._segments):
            self._consolidate()
        self.write_sidecar()
        self._clear_parts(keep=set())

    # ---- files ----------------------------------------------------------------------------------
    def _segments_in_file(self) -> list[str | None]:
        """Per committed episode, the segment holding it, or None where it is in the file itself."""
        out = []
        with _open_h5(self.path) as f:
            for e in self.meta["episodes"]:
                link = f.get(f"traj_{e['episode_id']}", getlink=True)
                out.append(Path(link.filename).name if isinstance(link, h5py.ExternalLink) else None)
        return out

    def _absorb_base(self) -> None:
        """Episodes still inside the file itself move into a segment (a hard link to the file,
        or a copy) before the file is replaced by a container."""
        if all(self._segments):
            return
        self.parts.mkdir(exist_ok=True)
        base = self.parts / "base.h5"
        base.unlink(missing_ok=True)
        try:
            os.link(self.path, base)
        except OSError:
            shutil.copyfile(self.path, base)
            _fsync(base)
        self._segments = [s or base.name for s in self._segments]

    def _write_file(self, segments: list[str]) -> None:
        """Replaces the file by a container linking each episode to its segment."""
        with h5py.File(self._tmp, "w") as f:
            f.attrs["meta"] = json.dumps(self.header)
            for eid, seg in enumerate(segments):
                f[f"traj_{eid}"] = h5py.ExternalLink(f"{self.parts.name}/{seg}", f"/traj_{eid}")
        _fsync(self._tmp)
        os.replace(self._tmp, self.path)

    def _consolidate(self) -> None:
        sources: dict[str, h5py.File] = {}
        try:
            with h5py.File(self._tmp, "w") as dst:
                dst.attrs["meta"] = json.dumps(self.header)
                for eid, seg in enumerate(self._segments):
                    if seg not in sources:
                        sources[seg] = h5py.File(self.parts / seg, "r")
                    sources[seg].copy(sources[seg][f"traj_{eid}"], dst, name=f"traj_{eid}")
        finally:
            for f in sources.values():
                f.close()
        _fsync(self._tmp)
        os.replace(self._tmp, self.path)
        self._segments = [None] * len(self._segments)

    def _clear_parts(self, keep: set[str]) -> None:
        """Removes segments not in `keep` (left by a killed commit, or all after consolidating)."""
        if not self.parts.is_dir():
            return
        for p in self.parts.iterdir():
            if p.name not in keep and (p.name.startswith("seg_") or p.name.startswith("base.h5")):
                p.unlink()
        if not keep:
            try:
                self.parts.rmdir()
            except OSError:
                pass

    def __enter__(self) -> "TrajectoryWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TrajectoryFile:
    """Read access to a trajectory file; the HDF5 handle opens lazily (fork-safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.meta = read_meta(self.path)
        version = self.meta.get("format_version", FORMAT_VERSION)  # files of other sources carry none
        if version != FORMAT_VERSION:
            raise TrajectoryError(
                f"{self.path}: format_version {version}; this SkillForge reads {FORMAT_VERSION} (its env states are "
                "ManiSkill's names and widths): regenerate the file"
            )
        self._file: h5py.File | None = None
        self._pid = -1

    @property
    def h5(self) -> h5py.File:
        if self._file is None or self._pid != os.getpid():
            self._file = _open_h5(self.path)
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
        try:
            return self._read_episode(self.h5[f"traj_{episode_id}"], entry, with_obs)
        except (KeyError, RuntimeError, OSError) as e:  # a missing dataset or a damaged file
            raise TrajectoryError(f"{self.path}: episode {episode_id} is unreadable ({e})") from None

    @staticmethod
    def _read_episode(g: h5py.Group, entry: dict, with_obs: bool) -> Episode:
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
            obs=_read_obs(g["obs"]) if with_obs and has_obs(g) else None,
            info=entry.get("info", {}),
            expert_actions=g["expert_actions"][()] if "expert_actions" in g else None,
            reference_actions=g["reference_actions"][()] if "reference_actions" in g else None,
        )

    def __iter__(self) -> Iterator[Episode]:
        for e in self.episodes:
            yield self.episode(e["episode_id"])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

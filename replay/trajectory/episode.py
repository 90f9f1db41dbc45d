"""Episodes in memory, their sidecar entries, and images encoded for storage."""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass, field
from typing import Any

import h5py
import numpy as np

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
    reset_kwargs: dict[str, Any] = field(default_factory=dict)  # what env.reset took: {"seed": s}
    scene_kwargs: dict[str, Any] = field(default_factory=dict)  # one-env gym.make kwargs of the episode's scene
    rewards: np.ndarray | None = None  # (T,) float32
    obs: dict[str, Any] | np.ndarray | None = None  # (T + 1, D) flat state, or a nested dict of (T + 1, ...) arrays
    info: dict[str, Any] = field(default_factory=dict)  # JSON-serialisable extras
    expert_actions: np.ndarray | None = None  # (T, A) float32: noise-free labels of a perturbed conversion
    reference_actions: np.ndarray | None = None  # (T, A) float32: its source path's own steps

    @property
    def length(self) -> int:
        return int(self.actions.shape[0])


@dataclass
class Demo:
    """An episode as learning reads it: observations and action labels only, so ManiSkill files
    read too whatever flags and states they lack."""

    obs: dict[str, Any] | np.ndarray | None  # as Episode.obs; None when the file holds none
    actions: np.ndarray  # (T, A) what was executed
    expert_actions: np.ndarray | None = None  # (T, A) see Episode
    reference_actions: np.ndarray | None = None  # (T, A) see Episode


def episode_entry(episode_id: int, episode: Episode, control_mode: str) -> dict:
    """The episode's sidecar entry (also its commit mark)."""
    return {
        "episode_id": episode_id,
        "seed": int(episode.seed),
        "episode_seed": int(episode.seed),
        "reset_kwargs": episode.reset_kwargs or {"seed": int(episode.seed)},
        **({"scene_kwargs": episode.scene_kwargs} if episode.scene_kwargs else {}),
        "control_mode": control_mode,
        "elapsed_steps": episode.length,
        "success": bool(episode.success[-1]) if episode.length else False,
        **({"info": episode.info} if episode.info else {}),
    }


def batch_env_kwargs(episodes: list[Episode]) -> dict[str, list]:
    """gym.make kwargs that rebuild these episodes' envs in one batch, env i for episode i: the
    one-env lists a task that draws geometry per env records in `scene_kwargs` (docs/FORMAT.md;
    PegInsertionSide: {"geometry_seed": [g]}), concatenated. Empty for tasks that record none."""
    per_env = [e.scene_kwargs for e in episodes]
    kwargs: dict[str, list] = {}
    for key in sorted({k for kw in per_env for k in kw}):
        if not all(key in kw for kw in per_env):
            raise TrajectoryError(f"episodes {[e.seed for e in episodes]} disagree on whether they record env kwarg {key!r}")
        kwargs[key] = [v for kw in per_env for v in kw[key]]
    return kwargs


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


STATE_GZIP_LEVEL = 4


def state_storage(value: np.ndarray) -> dict[str, Any] | None:
    """h5py dataset options for one episode's env-state array ((T + 1, D): an actor's pose and
    velocity, an articulation's qpos ...): deflate over the shuffle filter, the whole array one
    chunk. Most of a state is constant or slowly changing (a resting object, the drawing tasks'
    unused ink dots), so the shuffled bytes compress 10-40x (DrawSVG-v1: 11.6 MB of states an
    episode to 0.28 MB with the file format of `layout.open_h5`). None for an empty array."""
    if value.ndim == 0 or value.size == 0:
        return None
    return {"chunks": value.shape, "compression": "gzip", "compression_opts": STATE_GZIP_LEVEL, "shuffle": True}


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

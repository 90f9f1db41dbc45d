"""Where a parallel env's per-env arrays live in its one shared-memory segment.

Everything that crosses between the parent and its workers on the step path (the action, every
observation leaf, reward, terminated, truncated, every info entry) is one (N, ...) array in one
segment; worker k reads and writes only its own rows [first_k, first_k + n_k). Only one-byte
commands travel over the pipes on that path.

Trees (dict observations, info) are flattened to paths: ("obs",) for a flat observation,
("obs", "agent", "qpos") for a leaf of a dict observation, ("info", "success"), ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import torch

Path = tuple[str, ...]
ALIGN = 64  # bytes: every array starts on its own cache line


@dataclass(frozen=True)
class Field:
    path: Path
    dtype: str  # numpy dtype string, e.g. "<f4", "|b1"
    shape: tuple[int, ...]  # per env

    @property
    def env_bytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize * np.prod(self.shape, dtype=np.int64))


def flatten(tree: Any, prefix: Path) -> list[tuple[Path, torch.Tensor]]:
    """(path, leaf) pairs in the tree's own key order; a bare tensor is the one leaf at `prefix`."""
    if isinstance(tree, dict):
        return [item for key, value in tree.items() for item in flatten(value, (*prefix, str(key)))]
    return [(prefix, tree)]


def unflatten(items: Iterable[tuple[Path, Any]], prefix: Path) -> Any:
    """Inverse of `flatten` for the items under `prefix`."""
    root: dict[str, Any] = {}
    for path, value in items:
        rest = path[len(prefix) :]
        if not rest:
            return value
        node = root
        for key in rest[:-1]:
            node = node.setdefault(key, {})
        node[rest[-1]] = value
    return root


def fields_of(tree: Any, prefix: Path) -> list[Field]:
    """The fields of a batched tree of (n, ...) tensors."""
    return [
        Field(path, np.dtype(torch.empty(0, dtype=t.dtype).numpy().dtype).str, tuple(t.shape[1:]))
        for path, t in flatten(tree, prefix)
    ]


class Layout:
    """Byte offsets of each field's (num_envs, *shape) array in one buffer."""

    def __init__(self, fields: Iterable[Field], num_envs: int):
        self.fields = tuple(fields)
        self.num_envs = num_envs
        self.offsets: list[int] = []
        end = 0
        for f in self.fields:
            start = -(-end // ALIGN) * ALIGN
            self.offsets.append(start)
            end = start + num_envs * f.env_bytes
        self.size = max(end, 1)

    def tensors(self, buf: memoryview, rows: slice = slice(None)) -> dict[Path, torch.Tensor]:
        """Torch views of every field (rows `rows`) over `buf`: writing them writes the buffer."""
        out = {}
        for f, offset in zip(self.fields, self.offsets):
            array = np.ndarray((self.num_envs, *f.shape), np.dtype(f.dtype), buf, offset)
            out[f.path] = torch.from_numpy(array[rows])
        return out

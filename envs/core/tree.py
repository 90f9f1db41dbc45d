"""Nested dicts of per-env arrays (observations, env states, infos), one owner for the few
operations every layer needs on them. A leaf is a torch tensor or a NumPy array whose first
index is the env (or, for a stacked history, the step)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def to_numpy(tree: Any) -> Any:
    """Tensors (also nested in dicts) as NumPy arrays that share nothing with the env."""
    if isinstance(tree, dict):
        return {k: to_numpy(v) for k, v in tree.items()}
    return tree.numpy().copy() if isinstance(tree, torch.Tensor) else np.array(tree)


def row(tree: Any, i: int) -> Any:
    """Entry i of every leaf, as NumPy arrays of their own."""
    if isinstance(tree, dict):
        return {k: row(v, i) for k, v in tree.items()}
    return np.array(tree[i])


def take(tree: Any, index: Any) -> Any:
    """Every leaf indexed by `index` (a NumPy index, e.g. `(slice(0, t), i)`), as arrays of their own."""
    if isinstance(tree, dict):
        return {k: take(v, index) for k, v in tree.items()}
    return np.array(tree[index])


def stack(rows: list) -> Any:
    """A list of trees of one layout -> one tree of NumPy arrays, the list's index first."""
    if isinstance(rows[0], dict):
        return {k: stack([r[k] for r in rows]) for k in rows[0]}
    return np.stack(rows)

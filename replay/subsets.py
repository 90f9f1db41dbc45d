"""Episode selections of a trajectory file: subsets (by count or success) and episode-level
train/val splits. (Merging lives in replay/ops.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from replay.trajectory import TrajectoryError, _write_json_atomic, read_meta, sidecar_path


def _write_selection(src: Path, entries: list[dict], out: Path, extra: dict) -> int:
    """Copies the episodes `entries` of `src` into `out`, renumbered 0..n-1 in the given order;
    the sidecar keeps src's metadata plus `extra`. Written under a temporary name, then renamed."""
    meta = read_meta(src)
    tmp = out.with_name(out.stem + ".part.h5")
    episodes = []
    try:
        with h5py.File(src, "r") as f, h5py.File(tmp, "w") as dst:
            for e in entries:
                new_id = len(episodes)
                f.copy(f[f"traj_{e['episode_id']}"], dst, name=f"traj_{new_id}")
                entry = {**e, "episode_id": new_id, "source": {"file": src.name, "episode_id": e["episode_id"]}}
                dst[f"traj_{new_id}"].attrs["meta"] = json.dumps(entry)
                episodes.append(entry)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    new_meta = {k: v for k, v in meta.items() if k != "episodes"}
    new_meta.update(extra)
    new_meta["episodes"] = episodes
    _write_json_atomic(sidecar_path(out), new_meta)
    return len(episodes)


def subset_file(src: Path, out: Path, count: int | None = None, success_only: bool = False) -> int:
    """The first `count` episodes of `src` (after keeping successes only, if asked) into `out`."""
    src, out = Path(src), Path(out)
    if count is not None and count < 1:
        raise TrajectoryError(f"count must be >= 1, got {count}")
    entries = [e for e in read_meta(src)["episodes"] if e.get("success") or not success_only]
    entries = entries[:count] if count is not None else entries
    if not entries:
        raise TrajectoryError(f"{src}: no episode to keep")
    return _write_selection(src, entries, out, {"subset": {"of": str(src), "count": count, "success_only": success_only}})


def split_file(src: Path, val_fraction: float, seed: int = 0, out_dir: Path | None = None) -> tuple[Path, Path, int, int]:
    """Episode-level train/val split of `src` into SRC.train.h5 and SRC.val.h5 (beside it or in
    out_dir): a seeded permutation picks round(val_fraction * n) episodes (at least one) for val;
    each part keeps the episodes' order. Returns (train path, val path, n train, n val)."""
    src = Path(src)
    if not 0.0 < val_fraction < 1.0:
        raise TrajectoryError(f"--val must be a fraction in (0, 1), got {val_fraction}")
    entries = read_meta(src)["episodes"]
    if len(entries) < 2:
        raise TrajectoryError(f"{src}: {len(entries)} episode(s): a split needs at least 2")
    n_val = min(len(entries) - 1, max(1, round(val_fraction * len(entries))))
    val_idx = set(np.random.default_rng(seed).permutation(len(entries))[:n_val].tolist())
    folder = Path(out_dir) if out_dir is not None else src.parent
    train_path, val_path = folder / f"{src.stem}.train.h5", folder / f"{src.stem}.val.h5"
    split = {"of": str(src), "val_fraction": val_fraction, "seed": seed}
    n_train = _write_selection(src, [e for k, e in enumerate(entries) if k not in val_idx], train_path, {"split": {**split, "part": "train"}})
    n_val = _write_selection(src, [e for k, e in enumerate(entries) if k in val_idx], val_path, {"split": {**split, "part": "val"}})
    return train_path, val_path, n_train, n_val

"""Whole-file operations on trajectory files: merge (and, later, split and subset)."""

from __future__ import annotations

import json
from pathlib import Path

import h5py

from replay.trajectory import TrajectoryError, _write_json_atomic, read_meta, sidecar_path


def merge_files(inputs: list[Path], out: Path) -> int:
    """Join trajectory files of one env id and control mode into `out`, renumbering episodes
    0..n-1 in input order. Returns the number of episodes. `out` is written under a temporary
    name and renamed at the end, so a failed merge leaves nothing behind."""
    if not inputs:
        raise TrajectoryError("merge needs at least one input file")
    metas = [read_meta(p) for p in inputs]
    first = metas[0]["env_info"]
    for p, m in zip(inputs, metas):
        info = m["env_info"]
        if info["env_id"] != first["env_id"] or info["env_kwargs"].get("control_mode") != first["env_kwargs"].get("control_mode"):
            raise TrajectoryError(
                f"{p}: {info['env_id']} / {info['env_kwargs'].get('control_mode')} does not match "
                f"{inputs[0]}: {first['env_id']} / {first['env_kwargs'].get('control_mode')}"
            )
    tmp = out.with_name(out.name + ".part")
    episodes = []
    with h5py.File(tmp, "w") as dst:
        for p, m in zip(inputs, metas):
            with h5py.File(p, "r") as src:
                for e in m["episodes"]:
                    new_id = len(episodes)
                    src.copy(src[f"traj_{e['episode_id']}"], dst, name=f"traj_{new_id}")
                    entry = {**e, "episode_id": new_id, "source": {"file": Path(p).name, "episode_id": e["episode_id"]}}
                    dst[f"traj_{new_id}"].attrs["meta"] = json.dumps(entry)
                    episodes.append(entry)
    meta = {k: v for k, v in metas[0].items() if k != "episodes"}
    meta["merged_from"] = [str(p) for p in inputs]
    meta["episodes"] = episodes
    tmp.replace(out)
    _write_json_atomic(sidecar_path(out), meta)
    return len(episodes)

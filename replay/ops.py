"""Whole-file operations on trajectory files: merge (and, later, split and subset)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import h5py

from replay.maniskill import split_own_kwargs
from replay.trajectory import (
    FORMAT_VERSION,
    TrajectoryError,
    _fsync,
    _open_h5,
    _write_json_atomic,
    read_meta,
    sidecar_path,
)


def _mismatch(info: dict, first: dict) -> str | None:
    """What keeps two files' episodes from sharing one file (env id, then each env kwarg)."""
    if info.get("env_id") != first.get("env_id"):
        return f"env id {info.get('env_id')} vs {first.get('env_id')}"
    kw, kw0 = info.get("env_kwargs", {}), first.get("env_kwargs", {})
    for key in sorted(set(kw) | set(kw0), key=lambda k: (k != "control_mode", k)):
        if kw.get(key) != kw0.get(key):
            return f"{key.replace('_', ' ')} {kw.get(key)} vs {kw0.get(key)}"
    return None


def merge_files(inputs: list[Path], out: Path) -> int:
    """Join trajectory files of one env id and the same env kwargs (control mode, obs mode,
    robots) into `out`, renumbering episodes 0..n-1 in input order; each entry records its
    source file and id, and the header lists every input with its generation settings. Returns
    the number of episodes. `out` is written under a temporary name and renamed at the end, so a
    failed merge leaves nothing behind and an existing `out` untouched."""
    inputs, out = [Path(p) for p in inputs], Path(out)
    if not inputs:
        raise TrajectoryError("merge needs at least one input file")
    seen: set[Path] = set()
    for p in inputs:
        if p.resolve() == out.resolve():
            raise TrajectoryError(f"the output {out} must not be one of the inputs")
        if p.resolve() in seen:
            raise TrajectoryError(f"{p} is given twice: its episodes would be duplicated")
        seen.add(p.resolve())
    metas = [read_meta(p) for p in inputs]
    for p, m in zip(inputs[1:], metas[1:]):
        why = _mismatch(m["env_info"], metas[0]["env_info"])
        if why:
            raise TrajectoryError(f"cannot merge {p} with {inputs[0]}: {why}")
    header = {k: v for k, v in metas[0].items() if k not in ("episodes", "generation", "merged_from", "run_id")}
    header.update(format_version=FORMAT_VERSION, run_id=uuid.uuid4().hex)
    header["merged_from"] = [
        {"file": str(p), "episodes": len(m["episodes"]), **{k: m[k] for k in ("generation", "versions") if k in m}}
        for p, m in zip(inputs, metas)
    ]
    tmp = out.with_name(out.name + ".tmp")
    episodes = []
    try:
        with h5py.File(tmp, "w") as dst:
            dst.attrs["meta"] = json.dumps(split_own_kwargs(header))  # as the sidecar stores it
            for p, m in zip(inputs, metas):
                with _open_h5(p) as src:
                    for e in m["episodes"]:
                        new_id = len(episodes)
                        src.copy(src[f"traj_{e['episode_id']}"], dst, name=f"traj_{new_id}")
                        entry = {**e, "episode_id": new_id, "source": {"file": p.name, "episode_id": e["episode_id"]}}
                        dst[f"traj_{new_id}"].attrs["meta"] = json.dumps(entry)
                        episodes.append(entry)
        _fsync(tmp)
        os.replace(tmp, out)
    except (KeyError, RuntimeError) as e:  # a damaged input group
        raise TrajectoryError(f"merge failed, nothing written: {e}") from None
    finally:
        tmp.unlink(missing_ok=True)
    _write_json_atomic(sidecar_path(out), {**header, "episodes": episodes})
    return len(episodes)

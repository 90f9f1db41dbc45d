"""Whole trajectory files: where a run writes its output and how it ends (the one commit/resume
protocol of `demos generate` and `replay convert`), and files made of other files' episodes
(merge, split, subset).

A run writes OUT itself, or OUT.pending.h5 (+ OUT.pending.json) while OUT must stay as it is
(an existing OUT being replaced) or must appear only complete (a conversion); the pending pair
is renamed over OUT's when the run completes. An interrupted run leaves its committed episodes
in the file it wrote, which `resume` continues; a run that commits nothing leaves nothing.
Merge, split and subset write OUT.h5.tmp and rename it, so a failure leaves no OUT and an
existing OUT untouched.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from replay.trajectory.episode import TrajectoryError
from replay.trajectory.layout import (
    copy_episode,
    open_h5,
    parts_dir,
    pending_path,
    read_meta,
    replace_atomically,
    sidecar_path,
    tmp_path,
    write_header,
    write_json_atomic,
)
from replay.trajectory.writer import TrajectoryWriter


def check_output_path(out: Path) -> None:
    """Refuses an output that cannot be a trajectory file: not NAME.h5, a directory, or in a
    folder that is missing and cannot be made, or not writable."""
    if out.suffix != ".h5":
        raise ValueError(f"the output must name an .h5 file (its JSON sidecar goes beside it), got {out}")
    if out.is_dir():
        raise ValueError(f"the output {out} is a directory")
    ancestor = out.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ValueError(f"cannot write {out}: {ancestor} is not a directory")
    try:
        tempfile.TemporaryFile(dir=ancestor).close()
    except OSError as e:
        raise ValueError(f"cannot write {out}: {ancestor} is not writable ({e.strerror})") from None


def remove_trajectory(path: Path) -> None:
    """Removes a trajectory file, its sidecar, their temporary names and any unfinished segments."""
    side = sidecar_path(path)
    for p in (path, side, tmp_path(path), tmp_path(side)):
        p.unlink(missing_ok=True)
    parts = parts_dir(path)
    if parts.is_dir():
        for p in parts.iterdir():
            p.unlink()
        parts.rmdir()


@dataclass(frozen=True)
class Output:
    """The file a run writes to make trajectory file `out`: `path` (OUT or OUT.pending.h5), and
    whether the run continues it. `whole`: OUT appears only complete (a conversion); otherwise
    OUT itself is written unless an old one is being replaced (generation)."""

    out: Path
    path: Path
    resume: bool

    @staticmethod
    def check(out: Path, resume: bool, overwrite: bool, whole: bool) -> None:
        """Refuses a run that would replace or continue something it was not told to."""
        check_output_path(out)
        if resume and overwrite:
            raise ValueError("--resume and --overwrite exclude each other")
        if overwrite:
            return
        if sidecar_path(out).exists() and not out.exists():
            raise ValueError(f"{sidecar_path(out)} exists without {out.name}: pass --overwrite to replace it")
        if out.exists() and (whole or not resume):
            action = "" if whole else "--resume to continue it or "
            raise ValueError(f"{out} exists: pass {action}--overwrite to replace it")
        pending = pending_path(out)
        if (pending.exists() or sidecar_path(pending).exists()) and not resume:
            raise ValueError(f"{pending} holds an interrupted run: pass --resume to continue it or --overwrite to start again")

    @classmethod
    def plan(cls, out: Path, resume: bool, overwrite: bool, whole: bool) -> "Output":
        """Where this run writes; clears what an earlier interrupted run left when it starts over."""
        pending = pending_path(out)
        if resume and pending.exists():
            return cls(out, pending, True)
        if resume and not whole:
            return cls(out, out, out.exists())
        if whole or (overwrite and (out.exists() or sidecar_path(out).exists())):
            remove_trajectory(pending)
            return cls(out, pending, False)
        return cls(out, out, False)

    @property
    def pending(self) -> bool:
        return self.path != self.out

    def writer(self, meta: dict) -> TrajectoryWriter:
        return TrajectoryWriter(self.path, meta, resume=self.resume)

    def finish(self, writer: TrajectoryWriter, complete: bool) -> Path | None:
        """Closes the writer. A complete run's pending pair replaces OUT's (file first: a reader of
        OUT between the two renames rebuilds the metadata from the file). A file that holds no
        episode is removed. Returns OUT when it now holds the run's result."""
        writer.close()
        if writer.num_episodes == 0:
            remove_trajectory(self.path)
            return None
        if not complete:
            return None
        if self.pending:
            os.replace(self.path, self.out)
            os.replace(sidecar_path(self.path), sidecar_path(self.out))
        return self.out


# ---- files made of other files' episodes ---------------------------------------------------------------
def _write_episodes_of(out: Path, header: dict, picks: list[tuple[Path, list[dict]]], what: str) -> int:
    """Writes `out` (+ its sidecar: `header` and the episode list) holding, in order, the episodes
    `entries` of each (source file, entries), renumbered 0..n-1; each entry records its source
    file and id. Written under a temporary name and renamed. Returns the number of episodes."""
    check_output_path(out)
    if out.resolve() in {src.resolve() for src, _ in picks}:
        raise TrajectoryError(f"the output {out} must not be one of the inputs")
    header = {**header, "run_id": uuid.uuid4().hex}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(out)
    episodes: list[dict] = []
    try:
        with open_h5(tmp, "w") as dst:
            write_header(dst, header)
            for src, entries in picks:
                with open_h5(src) as f:
                    for e in entries:
                        entry = {**e, "episode_id": len(episodes), "source": {"file": src.name, "episode_id": e["episode_id"]}}
                        copy_episode(f, e["episode_id"], dst, entry)
                        episodes.append(entry)
        replace_atomically(tmp, out)
    except (KeyError, RuntimeError) as e:  # a damaged input group
        raise TrajectoryError(f"{what} failed, nothing written: {e}") from None
    finally:
        tmp.unlink(missing_ok=True)
    write_json_atomic(sidecar_path(out), {**header, "episodes": episodes})
    return len(episodes)


def _mismatch(meta: dict, first: dict) -> str | None:
    """What keeps two files' episodes from sharing one file (format version, env id, then each env kwarg)."""
    if meta.get("format_version") != first.get("format_version"):
        return f"format version {meta.get('format_version')} vs {first.get('format_version')}"
    info, info0 = meta["env_info"], first["env_info"]
    if info.get("env_id") != info0.get("env_id"):
        return f"env id {info.get('env_id')} vs {info0.get('env_id')}"
    kw, kw0 = info.get("env_kwargs", {}), info0.get("env_kwargs", {})
    for key in sorted(set(kw) | set(kw0), key=lambda k: (k != "control_mode", k)):
        if kw.get(key) != kw0.get(key):
            return f"{key.replace('_', ' ')} {kw.get(key)} vs {kw0.get(key)}"
    return None


def merge_files(inputs: list[Path], out: Path, overwrite: bool = False) -> int:
    """Join trajectory files of one format version, env id and the same env kwargs (control
    mode, obs mode, robots) into `out`, renumbering episodes 0..n-1 in input order; each entry
    records its source file and id, and the header lists every input with its generation
    settings. Returns the number of episodes. An existing `out` is replaced only with
    `overwrite`; a failed merge leaves nothing behind and an existing `out` untouched."""
    inputs, out = [Path(p) for p in inputs], Path(out)
    if not inputs:
        raise TrajectoryError("merge needs at least one input file")
    check_output_path(out)
    seen: set[Path] = set()
    for p in inputs:
        if p.resolve() == out.resolve():
            raise TrajectoryError(f"the output {out} must not be one of the inputs")
        if p.resolve() in seen:
            raise TrajectoryError(f"{p} is given twice: its episodes would be duplicated")
        seen.add(p.resolve())
    if out.exists() and not overwrite:
        raise ValueError(f"{out} exists: pass --overwrite to replace it")
    metas = [read_meta(p) for p in inputs]
    for p, m in zip(inputs[1:], metas[1:]):
        why = _mismatch(m, metas[0])
        if why:
            raise TrajectoryError(f"cannot merge {p} with {inputs[0]}: {why}")
    header = {k: v for k, v in metas[0].items() if k not in ("episodes", "generation", "merged_from", "run_id")}
    header["merged_from"] = [
        {"file": str(p), "episodes": len(m["episodes"]), **{k: m[k] for k in ("generation", "versions") if k in m}}
        for p, m in zip(inputs, metas)
    ]
    return _write_episodes_of(out, header, [(p, m["episodes"]) for p, m in zip(inputs, metas)], "merge")


def _write_selection(src: Path, entries: list[dict], out: Path, extra: dict) -> int:
    """The episodes `entries` of `src` into `out`, renumbered; the header is src's plus `extra`."""
    header = {k: v for k, v in read_meta(src).items() if k not in ("episodes", "run_id")}
    return _write_episodes_of(out, {**header, **extra}, [(src, entries)], "writing " + out.name)


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

"""`TrajectoryWriter`: appends episodes so that a process killed at any moment (SIGKILL) leaves a
readable file.

Writing never modifies committed data in place. HDF5 rewrites its own metadata in place when a
group is added, and a kill during that write can corrupt the groups already there, so:

- a commit writes the new episodes into a segment file `OUT.h5.parts/seg_<first id>.h5` under a
  temporary name, fsyncs and renames it, then replaces OUT.h5 by a small *container* whose
  `traj_<i>` entries are external links into the segments (temporary name, fsync, rename). That
  last rename is the commit; h5py follows the links, so readers see ordinary groups.
- `close()` consolidates: every episode is copied into one self-contained file, which replaces
  the container (temporary name, rename); then the segments are removed.
- The JSON sidecar is rewritten atomically every few seconds and at close; a reader whose
  sidecar is stale, missing or from another run rebuilds it from the commit marks.
- `add()` stages an episode and commits when enough are staged or enough time has passed;
  `commit_if_due()` commits unless the last commit was recent for its cost;
  `add_batch()` commits at once. `TrajectoryWriter(..., resume=True)` continues after the last
  committed episode; an interrupted consolidation or commit leaves only temporary files, which the
  next writer removes.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path

from replay.trajectory.episode import FORMAT_VERSION, Episode, episode_entry
from replay.trajectory.layout import (
    copy_episode,
    fsync_file,
    link_episode,
    linked_segment,
    open_h5,
    parts_dir,
    read_meta,
    replace_atomically,
    sidecar_path,
    tmp_path,
    write_episode,
    write_header,
    write_json_atomic,
)


class TrajectoryWriter:
    """Appends episodes to `path` (+ its sidecar). `meta` holds env_info, source_type and the
    like; episodes are numbered from 0, or after the last committed one with resume=True."""

    SIDECAR_EVERY = 5.0  # seconds between sidecar rewrites
    COMMIT_EVERY = 2.0  # add(): seconds between commits ...
    COMMIT_STAGED = 16  # ... or this many staged episodes
    COMMIT_SHARE = 20  # commit_if_due(): at most 1/20 of the time on commits

    def __init__(self, path: str | Path, meta: dict, resume: bool = False, compress_images: bool = True):
        self.path = Path(path)
        self.sidecar = sidecar_path(self.path)
        self.parts = parts_dir(self.path)
        self.compress = compress_images
        self._tmp = tmp_path(self.path)
        self._staged: list[tuple[Episode, dict]] = []
        self._last_commit = self._last_sidecar = time.monotonic()
        self._commit_cost = 0.0  # seconds the last commit took
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
        return {k: v for k, v in self.meta.items() if k != "episodes"}

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

    def commit_if_due(self) -> None:
        """Commits the staged episodes unless the last commit was so recent that committing
        again would spend more than 1/COMMIT_SHARE of the time since on commits. A commit links
        every episode of the file again, so its cost grows with the file: a small file is
        committed at every call, a long run's every second or so, not at every batch."""
        if time.monotonic() - self._last_commit > self.COMMIT_SHARE * self._commit_cost:
            self.commit()

    def commit(self) -> None:
        """Makes the staged episodes durable: a new segment file, then a new container."""
        start = self._last_commit = time.monotonic()
        if not self._staged:
            return
        self._absorb_base()
        first = self._staged[0][1]["episode_id"]
        seg = f"seg_{first:06d}.h5"
        self.parts.mkdir(exist_ok=True)
        tmp = self.parts / (seg + ".tmp")
        with open_h5(tmp, "w") as f:
            for episode, entry in self._staged:
                write_episode(f, episode, entry, self.compress)
        replace_atomically(tmp, self.parts / seg)
        segments = self._segments + [seg] * len(self._staged)
        self._write_file(segments)
        self._segments = segments
        self.meta["episodes"] += [entry for _, entry in self._staged]
        self._staged = []
        if time.monotonic() - self._last_sidecar > self.SIDECAR_EVERY:
            self.write_sidecar()
        self._commit_cost = time.monotonic() - start

    def write_sidecar(self) -> None:
        write_json_atomic(self.sidecar, self.meta)
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
        with open_h5(self.path) as f:
            return [linked_segment(f, e["episode_id"]) for e in self.meta["episodes"]]

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
            fsync_file(base)
        self._segments = [s or base.name for s in self._segments]

    def _write_file(self, segments: list[str]) -> None:
        """Replaces the file by a container linking each episode to its segment."""
        with open_h5(self._tmp, "w") as f:
            write_header(f, self.header)
            for eid, seg in enumerate(segments):
                link_episode(f, eid, f"{self.parts.name}/{seg}")
        replace_atomically(self._tmp, self.path)

    def _consolidate(self) -> None:
        sources = {}
        try:
            with open_h5(self._tmp, "w") as dst:
                write_header(dst, self.header)
                for entry, seg in zip(self.meta["episodes"], self._segments):
                    if seg not in sources:
                        sources[seg] = open_h5(self.parts / seg)
                    copy_episode(sources[seg], entry["episode_id"], dst)
        finally:
            for f in sources.values():
                f.close()
        replace_atomically(self._tmp, self.path)
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

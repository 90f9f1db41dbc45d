"""`TrajectoryFile`: read access to a trajectory file. The HDF5 file is opened on first access in
the process that uses it, so DataLoader workers forked later each open their own handle."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import h5py

from replay.trajectory.episode import FORMAT_VERSION, Demo, Episode, TrajectoryError
from replay.trajectory.layout import open_h5, read_demo, read_episode, read_meta

T = TypeVar("T")


class TrajectoryFile:
    """A trajectory file's metadata and its episodes, read lazily (fork-safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.meta = read_meta(self.path)
        version = self.meta.get("format_version", FORMAT_VERSION)  # files of other sources carry none
        if version != FORMAT_VERSION:
            raise TrajectoryError(
                f"{self.path}: format_version {version}; this SkillForge reads {FORMAT_VERSION} (its env states are "
                "ManiSkill's names and widths): regenerate the file"
            )
        self._by_id = {e["episode_id"]: e for e in self.episodes}
        self._file: h5py.File | None = None
        self._pid = -1

    @property
    def _h5(self) -> h5py.File:
        if self._file is None or self._pid != os.getpid():
            self._file = open_h5(self.path)
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

    def _entry(self, episode_id: int) -> dict:
        entry = self._by_id.get(episode_id)
        if entry is None:
            raise TrajectoryError(f"{self.path}: no episode {episode_id}")
        return entry

    def _read(self, episode_id: int, read: Callable[[h5py.File], T]) -> T:
        try:
            return read(self._h5)
        except (KeyError, RuntimeError, OSError) as e:  # a missing dataset or a damaged file
            raise TrajectoryError(f"{self.path}: episode {episode_id} is unreadable ({e})") from None

    def episode(self, episode_id: int, with_obs: bool = True) -> Episode:
        """The whole episode: actions, flags, env states, observations (unless with_obs is False)."""
        entry = self._entry(episode_id)
        return self._read(episode_id, lambda f: read_episode(f, entry, with_obs))

    def demo(self, episode_id: int, with_obs: bool = True) -> Demo:
        """The episode's observations and action labels only (what learning reads)."""
        self._entry(episode_id)
        return self._read(episode_id, lambda f: read_demo(f, episode_id, with_obs))

    def __iter__(self) -> Iterator[Episode]:
        for e in self.episodes:
            yield self.episode(e["episode_id"])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

"""Trajectory files: HDF5 episodes + a JSON sidecar, as specified in docs/FORMAT.md. This package
owns the format; everything else reads, writes, merges, splits and subsets through the names
below and never opens the HDF5 file itself.

- episode.py: `Episode` (and `Demo`, what learning reads) in memory, sidecar entries, images
  encoded for storage;
- layout.py: file names beside NAME.h5, the HDF5 layout of an episode (`traj_<i>` groups),
  `read_meta` (the sidecar, checked against the file or rebuilt from its commit marks);
- writer.py: `TrajectoryWriter`, crash-safe appends (segments, containers, consolidation);
- reader.py: `TrajectoryFile`, lazy and fork-safe reads;
- files.py: `Output`, where a run writes and how it commits (OUT.pending.h5, resume), and
  merge / split / subset.
"""

from replay.trajectory.episode import (
    FORMAT_VERSION,
    CompressedImages,
    Demo,
    Episode,
    TrajectoryError,
    batch_env_kwargs,
    precompress,
)
from replay.trajectory.files import Output, merge_files, split_file, subset_file
from replay.trajectory.layout import check_sidecar, fsync_file, parts_dir, pending_path, read_meta, sidecar_path
from replay.trajectory.reader import TrajectoryFile
from replay.trajectory.writer import TrajectoryWriter

__all__ = [
    "FORMAT_VERSION", "CompressedImages", "Demo", "Episode", "Output", "TrajectoryError", "TrajectoryFile",
    "TrajectoryWriter", "batch_env_kwargs", "check_sidecar", "fsync_file", "merge_files", "parts_dir", "pending_path",
    "precompress", "read_meta", "sidecar_path", "split_file", "subset_file",
]

"""LeRobot export: a trajectory file as a LeRobot dataset, format v3.0 (docs/FORMAT.md, "LeRobot
export"), written with pyarrow alone: no `lerobot` release installs beside our pins.

One frame per action: frame t holds the observation before action t, action t, and what followed
it (`next.reward`, `next.done`, `next.success`); an episode's final observation has no action and is
left out, as LeRobot's own recorders do. Observations map to LeRobot's names:

- `observation.state`: a flat `state` observation as it is; from a dict observation the robot's
  `agent/qpos` then `agent/qvel`;
- `observation.environment_state`: a dict observation's `extra` arrays (object and goal poses...);
- `observation.images.<camera>`: each camera's `rgb`, PNG bytes in the parquet rows, or with
  `video=True` mp4 files under `videos/`, encoded as LeRobot encodes by default (AV1 by SVT-AV1,
  yuv420p, a key frame every 2 frames, crf 30).

The dataset is written under `OUT.partial` and renamed to OUT when complete, so an interrupted
export leaves no OUT (and the next export removes the leftover).
"""

from __future__ import annotations

import io
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable

import numpy as np
import tyro

from replay.trajectory import Episode, TrajectoryError, TrajectoryFile, fsync_file
from replay.video import AV1_MP4, FfmpegWriter

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000  # files per chunk folder
DATA_FILE_MB = 100  # a data file is closed once it is this large
VIDEO_FILE_MB = 200
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}
CAMERA_GROUPS = ("cameras", "sensor_data")  # ours, ManiSkill's


@dataclass
class ExportConfig:
    """`replay export FILE --format lerobot`: fps defaults to the env's control frequency, task to
    the first sentence of the task's description, cameras to every camera with rgb images."""

    file: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="FILE")]
    """input trajectory .h5 (never modified)"""
    out: Annotated[Path, tyro.conf.arg(metavar="DIR")]
    """output folder (written as DIR.partial, renamed when complete)"""
    fps: Annotated[int | None, tyro.conf.arg(metavar="INT", help_behavior_hint="(default: the env's control frequency)")] = None
    """frames per second"""
    task: Annotated[str | None, tyro.conf.arg(metavar="TEXT", help_behavior_hint="(default: the task's one-line description)")] = None
    """the task's instruction text"""
    video: bool = False
    """camera images as AV1 mp4 files under videos/ (otherwise PNG in the parquet rows)"""
    cameras: Annotated[list[str], tyro.conf.arg(name="camera", metavar="NAME", help_behavior_hint="(default: every camera)"),
                       tyro.conf.UseAppendAction] = field(default_factory=list)
    """export this camera's rgb images (repeatable; empty: every camera)"""
    overwrite: bool = False
    """replace an existing output folder"""

    def __post_init__(self) -> None:
        self.file, self.out = Path(self.file), Path(self.out)
        self.cameras = list(dict.fromkeys(self.cameras or ()))  # a camera named twice is one feature
        if self.fps is not None and int(self.fps) < 1:
            raise ValueError(f"--fps must be a positive integer, got {self.fps}")
        if self.task is not None and not self.task.strip():
            raise ValueError("--task must not be empty")
        if self.out.resolve() == self.file.resolve() or self.file.resolve().is_relative_to(self.out.resolve()):
            raise ValueError(f"the output folder {self.out} must not hold the input {self.file}")


@dataclass
class Layout:
    """Where each LeRobot feature comes from in the file's observations (fixed by its first episode)."""

    state: list[tuple[str, ...]]  # paths into the obs tree, concatenated; [()] = a flat obs array
    env_state: list[tuple[str, ...]]
    cameras: dict[str, tuple[str, ...]]  # camera -> path of its rgb array
    names: dict[str, list[str]] = field(default_factory=dict)  # feature -> names of its entries


def get_path(tree: Any, path: tuple[str, ...]) -> np.ndarray:
    for key in path:
        tree = tree[key]
    return tree


def _flat(a: np.ndarray) -> np.ndarray:
    return a.reshape(a.shape[0], -1)


def _names(prefix: str, width: int) -> list[str]:
    return [prefix] if width == 1 else [f"{prefix}_{i}" for i in range(width)]


def rgb_paths(obs: Any) -> dict[str, tuple[str, ...]]:
    """Camera -> path of its rgb images in a dict observation (ours: cameras/<uid>/rgb; ManiSkill's:
    sensor_data/<uid>/rgb); empty for a flat one."""
    found: dict[str, tuple[str, ...]] = {}
    if isinstance(obs, dict):
        for group in CAMERA_GROUPS:
            for cam, data in (obs.get(group) or {}).items():
                if isinstance(data, dict) and "rgb" in data:
                    found[cam] = (group, cam, "rgb")
    return found


def obs_layout(obs: Any, wanted: list[str] | None, where: str) -> Layout:
    """The features a file's observations give (`obs`: one episode's), or a TrajectoryError."""
    if obs is None:
        raise TrajectoryError(
            f"{where} has no observations (obs mode none): add them first, e.g. `replay convert {where} --obs-mode state` (or --obs-mode rgb)"
        )
    if isinstance(obs, np.ndarray):
        if wanted:
            raise TrajectoryError(f"unknown camera {wanted[0]!r}: {where} has flat state observations and no cameras")
        return Layout(state=[()], env_state=[], cameras={}, names={"observation.state": _names("state", _flat(obs).shape[1])})
    state = [("agent", k) for k in ("qpos", "qvel") if isinstance(obs.get("agent"), dict) and k in obs["agent"]]
    extra = obs.get("extra") if isinstance(obs.get("extra"), dict) else {}
    env_state = [("extra", k) for k, v in extra.items() if isinstance(v, np.ndarray) and v.dtype.kind in "fiub"]
    found = rgb_paths(obs)
    if wanted:
        unknown = [c for c in wanted if c not in found]
        if unknown:
            have = ", ".join(sorted(found)) or "none"
            raise TrajectoryError(f"unknown camera {unknown[0]!r}: {where} has rgb images of: {have}")
        found = {c: found[c] for c in wanted}
    if not state and not found:
        raise TrajectoryError(f"{where}: its observations have neither agent/qpos nor camera rgb images: nothing to export")
    names = {}
    if state:
        names["observation.state"] = [n for p in state for n in _names(p[-1], _flat(get_path(obs, p)).shape[1])]
    if env_state:
        names["observation.environment_state"] = [n for p in env_state for n in _names(p[-1], _flat(get_path(obs, p)).shape[1])]
    return Layout(state=state, env_state=env_state, cameras=found, names=names)


# ---- statistics (meta/stats.json and the episodes' stats/ columns) ------------------------------


def vector_stats(x: np.ndarray) -> dict[str, np.ndarray]:
    """LeRobot's per-feature statistics of (T, D) values (D = 1 for a scalar feature), exact."""
    x = np.asarray(x, dtype=np.float64)
    out = {"min": x.min(0), "max": x.max(0), "mean": x.mean(0), "std": x.std(0), "count": np.array([len(x)])}
    for key, q in QUANTILES.items():
        out[key] = np.quantile(x, q, axis=0)
    return out


def pixel_histogram(frames: np.ndarray) -> np.ndarray:
    """(3, 256) counts of each channel's values in (T, H, W, 3) uint8 frames."""
    return np.stack([np.bincount(frames[..., c].ravel(), minlength=256) for c in range(3)])


def image_stats(hist: np.ndarray, frames: int) -> dict[str, np.ndarray]:
    """LeRobot's image statistics from a per-channel histogram: per channel, values in [0, 1],
    shaped (3, 1, 1); count = frames. uint8 values make them exact."""
    v = np.arange(256) / 255.0
    n = hist.sum(1)
    mean = hist @ v / n
    std = np.sqrt(np.maximum(hist @ v**2 / n - mean**2, 0.0))
    cum = np.cumsum(hist, 1)
    out = {
        "min": np.array([v[np.argmax(h > 0)] for h in hist]),
        "max": np.array([v[255 - np.argmax(h[::-1] > 0)] for h in hist]),
        "mean": mean,
        "std": std,
    }
    for key, q in QUANTILES.items():
        out[key] = np.array([v[np.searchsorted(c, q * c[-1])] for c in cum])
    out = {k: a.reshape(3, 1, 1) for k, a in out.items()}
    out["count"] = np.array([frames])
    return out


def _json_stats(stats: dict[str, dict[str, np.ndarray]]) -> dict:
    return {k: {s: v.tolist() for s, v in st.items()} for k, st in stats.items()}


# ---- writers ------------------------------------------------------------------------------------


class _VideoWriter:
    """One camera's frames, episode after episode, into consecutive mp4 files."""

    def __init__(self, root: Path, key: str, fps: int, size: tuple[int, int]):
        self.root, self.key, self.fps, self.size = root, key, fps, size
        self.chunk = self.file = 0
        self.frames = 0  # frames in the open file
        self._writer: FfmpegWriter | None = None

    @property
    def path(self) -> Path:
        return self.root / VIDEO_PATH.format(video_key=self.key, chunk_index=self.chunk, file_index=self.file)

    def add_episode(self, frames: np.ndarray) -> dict[str, Any]:
        """Appends one episode's (T, H, W, 3) frames; returns its videos/KEY/* episode columns."""
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = FfmpegWriter(self.path, self.size, self.fps, AV1_MP4)
            self.frames = 0
        self._writer.write(frames)
        start = self.frames
        self.frames += len(frames)
        cols = {
            f"videos/{self.key}/chunk_index": self.chunk,
            f"videos/{self.key}/file_index": self.file,
            f"videos/{self.key}/from_timestamp": start / self.fps,
            f"videos/{self.key}/to_timestamp": self.frames / self.fps,
        }
        # frames still in the encoder are not counted: a file may pass the limit by an episode or so
        if self.path.exists() and self.path.stat().st_size > VIDEO_FILE_MB * 2**20:
            self.close()
            self.chunk, self.file = _next_file(self.chunk, self.file)
        return cols

    def close(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()

    def kill(self) -> None:
        if self._writer is not None:
            self._writer.kill()
            self._writer = None


def _next_file(chunk: int, file: int) -> tuple[int, int]:
    return (chunk + 1, 0) if file == CHUNKS_SIZE - 1 else (chunk, file + 1)


def _png(frame: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


# ---- the export ---------------------------------------------------------------------------------


def default_fps(env_info: dict) -> int:
    """The env's control frequency: its env kwargs', else its registered task's default."""
    kwargs = env_info.get("env_kwargs", {})
    if "control_freq" in kwargs:
        return int(kwargs["control_freq"])
    cls = _task_class(env_info.get("env_id"))
    if cls is None:
        raise TrajectoryError(f"env {env_info.get('env_id')!r} is not one of ours, so its control frequency is unknown: pass --fps")
    import inspect

    return int(inspect.signature(cls.__init__).parameters["control_freq"].default)


def default_task(env_info: dict) -> str:
    """The "Task:" sentence of the task module's description, else the env id."""
    import sys

    env_id = str(env_info.get("env_id"))
    cls = _task_class(env_id)
    doc = (sys.modules[cls.__module__].__doc__ or "") if cls is not None else ""
    for para in doc.split("\n\n"):
        if para.startswith("Task:"):
            text = " ".join(para[len("Task:"):].split())
            return text[0].upper() + text[1:]
    return env_id


def _task_class(env_id: str | None) -> type | None:
    import envs  # noqa: F401  (registers the tasks)
    from envs.core.registry import TASKS

    return TASKS.get(env_id)


@dataclass
class ExportReport:
    out: Path
    episodes: int
    frames: int
    fps: int
    features: list[str]
    skipped: int  # episodes without actions


def export_lerobot(cfg: ExportConfig, progress: Callable[[int], None] | None = None) -> ExportReport:
    """Writes `cfg.file` as a LeRobot v3.0 dataset at `cfg.out` (see the module docstring)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise RuntimeError("the LeRobot export needs pyarrow: pip install 'pyarrow==24.*'") from None
    traj = TrajectoryFile(cfg.file)
    try:
        ids = [e["episode_id"] for e in traj.episodes if e.get("elapsed_steps", 1) > 0]
        if not ids:
            raise TrajectoryError(f"{cfg.file}: no episode with actions: nothing to export")
        first = traj.episode(ids[0])
        layout = obs_layout(first.obs, cfg.cameras, str(cfg.file))
        if cfg.video and not layout.cameras:
            raise TrajectoryError(f"--video: {cfg.file} has no camera rgb images")
        fps = int(cfg.fps) if cfg.fps is not None else default_fps(traj.env_info)
        task = cfg.task.strip() if cfg.task is not None else default_task(traj.env_info)
        if cfg.out.exists() and not cfg.overwrite:
            raise ValueError(f"{cfg.out} exists: pass --overwrite to replace it")
        partial = cfg.out.with_name(cfg.out.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)  # a killed export's leftover
        partial.mkdir(parents=True)
        try:
            report = _Exporter(traj, layout, fps, task, cfg.video, partial, first).run(ids, progress)
        except BaseException:  # also KeyboardInterrupt: no half dataset stays behind
            shutil.rmtree(partial, ignore_errors=True)
            raise
    finally:
        traj.close()
    _publish(partial, cfg.out)
    report.out = cfg.out
    return report


def _publish(partial: Path, out: Path) -> None:
    """Renames the finished dataset to `out`; an existing `out` is removed only after that."""
    old = out.with_name(out.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        os.replace(out, old)
    os.replace(partial, out)
    shutil.rmtree(old, ignore_errors=True)


class _Exporter:
    def __init__(self, traj: TrajectoryFile, layout: Layout, fps: int, task: str, video: bool, root: Path, first: Episode):
        import pyarrow as pa

        self.pa = pa
        self.traj, self.layout, self.fps, self.task, self.video, self.root = traj, layout, fps, task, video, root
        self.features = self._features(first)
        self.schema = self._schema()
        self.writer = None
        self._data_path: Path | None = None
        self.chunk = self.file = 0
        self.frames = 0
        self.episodes: list[dict] = []
        self.values: dict[str, list[np.ndarray]] = {k: [] for k, f in self.features.items() if f["dtype"] not in ("image", "video")}
        self.hists = {k: np.zeros((3, 256), np.int64) for k in self._camera_keys()}
        self.videos = {
            key: _VideoWriter(root, key, fps, tuple(self.features[key]["shape"][:2])) for key in self._camera_keys()
        } if video else {}

    def _camera_keys(self) -> list[str]:
        return [f"observation.images.{cam}" for cam in self.layout.cameras]

    # features ---------------------------------------------------------------------------------
    def _features(self, first: Episode) -> dict[str, dict]:
        feats: dict[str, dict] = {}
        for key in ("observation.state", "observation.environment_state"):
            if key in self.layout.names:
                names = self.layout.names[key]
                feats[key] = {"dtype": "float32", "shape": [len(names)], "names": names}
        for cam, path in self.layout.cameras.items():
            rgb = get_path(first.obs, path)
            if rgb.dtype != np.uint8 or rgb.ndim != 4 or rgb.shape[-1] != 3:
                raise TrajectoryError(f"camera {cam}: rgb images are {rgb.dtype} {rgb.shape[1:]}, not uint8 (H, W, 3)")
            h, w, _ = rgb.shape[1:]
            if self.video and (h % 2 or w % 2):
                raise TrajectoryError(f"--video: camera {cam}'s {w} x {h} images need even sizes (yuv420p)")
            feats[f"observation.images.{cam}"] = {"dtype": "video" if self.video else "image", "shape": [h, w, 3],
                                                  "names": ["height", "width", "channels"]}
        a = first.actions.shape[1]
        feats["action"] = {"dtype": "float32", "shape": [a], "names": _names("action", a)}
        if first.rewards is not None:
            feats["next.reward"] = {"dtype": "float32", "shape": [1], "names": None}
        feats["next.done"] = {"dtype": "bool", "shape": [1], "names": None}
        feats["next.success"] = {"dtype": "bool", "shape": [1], "names": None}
        feats["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
        for key in ("frame_index", "episode_index", "index", "task_index"):
            feats[key] = {"dtype": "int64", "shape": [1], "names": None}
        if self.video:
            for key in self._camera_keys():
                h, w, _ = feats[key]["shape"]
                feats[key]["info"] = {"video.height": h, "video.width": w, "video.codec": "av1", "video.pix_fmt": "yuv420p",
                                      "video.is_depth_map": False, "video.fps": self.fps, "video.channels": 3, "has_audio": False}
        return feats

    def _schema(self):
        pa = self.pa
        types = {"float32": pa.float32(), "int64": pa.int64(), "bool": pa.bool_()}
        fields, hf = [], {}
        for key, f in self.features.items():
            if f["dtype"] == "video":
                continue
            if f["dtype"] == "image":
                fields.append(pa.field(key, pa.struct([("bytes", pa.binary()), ("path", pa.string())])))
                hf[key] = {"_type": "Image"}
            elif f["shape"] == [1]:
                fields.append(pa.field(key, types[f["dtype"]]))
                hf[key] = {"dtype": f["dtype"], "_type": "Value"}
            else:
                fields.append(pa.field(key, pa.list_(types[f["dtype"]], f["shape"][0])))
                hf[key] = {"feature": {"dtype": f["dtype"], "_type": "Value"}, "length": f["shape"][0], "_type": "Sequence"}
        # Hugging Face `datasets` reads its feature types from this schema metadata
        return pa.schema(fields, metadata={"huggingface": json.dumps({"info": {"features": hf}})})

    # episodes ---------------------------------------------------------------------------------
    def run(self, ids: list[int], progress: Callable[[int], None] | None) -> ExportReport:
        try:
            for eid in ids:
                self._episode(eid)
                if progress:
                    progress(1)
            self._close_data()
            for v in self.videos.values():
                v.close()
        finally:
            for v in self.videos.values():
                v.kill()
        self._write_meta()
        for p in self.root.rglob("*"):
            if p.is_file():
                fsync_file(p)
        return ExportReport(self.root, len(self.episodes), self.frames, self.fps, list(self.features), len(self.traj.episodes) - len(ids))

    def _arrays(self, e: Episode, eid: int) -> dict[str, np.ndarray]:
        """The episode's per-frame values of every non-image feature, (T, D) or (T,)."""
        t = e.length
        index = len(self.episodes)
        cols: dict[str, np.ndarray] = {}
        for key, paths in (("observation.state", self.layout.state), ("observation.environment_state", self.layout.env_state)):
            if key in self.features:
                cols[key] = np.concatenate([_flat(get_path(e.obs, p))[:t] for p in paths], axis=1).astype(np.float32)
        cols["action"] = e.actions.astype(np.float32)
        if "next.reward" in self.features:
            if e.rewards is None:
                raise TrajectoryError(f"episode {eid} has no rewards, the first exported episode has")
            cols["next.reward"] = e.rewards.astype(np.float32)
        done = np.asarray(e.terminated, bool) | np.asarray(e.truncated, bool)
        done[-1] = True
        cols["next.done"] = done
        cols["next.success"] = np.asarray(e.success, bool)
        frame = np.arange(t, dtype=np.int64)
        cols["timestamp"] = (frame / self.fps).astype(np.float32)
        cols["frame_index"] = frame
        cols["episode_index"] = np.full(t, index, np.int64)
        cols["index"] = self.frames + frame
        cols["task_index"] = np.zeros(t, np.int64)
        for key, a in cols.items():
            want = self.features[key]["shape"]
            have = list(a.shape[1:]) or [1]
            if have != want:
                raise TrajectoryError(f"episode {eid}: {key} has shape {have} per frame, the first exported episode {want}")
        return cols

    def _episode(self, eid: int) -> None:
        pa = self.pa
        e = self.traj.episode(eid)
        if e.obs is None:
            raise TrajectoryError(f"{self.traj.path}: episode {eid} has no observations")
        t = e.length
        cols = self._arrays(e, eid)
        row: dict[str, Any] = {"episode_index": len(self.episodes), "tasks": [self.task], "length": t}
        stats = {}
        arrays = {}
        for key, a in cols.items():
            self.values[key].append(a)
            stats[key] = vector_stats(a.reshape(t, -1))
            kind = self.schema.field(key).type
            arrays[key] = pa.array(a.tolist() if a.ndim == 2 else a, type=kind)
        for cam, path in self.layout.cameras.items():
            key = f"observation.images.{cam}"
            frames = get_path(e.obs, path)[:t]
            if list(frames.shape[1:]) != self.features[key]["shape"]:
                raise TrajectoryError(f"episode {eid}: camera {cam} images are {list(frames.shape[1:])}, the first exported episode's {self.features[key]['shape']}")
            hist = pixel_histogram(frames)
            self.hists[key] += hist
            stats[key] = image_stats(hist, t)
            if self.video:
                row.update(self.videos[key].add_episode(frames))
            else:
                arrays[key] = pa.array([{"bytes": _png(f), "path": None} for f in frames], type=self.schema.field(key).type)
        table = pa.table([arrays[f.name] for f in self.schema], schema=self.schema)
        if self.writer is None:
            import pyarrow.parquet as pq

            path = self.root / DATA_PATH.format(chunk_index=self.chunk, file_index=self.file)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(path, self.schema, compression="snappy")
            self._data_path = path
        self.writer.write_table(table)
        row.update({"data/chunk_index": self.chunk, "data/file_index": self.file,
                    "dataset_from_index": self.frames, "dataset_to_index": self.frames + t})
        for key, st in stats.items():
            for s, v in st.items():
                row[f"stats/{key}/{s}"] = v.tolist()
        row["meta/episodes/chunk_index"] = 0
        row["meta/episodes/file_index"] = 0
        self.episodes.append(row)
        self.frames += t
        if self._data_path.stat().st_size > DATA_FILE_MB * 2**20:
            self._close_data()
            self.chunk, self.file = _next_file(self.chunk, self.file)

    def _close_data(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    # metadata ---------------------------------------------------------------------------------
    def _write_meta(self) -> None:
        pa = self.pa
        import pyarrow.parquet as pq

        meta = self.root / "meta"
        (meta / "episodes" / "chunk-000").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(self.episodes), self.root / EPISODES_PATH.format(chunk_index=0, file_index=0))
        # tasks: one row per task; pandas (LeRobot reads it with pd.read_parquet) makes `task` the index
        pandas_meta = {
            "index_columns": ["task"], "column_indexes": [],
            "columns": [{"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": None},
                        {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object", "metadata": None}],
            "creator": {"library": "skillforge"}, "pandas_version": "2.2.0",
        }
        tasks = pa.table({"task_index": pa.array([0], pa.int64()), "task": pa.array([self.task], pa.string())})
        pq.write_table(tasks.replace_schema_metadata({"pandas": json.dumps(pandas_meta)}), meta / "tasks.parquet")
        stats = {key: vector_stats(np.concatenate(v).reshape(self.frames, -1)) for key, v in self.values.items()}
        stats.update({key: image_stats(h, self.frames) for key, h in self.hists.items()})
        (meta / "stats.json").write_text(json.dumps(_json_stats(stats), indent=1))
        info = self.traj.env_info
        robots = info.get("env_kwargs", {}).get("robot_uids", "panda")
        n = len(self.episodes)
        (meta / "info.json").write_text(json.dumps({
            "codebase_version": CODEBASE_VERSION,
            "robot_type": ",".join(robots) if isinstance(robots, list) else robots,
            "total_episodes": n, "total_frames": self.frames, "total_tasks": 1,
            "chunks_size": CHUNKS_SIZE, "data_files_size_in_mb": DATA_FILE_MB, "video_files_size_in_mb": VIDEO_FILE_MB,
            "fps": self.fps, "splits": {"train": f"0:{n}"},
            "data_path": DATA_PATH, "video_path": VIDEO_PATH if self.video else None,
            "features": self.features,
        }, indent=1))

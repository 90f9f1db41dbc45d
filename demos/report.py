"""`demos report FILE`: one self-contained HTML page to judge a demonstration file before training.

The page shows the file's env and modes, success and the reasons for failures, histograms of
episode length and of per-step action size, the range of every action dimension, the start
positions of the objects and goals on the table, and, when the file holds camera images, a few
episodes as videos (VP9 WebM, which every browser plays) with a strip of frames. Plots are
matplotlib PNGs; images and videos are embedded as data: URLs, so the page is one file that can be
mailed or attached. Reads our files and ManiSkill's (replay.trajectory).
"""

from __future__ import annotations

import base64
import html
import io
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from replay.lerobot import get_path, rgb_paths
from replay.trajectory import Episode, TrajectoryFile
from replay.video import VP9_WEBM, encode

VIDEO_EPISODES = 3  # episodes shown as videos
STRIP_FRAMES = 6  # frames in an episode's strip
MAX_TABLE_ROWS = 50
COLOURS = {"success": "#2a9d4b", "failure": "#d1495b"}


@dataclass
class EpisodeSummary:
    episode_id: int
    seed: int | None
    length: int
    success: bool
    reason: str  # "success", or why not
    actions: np.ndarray  # (T, A)
    start: dict[str, np.ndarray]  # object or goal name -> its (3,) position after reset


def failure_reason(entry: dict, episode: Episode) -> str:
    """Why an episode did not succeed: the writer's recorded reason (planning, conversion), else
    what its last step says (the task's fail condition, the time limit)."""
    info = entry.get("info") or {}
    if info.get("convert") not in (None, "success"):
        return f"conversion: {info['convert']}"
    if info.get("reason") not in (None, "success"):
        return str(info["reason"])
    if episode.length and episode.fail[-1]:
        return "the task's fail condition"
    if episode.length and episode.truncated[-1]:
        return "time limit"
    return "ended without success"


def start_positions(episode: Episode) -> dict[str, np.ndarray]:
    """Every actor's position after reset, and each 3-vector task goal (`env_states/task/*goal*`)."""
    states = episode.env_states
    out = {name: np.asarray(a[0, :3], float) for name, a in (states.get("actors") or {}).items()}
    for name, a in (states.get("task") or {}).items():
        if "goal" in name and a.ndim == 2 and a.shape[1] == 3:
            out[name] = np.asarray(a[0], float)
    return out


def summarise(traj: TrajectoryFile) -> list[EpisodeSummary]:
    out = []
    for entry in traj.episodes:
        e = traj.episode(entry["episode_id"], with_obs=False)
        success = bool(e.success[-1]) if e.length else bool(entry.get("success", False))
        out.append(EpisodeSummary(
            episode_id=entry["episode_id"], seed=entry.get("episode_seed", entry.get("seed")), length=e.length,
            success=success, reason="success" if success else failure_reason(entry, e),
            actions=np.asarray(e.actions, float), start=start_positions(e),
        ))
    return out


def _reason_kind(reason: str) -> str:
    """A reason with its numbers blanked, so that "took 212 steps" and "took 230 steps" count together."""
    return re.sub(r"-?\d+(\.\d+)?", "#", reason)


# ---- plots ----------------------------------------------------------------------------------------


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _figure(w: float, h: float):
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no GUI backend

    return Figure(figsize=(w, h))


def _split(eps: list[EpisodeSummary], values) -> list[tuple[str, list]]:
    ok = [values(e) for e in eps if e.success]
    bad = [values(e) for e in eps if not e.success]
    return [(k, v) for k, v in (("success", ok), ("failure", bad)) if v]


def plot_lengths(eps: list[EpisodeSummary]) -> str:
    fig = _figure(5.5, 3.2)
    ax = fig.add_subplot()
    groups = _split(eps, lambda e: e.length)
    ax.hist([v for _, v in groups], bins=min(30, max(5, len(eps) // 3)), stacked=True,
            color=[COLOURS[k] for k, _ in groups], label=[f"{k} ({len(v)})" for k, v in groups])
    ax.set_xlabel("episode length (steps)")
    ax.set_ylabel("episodes")
    ax.legend()
    return _png(fig)


def arm_dims(action_dim: int, robots: int) -> list[int]:
    """Action dimensions without each robot's last one (its gripper)."""
    per = action_dim // max(robots, 1)
    if per <= 1:
        return list(range(action_dim))
    return [d for d in range(action_dim) if d % per != per - 1]


def step_sizes(e: EpisodeSummary, dims: list[int], delta: bool) -> np.ndarray:
    """Per step, the norm of the arm's action (delta and velocity modes) or of its change from the
    previous step (absolute target modes, where the action itself is a position)."""
    a = e.actions[:, dims]
    return np.linalg.norm(a if delta else np.diff(a, axis=0), axis=1)


def plot_action_sizes(eps: list[EpisodeSummary], dims: list[int], delta: bool) -> str:
    fig = _figure(5.5, 3.2)
    ax = fig.add_subplot()
    groups = [(k, np.concatenate(v)) for k, v in _split(eps, lambda e: step_sizes(e, dims, delta))]
    groups = [(k, v) for k, v in groups if v.size]
    if groups:
        ax.hist([v for _, v in groups], bins=40, stacked=True, color=[COLOURS[k] for k, _ in groups],
                label=[f"{k} ({v.size} steps)" for k, v in groups])
        ax.legend()
    ax.set_xlabel(("|a_t|" if delta else "|a_t - a_(t-1)|") + " over the arm's action dims")
    ax.set_ylabel("steps")
    return _png(fig)


def plot_action_ranges(eps: list[EpisodeSummary]) -> str:
    a = np.concatenate([e.actions for e in eps if e.length])
    fig = _figure(max(4.0, 0.45 * a.shape[1] + 1.5), 3.2)
    ax = fig.add_subplot()
    ax.boxplot([a[:, d] for d in range(a.shape[1])], whis=(1, 99), showfliers=False)
    ax.set_xticks(range(1, a.shape[1] + 1), [str(d) for d in range(a.shape[1])])
    ax.set_xlabel("action dimension (box: quartiles; whiskers: 1st and 99th percentile)")
    ax.set_ylabel("value")
    return _png(fig)


def varying_objects(eps: list[EpisodeSummary]) -> tuple[list[str], dict[str, np.ndarray]]:
    """Names whose start position varies across episodes, and the fixed ones with their position."""
    names = [n for n in eps[0].start if all(n in e.start for e in eps)]
    varying, fixed = [], {}
    for n in names:
        p = np.stack([e.start[n] for e in eps])
        if len(eps) > 1 and np.ptp(p, axis=0).max() > 1e-6:
            varying.append(n)
        else:
            fixed[n] = p[0]
    return varying, fixed


def plot_starts(eps: list[EpisodeSummary], names: list[str]) -> str:
    fig = _figure(9.0, 4.0)
    top, side = fig.subplots(1, 2)
    cmap = ["#264653", "#e9c46a", "#2a9d8f", "#f4a261", "#8d5fd3", "#e76f51", "#457b9d"]
    for i, n in enumerate(names):
        for ok, marker in ((True, "o"), (False, "x")):
            p = np.array([e.start[n] for e in eps if e.success == ok]).reshape(-1, 3)
            if len(p):
                label = f"{n} ({'success' if ok else 'failure'})"
                kw = {"marker": marker, "color": cmap[i % len(cmap)], "label": label, "s": 18, "alpha": 0.8}
                top.scatter(p[:, 0], p[:, 1], **kw)
                side.scatter(p[:, 0], p[:, 2], **kw)
    top.set_aspect("equal", adjustable="datalim")
    top.set_xlabel("x (m)")
    top.set_ylabel("y (m)")
    top.set_title("from above")
    side.set_xlabel("x (m)")
    side.set_ylabel("z (m)")
    side.set_title("from the side")
    side.legend(fontsize=7, loc="best")
    return _png(fig)


# ---- camera episodes ------------------------------------------------------------------------------


def _even(frames: np.ndarray) -> np.ndarray:
    """Pads (T, H, W, 3) frames to even H and W (yuv420p)."""
    t, h, w, c = frames.shape
    if h % 2 == 0 and w % 2 == 0:
        return frames
    out = np.zeros((t, h + h % 2, w + w % 2, c), frames.dtype)
    out[:, :h, :w] = frames
    return out


def camera_frames(episode: Episode) -> tuple[list[str], np.ndarray] | None:
    """Every camera's rgb frames side by side: (cameras, (T + 1, H, sum W, 3)), or None."""
    paths = rgb_paths(episode.obs)
    if not paths:
        return None
    frames = [get_path(episode.obs, p) for p in paths.values()]
    h = max(f.shape[1] for f in frames)
    padded = [np.pad(f, ((0, 0), (0, h - f.shape[1]), (0, 0), (0, 0))) for f in frames]
    return list(paths), np.concatenate(padded, axis=2).astype(np.uint8)


def _enlarge(frames: np.ndarray, height: int = 128) -> np.ndarray:
    """Small frames (T, H, W, 3) repeated pixel by pixel up to about `height` rows."""
    k = max(1, height // frames.shape[1])
    return frames if k == 1 else frames.repeat(k, axis=1).repeat(k, axis=2)


def _video(frames: np.ndarray, fps: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "episode.webm"
        encode(_even(frames), path, fps, VP9_WEBM)
        return "data:video/webm;base64," + base64.b64encode(path.read_bytes()).decode()


def _strip(frames: np.ndarray) -> str:
    from PIL import Image

    idx = np.unique(np.linspace(0, len(frames) - 1, STRIP_FRAMES).round().astype(int))
    frames = _enlarge(frames[idx])
    gap = np.full((frames.shape[1], 4, 3), 255, np.uint8)
    row = np.concatenate([x for f in frames for x in (f, gap)][:-1], axis=1)
    buf = io.BytesIO()
    Image.fromarray(row).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def pick_video_episodes(eps: list[EpisodeSummary], k: int) -> list[EpisodeSummary]:
    """Up to k episodes: successes and failures in turn, each in file order."""
    ok = [e for e in eps if e.success and e.length]
    bad = [e for e in eps if not e.success and e.length]
    out = []
    while len(out) < k and (ok or bad):
        for group in (ok, bad):
            if group and len(out) < k:
                out.append(group.pop(0))
    return out


# ---- the page -------------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: .2em .8em; border-bottom: 1px solid #eee; text-align: left; }
.ok { color: #2a9d4b; } .bad { color: #d1495b; } .note { color: #666; font-size: .9em; }
figure { margin: 1em 0; } img, video { max-width: 100%; image-rendering: pixelated; }
.episode { margin: 1em 0 2em; } video { width: 512px; max-width: 100%; }
"""


def _table(header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def build_report(path: str | Path, out: str | Path | None = None, videos: int = VIDEO_EPISODES) -> Path:
    """Writes the report of trajectory file `path` to `out` (default: beside it, NAME.report.html)."""
    path = Path(path)
    out = Path(out) if out is not None else path.with_name(path.stem + ".report.html")
    traj = TrajectoryFile(path)
    try:
        page = _page(traj, videos)
    finally:
        traj.close()
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out)
    return out


def _page(traj: TrajectoryFile, videos: int) -> str:
    info = traj.env_info
    kwargs = info.get("env_kwargs", {})
    meta = traj.meta
    eps = summarise(traj)
    esc = html.escape
    n, n_ok = len(eps), sum(e.success for e in eps)
    control = kwargs.get("control_mode") or (traj.episodes[0].get("control_mode") if traj.episodes else None) or "?"
    robots = kwargs.get("robot_uids", "panda")
    parts = [f"<h1>{esc(str(info.get('env_id')))}: {esc(traj.path.name)}</h1>"]
    lengths = np.array([e.length for e in eps]) if eps else np.zeros(1)
    parts.append(_table(["", ""], [
        ["file", esc(str(traj.path))],
        ["source", esc(str(meta.get("source_type", "?"))) + (f" ({esc(meta['source_desc'])})" if meta.get("source_desc") else "")],
        ["control mode", esc(str(control))],
        ["obs mode", esc(str(kwargs.get("obs_mode", "?")))],
        ["robots", esc(", ".join(robots) if isinstance(robots, list) else str(robots))],
        ["max episode steps", esc(str(info.get("max_episode_steps", "?")))],
        ["episodes", f"{n} ({int(lengths.sum())} steps)"],
        ["success", f"<span class=ok>{n_ok}</span> of {n} ({n_ok / max(n, 1):.1%})"],
        ["episode length", f"min {lengths.min()}, median {np.median(lengths):.0f}, mean {lengths.mean():.1f}, max {lengths.max()}"],
    ]))
    if not eps:
        parts.append("<p>The file holds no episodes.</p>")
        return _html(traj, parts)

    parts.append("<h2>Outcomes</h2>")
    kinds = Counter(_reason_kind(e.reason) for e in eps if not e.success)
    if kinds:
        rows = []
        for kind, count in kinds.most_common():
            ids = [e.episode_id for e in eps if not e.success and _reason_kind(e.reason) == kind]
            example = next(e.reason for e in eps if not e.success and _reason_kind(e.reason) == kind)
            rows.append([esc(example), count, f"{count / n:.1%}", esc(", ".join(map(str, ids[:10])) + (" ..." if len(ids) > 10 else ""))])
        parts.append("<p>Why episodes failed (numbers in a reason vary between its episodes; one example shown):</p>")
        parts.append(_table(["reason", "episodes", "share", "episode ids"], rows))
    else:
        parts.append("<p class=ok>Every episode succeeded.</p>")

    parts.append("<h2>Episode length</h2>")
    parts.append(f"<figure><img alt='episode length histogram' src='{plot_lengths(eps)}'></figure>")

    parts.append("<h2>Actions</h2>")
    adim = eps[0].actions.shape[1]
    dims = arm_dims(adim, len(robots) if isinstance(robots, list) else 1)
    delta = "delta" in str(control) or "vel" in str(control)
    what = ("the norm of each step's arm action" if delta else
            "the norm of each step's change of the arm's target (absolute targets: the action itself is a position)")
    parts.append(f"<p>Per step, {what}; the gripper dimension{'s' if len(robots) > 1 and isinstance(robots, list) else ''} "
                 f"left out. Action dims: {adim}, control mode {esc(str(control))}.</p>")
    parts.append(f"<figure><img alt='action size histogram' src='{plot_action_sizes(eps, dims, delta)}'></figure>")
    parts.append(f"<figure><img alt='action ranges' src='{plot_action_ranges(eps)}'></figure>")

    parts.append("<h2>Start positions</h2>")
    varying, fixed = varying_objects(eps)
    if varying:
        parts.append("<p>Each object's and goal's position after reset (env frame; circles: successful episodes, "
                     "crosses: failed ones).</p>")
        parts.append(f"<figure><img alt='start positions' src='{plot_starts(eps, varying)}'></figure>")
    else:
        parts.append("<p>No object or goal starts at a position that varies between episodes.</p>")
    if fixed:
        fixed_text = "; ".join(f"{esc(k)} ({', '.join(f'{x:.3f}' for x in v)})" for k, v in fixed.items())
        parts.append(f"<p class=note>The same in every episode: {fixed_text}.</p>")

    shown = pick_video_episodes(eps, videos)
    first = traj.episode(shown[0].episode_id) if shown else None
    if first is not None and camera_frames(first) is not None:
        fps = int(kwargs.get("control_freq", 20))
        parts.append("<h2>Episodes on camera</h2>")
        for s in shown:
            cams, frames = camera_frames(first if s is shown[0] else traj.episode(s.episode_id))
            verdict = "<span class=ok>success</span>" if s.success else f"<span class=bad>failure</span>: {esc(s.reason)}"
            parts.append(
                f"<div class=episode><h3>episode {s.episode_id} (seed {s.seed}, {s.length} steps): {verdict}</h3>"
                f"<p class=note>cameras, left to right: {esc(', '.join(cams))}; played at {fps} frames per second</p>"
                f"<video controls loop muted autoplay playsinline src='{_video(frames, fps)}'></video>"
                f"<p class=note>{STRIP_FRAMES} frames from reset to the last step:</p>"
                f"<img alt='frames of episode {s.episode_id}' src='{_strip(frames)}'></div>"
            )
    elif first is not None:
        parts.append("<p class=note>The file holds no camera images (obs mode "
                     f"{esc(str(kwargs.get('obs_mode', 'none')))}); `replay convert FILE --obs-mode rgb` renders them.</p>")

    parts.append("<h2>Episodes</h2>")
    rows = [[e.episode_id, e.seed, e.length, "<span class=ok>yes</span>" if e.success else "<span class=bad>no</span>",
             "" if e.success else esc(e.reason)] for e in eps[:MAX_TABLE_ROWS]]
    parts.append(_table(["id", "seed", "steps", "success", "why not"], rows))
    if n > MAX_TABLE_ROWS:
        parts.append(f"<p class=note>... and {n - MAX_TABLE_ROWS} more.</p>")
    return _html(traj, parts)


def _html(traj: TrajectoryFile, parts: list[str]) -> str:
    title = html.escape(f"{traj.env_info.get('env_id')} dataset report: {traj.path.name}")
    return (f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>{title}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")

"""Record any batched env to mp4: the N envs' frames tiled in a grid, one video frame per reset
and per step, each tile framed in the colour of its env's state at that step (green: success,
red: fail, grey: neither) under a caption with the env index and its step count.

    env = RecordVideo(gym.make("PickCube-v1", num_envs=16, render_mode="rgb_array"), "videos")
    env.reset(seed=0)                      # starts videos/PickCube-v1_0.mp4
    for _ in range(50):
        env.step(env.action_space.sample())
    env.close()                            # finishes the file

Frames come from env.render() (render_mode="rgb_array"), or with `camera=uid` from that
observation camera's "rgb" (obs modes rgb, rgbd). A reset of all envs starts a new file; a
partial reset (options={"env_idx": ...}) continues the current one. Writing uses imageio-ffmpeg.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

STATE_COLOURS = {"success": (40, 200, 70), "fail": (220, 50, 40), "running": (110, 110, 110)}
BORDER = 3
CAPTION = 12  # pixels of caption strip above each tile


def tile(frames: np.ndarray, columns: int | None = None) -> np.ndarray:
    """(N, H, W, 3) -> one (rows * H, columns * W, 3) image, env i at row i // columns."""
    n, h, w, c = frames.shape
    columns = columns or math.ceil(math.sqrt(n))
    rows = math.ceil(n / columns)
    grid = np.zeros((rows * h, columns * w, c), dtype=frames.dtype)
    for i in range(n):
        r, k = divmod(i, columns)
        grid[r * h : (r + 1) * h, k * w : (k + 1) * w] = frames[i]
    return grid


def annotate(frames: np.ndarray, states: list[str], steps: list[int]) -> np.ndarray:
    """Frame each (H, W, 3) tile in its state's colour and caption it "env i  t=step  state"."""
    from PIL import Image, ImageDraw

    n, h, w, _ = frames.shape
    out = np.zeros((n, h + CAPTION + 2 * BORDER, w + 2 * BORDER, 3), dtype=np.uint8)
    for i in range(n):
        out[i, :, :] = STATE_COLOURS[states[i]]
        out[i, CAPTION + BORDER : CAPTION + BORDER + h, BORDER : BORDER + w] = frames[i]
        image = Image.fromarray(out[i])
        label = f"env {i}  t={steps[i]}" + ("  success" if states[i] == "success" else "  fail" if states[i] == "fail" else "")
        ImageDraw.Draw(image).text((BORDER + 1, 1), label, fill=(255, 255, 255))
        out[i] = np.asarray(image)
    return out


def _pad(image: np.ndarray, block: int = 16) -> np.ndarray:
    """Pad to a multiple of `block` pixels, as H.264 encoders want."""
    h, w = image.shape[:2]
    ph, pw = -h % block, -w % block
    return np.pad(image, ((0, ph), (0, pw), (0, 0))) if ph or pw else image


def require_mp4_writer() -> None:
    """Raise one ValueError when imageio cannot write mp4 (imageio-ffmpeg missing): without it
    imageio falls back to a writer that fails mid-file and leaves a broken .mp4 behind."""
    if importlib.util.find_spec("imageio_ffmpeg") is None:
        raise ValueError("videos are written as mp4 with imageio-ffmpeg, which is not installed (pip install imageio-ffmpeg)")


class RecordVideo(gym.Wrapper):
    def __init__(
        self,
        env: gym.Env,
        video_dir: str | Path,
        name_prefix: str | None = None,
        fps: int | None = None,
        camera: str | None = None,
        columns: int | None = None,
        show_state: bool = True,
    ):
        super().__init__(env)
        base = env.unwrapped
        if camera is None and base.render_mode != "rgb_array":
            raise ValueError(
                "RecordVideo needs frames: make the env with render_mode='rgb_array', or pass camera=<uid> "
                "with an obs mode that has rgb (rgb, rgbd)"
            )
        require_mp4_writer()
        self.video_dir = Path(video_dir)
        self.name_prefix = name_prefix or (base.env_id or "env")
        self.fps = int(fps or base.control_freq)
        self.camera = camera
        self.columns = columns
        self.show_state = show_state
        self.paths: list[Path] = []  # every file written, in order
        self.frames_written: list[int] = []  # frames in each file of `paths`
        self._writer = None
        self._states = ["running"] * base.num_envs

    # ---- frames ---------------------------------------------------------------------------
    def _frames(self, obs) -> np.ndarray:
        if self.camera is None:
            frames = self.env.unwrapped.render()
        else:
            try:
                frames = obs["sensor_data"][self.camera]["rgb"]
            except (KeyError, TypeError):
                raise ValueError(f"RecordVideo(camera={self.camera!r}): the observation has no rgb for that camera") from None
        return frames.cpu().numpy() if isinstance(frames, torch.Tensor) else np.asarray(frames)

    def _write(self, obs) -> None:
        frames = self._frames(obs)
        if self.show_state:
            steps = self.env.unwrapped.elapsed_steps.tolist()
            frames = annotate(frames, self._states, steps)
        self._writer.append_data(_pad(tile(frames, self.columns)))
        self.frames_written[-1] += 1

    def _states_from(self, info: dict) -> list[str]:
        success = info["success"].tolist()
        fail = info["fail"].tolist()
        return ["success" if s else "fail" if f else "running" for s, f in zip(success, fail)]

    # ---- files ----------------------------------------------------------------------------
    def _start(self) -> None:
        import imageio

        self._finish()
        self.video_dir.mkdir(parents=True, exist_ok=True)
        path = self.video_dir / f"{self.name_prefix}_{len(self.paths)}.mp4"
        self._writer = imageio.get_writer(path, fps=self.fps, codec="libx264", quality=7, macro_block_size=1)
        self.paths.append(path)
        self.frames_written.append(0)

    def _finish(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    # ---- gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        if self._writer is None or (options or {}).get("env_idx") is None:
            self._start()
        self._states = self._states_from(info)
        self._write(obs)
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._writer is None:
            self._start()
        self._states = self._states_from(info)
        self._write(obs)
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        self._finish()
        super().close()

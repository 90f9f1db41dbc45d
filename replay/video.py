"""Frames to a video file through the ffmpeg binary that imageio-ffmpeg ships, raw RGB on its stdin,
with the codec arguments the caller chooses (the LeRobot export: AV1 mp4; the dataset report:
VP9 WebM, which every browser plays)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np

AV1_MP4 = ["-c:v", "libsvtav1", "-pix_fmt", "yuv420p", "-g", "2", "-crf", "30", "-preset", "12"]
VP9_WEBM = ["-c:v", "libvpx-vp9", "-pix_fmt", "yuv420p", "-b:v", "0", "-crf", "34", "-deadline", "realtime", "-cpu-used", "8"]


class FfmpegWriter:
    """Writes (H, W, 3) uint8 frames of one size to `path`; `close()` finishes the file and raises
    RuntimeError with ffmpeg's last message if encoding failed. yuv420p codecs need even sizes."""

    def __init__(self, path: str | Path, size: tuple[int, int], fps: int, codec_args: list[str]):
        import imageio_ffmpeg

        self.path = Path(path)
        self.size = tuple(size)  # (H, W)
        h, w = self.size
        cmd = [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y",
               "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", str(int(fps)), "-i", "-",
               *codec_args, "-an", str(self.path)]
        env = {**os.environ, "SVT_LOG": "1"}  # SVT-AV1 prints a banner to stderr otherwise
        self._proc: subprocess.Popen | None = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )

    def write(self, frames: np.ndarray) -> None:
        """(T, H, W, 3) uint8 frames."""
        if frames.shape[1:3] != self.size:
            raise ValueError(f"frames are {frames.shape[1:3]}, the video {self.size}")
        try:
            self._proc.stdin.write(np.ascontiguousarray(frames, dtype=np.uint8).tobytes())
        except BrokenPipeError:
            self.close()  # raises with ffmpeg's message
            raise RuntimeError(f"ffmpeg stopped while writing {self.path}") from None

    def close(self) -> None:
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass
        err = proc.stderr.read().decode(errors="replace").strip()
        proc.stderr.close()
        if proc.wait() != 0:
            last = err.splitlines()[-1] if err else f"ffmpeg exit code {proc.returncode}"
            raise RuntimeError(f"video encoding of {self.path} failed: {last}")

    def kill(self) -> None:
        """Stops ffmpeg at once (after an error elsewhere); the file is left unfinished."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            for pipe in (self._proc.stdin, self._proc.stderr):
                pipe.close()
            self._proc = None


def encode(frames: np.ndarray, path: str | Path, fps: int, codec_args: list[str]) -> None:
    """All of `frames` (T, H, W, 3) uint8 into one video file."""
    writer = FfmpegWriter(path, frames.shape[1:3], fps, codec_args)
    try:
        writer.write(frames)
    except BaseException:
        writer.kill()
        raise
    writer.close()

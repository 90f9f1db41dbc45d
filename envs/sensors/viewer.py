"""render_mode="human": SAPIEN's viewer window over every env (they sit on their grid)."""

from __future__ import annotations

import os

import numpy as np

from envs.core.world import BatchedWorld


def require_display() -> None:
    """One clear error, at construction, where no window can open."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise RuntimeError(
            "render_mode='human' opens a window, and this machine has no display (DISPLAY and "
            "WAYLAND_DISPLAY are unset). Use render_mode='rgb_array' for frames, or wrap the env in "
            "envs.wrappers.RecordVideo to write an mp4."
        )


class HumanViewer:
    def __init__(self, world: BatchedWorld):
        from sapien.utils import Viewer

        try:
            self.viewer = Viewer()
        except RuntimeError as e:
            raise RuntimeError(f"render_mode='human': SAPIEN could not open a window ({e}); use 'rgb_array'") from None
        self.viewer.set_scenes(world.scenes, [np.zeros(3, dtype=np.float32)] * len(world.scenes))
        self.world = world

    def show(self) -> None:
        for scene in self.world.scenes:
            scene.update_render()
        self.viewer.render()

    def close(self) -> None:
        self.viewer.close()

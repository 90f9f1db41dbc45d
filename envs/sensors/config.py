"""Camera descriptions and the user's overrides of them. Plain data: nothing here renders.

A camera's pose follows SAPIEN's camera convention: x looks forward, y points left, z up. It is
given in its mount's frame: the env's own frame (origin at the table centre, table top at
z = 0) for a scene camera, or a robot link's frame for a camera that moves with the robot.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# keys of `sensor_configs` that change every observation camera at once
_SHARED_KEYS = ("width", "height", "fov", "near", "far")


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> tuple[float, ...]:
    """The pose (x, y, z, qw, qx, qy, qz) of a camera at `eye` looking at `target`."""
    eye, target, up = (np.asarray(v, dtype=np.float64) for v in (eye, target, up))
    forward = target - eye
    forward /= np.linalg.norm(forward)
    left = np.cross(up, forward)
    if np.linalg.norm(left) < 1e-9:  # looking straight along `up`
        left = np.cross([0.0, 1.0, 0.0] if abs(forward[1]) < 0.9 else [1.0, 0.0, 0.0], forward)
    left /= np.linalg.norm(left)
    m = np.stack((forward, left, np.cross(forward, left)), 1)  # columns: camera x, y, z
    w = math.sqrt(max(1.0 + m[0, 0] + m[1, 1] + m[2, 2], 1e-12)) / 2
    if w > 1e-3:
        q = (w, (m[2, 1] - m[1, 2]) / (4 * w), (m[0, 2] - m[2, 0]) / (4 * w), (m[1, 0] - m[0, 1]) / (4 * w))
    else:  # a half turn: take the largest diagonal axis
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = math.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k]) * 2
        v = [0.0, 0.0, 0.0]
        v[i], v[j], v[k] = s / 4, (m[j, i] + m[i, j]) / s, (m[k, i] + m[i, k]) / s
        q = ((m[k, j] - m[j, k]) / s, *v)
    return (*map(float, eye), *map(float, q))


@dataclass(frozen=True)
class CameraConfig:
    """One camera in every env.

    uid: the camera's name in observations. width, height: pixels. fov: vertical field of view
    (radians). near, far: clipping distances (m); nothing outside them is seen. pose: (x, y, z,
    qw, qx, qy, qz) in the mount's frame. mount: None for the env's frame, else the name of a
    robot link the camera moves with.
    """

    uid: str
    width: int = 128
    height: int = 128
    fov: float = math.pi / 2
    near: float = 0.01
    far: float = 10.0
    pose: tuple[float, ...] = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    mount: str | None = None

    def __post_init__(self) -> None:
        if not self.uid or not isinstance(self.uid, str):
            raise ValueError(f"camera uid must be a non-empty string, got {self.uid!r}")
        for name in ("width", "height"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 1 <= v <= 4096:
                raise ValueError(f"camera {self.uid}: {name} must be an integer in [1, 4096], got {v!r}")
        if not 0 < self.fov < math.pi:
            raise ValueError(f"camera {self.uid}: fov must be in (0, pi) radians, got {self.fov!r}")
        if not 0 < self.near < self.far:
            raise ValueError(f"camera {self.uid}: need 0 < near < far, got near={self.near!r} far={self.far!r}")
        if len(self.pose) != 7:
            raise ValueError(f"camera {self.uid}: pose must be (x, y, z, qw, qx, qy, qz), got {self.pose!r}")
        object.__setattr__(self, "pose", tuple(float(v) for v in self.pose))


@dataclass(frozen=True)
class SensorSettings:
    """What `sensor_configs` decided: the observation cameras, the human-view cameras used by
    render()."""

    cameras: tuple[CameraConfig, ...]
    render_cameras: tuple[CameraConfig, ...]


def _override(config: CameraConfig, changes: dict[str, Any]) -> CameraConfig:
    fields = [f.name for f in dataclasses.fields(CameraConfig) if f.name != "uid"]
    unknown = [k for k in changes if k not in fields]
    if unknown:
        raise ValueError(f"camera {config.uid}: unknown setting(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(fields)}")
    if "pose" in changes:
        changes = {**changes, "pose": tuple(changes["pose"])}
    return dataclasses.replace(config, **changes)


def resolve_sensor_configs(
    cameras: list[CameraConfig], render_cameras: list[CameraConfig], overrides: dict[str, Any] | None
) -> SensorSettings:
    """Apply a user's `sensor_configs` (JSON-like, so it can be stored with a demo) to a task's
    default cameras:

        {"width": 64, "height": 64, "fov": 1.2,        # every observation camera
         "base_camera": {"pose": [...], "far": 3.0},   # one camera, by uid (render cameras too)
         "hand_camera": None}                          # drop a camera
    """
    overrides = dict(overrides or {})
    shared = {k: overrides.pop(k) for k in _SHARED_KEYS if k in overrides}
    uids = [c.uid for c in cameras] + [c.uid for c in render_cameras]
    unknown = [k for k in overrides if k not in uids]
    if unknown:
        allowed = ", ".join([*_SHARED_KEYS, *uids])
        raise ValueError(f"unknown sensor_configs key(s) {', '.join(map(repr, unknown))}; allowed: {allowed}")

    def resolve(configs: list[CameraConfig], base: dict[str, Any]) -> tuple[CameraConfig, ...]:
        out = []
        for c in configs:
            if c.uid in overrides and overrides[c.uid] is None:
                continue
            c = _override(c, base) if base else c
            if c.uid in overrides:
                if not isinstance(overrides[c.uid], dict):
                    raise ValueError(f"sensor_configs[{c.uid!r}] must be a dict of settings or None")
                c = _override(c, overrides[c.uid])
            out.append(c)
        return tuple(out)

    obs = resolve(cameras, shared)
    if len({c.uid for c in obs}) != len(obs):
        raise ValueError(f"camera uids must be unique, got {[c.uid for c in obs]}")
    return SensorSettings(obs, resolve(render_cameras, {}))


def default_base_camera() -> CameraConfig:
    """A task's default observation camera: 128 x 128, in front of the robot, looking down at the
    table centre (the env origin) with the robot's arm in view."""
    return CameraConfig("base_camera", 128, 128, fov=math.pi / 2, pose=look_at((0.3, 0.0, 0.6), (-0.1, 0.0, 0.1)))


def default_render_camera() -> CameraConfig:
    """The human-view camera of render_mode="rgb_array": table and robot from the front-right."""
    return CameraConfig("render_camera", 384, 384, fov=math.radians(55), pose=look_at((0.75, 0.75, 0.65), (-0.15, 0.0, 0.1)))

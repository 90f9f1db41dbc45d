"""Camera-frame points and the fused point cloud of ManiSkill's `pointcloud` obs mode.

Every pixel of a camera is a point: its "position" image holds, per pixel, the surface point in
OpenGL camera coordinates (x right, y up, z backward), int16 millimetres, (0, 0, 0) where nothing
is hit, as ManiSkill's minimal shader gives it. The point cloud moves every camera's positions
to the env frame with the camera's cam2world_gl and stacks the cameras: (N, sum H*W, 4) xyzw,
where w is 1 on an entity's pixel and 0 on the background (all four numbers 0 there). Nothing is sampled or dropped: a consumer that wants P points picks them by w.
Work is in numpy (see camera.py on torch threads).
"""

from __future__ import annotations

import numpy as np

POSITION_MAX_MM = 32767  # positions leave as int16 millimetres


def pixel_rays(intrinsics: np.ndarray, height: int, width: int) -> np.ndarray:
    """(N, H*W, 2) float32: (x/z, y/z) of each pixel centre's ray in OpenCV camera coordinates."""
    v, u = np.meshgrid(np.arange(height, dtype=np.float32) + 0.5, np.arange(width, dtype=np.float32) + 0.5, indexing="ij")
    k = intrinsics.astype(np.float32)
    x = (u.reshape(1, -1) - k[:, 0, 2:3]) / k[:, 0, 0:1]
    y = (v.reshape(1, -1) - k[:, 1, 2:3]) / k[:, 1, 1:2]
    return np.stack((x, y), -1)


def position_of(depth_um: np.ndarray, rays: np.ndarray) -> np.ndarray:
    """depth_um: (N, H, W) int32 depth along the optical axis in micrometres (0 = nothing); rays
    from `pixel_rays`. Returns (N, H, W, 3) int16 millimetres in OpenGL camera coordinates."""
    n, h, w = depth_um.shape
    d = depth_um.reshape(n, -1, 1).astype(np.float32) * np.float32(1e-3)  # (N, HW, 1) mm
    cv = np.concatenate((rays * d, d), -1)  # OpenCV camera frame: x right, y down, z forward
    gl = cv * np.array([1.0, -1.0, -1.0], dtype=np.float32)
    return np.clip(np.rint(gl), -POSITION_MAX_MM, POSITION_MAX_MM).astype(np.int16).reshape(n, h, w, 3)


def xyzw(position: np.ndarray, segmentation: np.ndarray, cam2world_gl: np.ndarray) -> np.ndarray:
    """position (N, H, W, 3) int16 mm, segmentation (N, H, W, 1), cam2world_gl (N, 4, 4) ->
    (N, H*W, 4) float32: env-frame metres and w = (segmentation != 0)."""
    n = position.shape[0]
    p = np.concatenate((position.astype(np.float32) / 1000.0, (segmentation != 0).astype(np.float32)), -1)
    return p.reshape(n, -1, 4) @ cam2world_gl.astype(np.float32).transpose(0, 2, 1)

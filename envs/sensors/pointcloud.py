"""Fused, fixed-size point clouds from every camera of an env.

Every pixel of every observation camera that hits a surface (non-zero depth, inside the
camera's near/far range) is a candidate point, unprojected through the pixel's centre with the
camera's intrinsics and moved to the env frame with its extrinsics. Each env keeps exactly P of
its candidates, drawn uniformly at random without replacement; an env with fewer than P
candidates repeats its candidates (in random order) to fill P. The draw uses a numpy generator
that `reset(seed=...)` reseeds, so seeded runs give the same clouds. Work is in numpy (see
camera.py on torch threads).
"""

from __future__ import annotations

import numpy as np


def pixel_rays(intrinsics: np.ndarray, height: int, width: int) -> np.ndarray:
    """(N, H*W, 2) float32: (x/z, y/z) of each pixel centre's ray in OpenCV camera coordinates."""
    v, u = np.meshgrid(np.arange(height, dtype=np.float32) + 0.5, np.arange(width, dtype=np.float32) + 0.5, indexing="ij")
    k = intrinsics.astype(np.float32)
    x = (u.reshape(1, -1) - k[:, 0, 2:3]) / k[:, 0, 0:1]
    y = (v.reshape(1, -1) - k[:, 1, 2:3]) / k[:, 1, 1:2]
    return np.stack((x, y), -1)


def lift(depth_um: np.ndarray, rays: np.ndarray, extrinsics: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """depth_um: (N, H, W) int32 depth in micrometres (0 = nothing); rays from `pixel_rays`;
    extrinsics (N, 3, 4) env -> OpenCV camera. Returns xyz (N, H*W, 3) float32 in the env
    frame (m) and valid (N, H*W) bool."""
    n = depth_um.shape[0]
    d = depth_um.reshape(n, -1, 1).astype(np.float32) * np.float32(1e-6)  # (N, HW, 1) m
    cam = np.concatenate((rays * d, d), -1)  # (N, HW, 3) OpenCV camera frame
    r, t = extrinsics[:, :, :3].astype(np.float32), extrinsics[:, :, 3].astype(np.float32)
    xyz = (cam - t[:, None]) @ r  # R^T (p - t), row-vector form
    return xyz, d[..., 0] > 0


def sample(valid: np.ndarray, points: int, rng: np.random.Generator) -> np.ndarray:
    """(N, P) indices of P candidates per env (see the module docstring for the rule)."""
    n, m = valid.shape
    score = rng.random((n, m), dtype=np.float32)
    score[~valid] = -1.0  # candidates rank first, in random order
    keep = min(points, m)
    top = np.argpartition(score, m - keep, axis=1)[:, m - keep :]  # (N, keep) the best scores
    order = np.take_along_axis(top, np.argsort(-np.take_along_axis(score, top, 1), axis=1), 1)  # candidates first
    count = np.clip(valid.sum(1, keepdims=True), 1, keep)  # (N, 1)
    j = np.broadcast_to(np.arange(points), (n, points))
    return np.take_along_axis(order, np.where(j < count, j, j % count), 1)

"""Fused, fixed-size point clouds from every camera of an env.

Every pixel of every observation camera that hits a surface (non-zero depth, inside the
camera's near/far range) is a candidate point, lifted to the env frame. Each env keeps exactly
P of its candidates, drawn uniformly at random without replacement; an env with fewer than P
candidates repeats its candidates (in random order) to fill P. The draw uses a torch generator
that `reset(seed=...)` reseeds, so seeded runs give the same clouds.
"""

from __future__ import annotations

import torch


def lift(depth_um: torch.Tensor, intrinsics: torch.Tensor, extrinsics: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """depth_um: (N, H, W) int32 depth in micrometres (0 = nothing); intrinsics (N, 3, 3) and
    extrinsics (N, 3, 4) as in the observation. Returns xyz (N, H*W, 3) float32 in the env
    frame (m), each pixel unprojected through its centre, and valid (N, H*W) bool."""
    n, h, w = depth_um.shape
    d = depth_um.reshape(n, -1).double() / 1e6  # (N, HW) m
    v, u = torch.meshgrid(torch.arange(h, dtype=torch.float64) + 0.5, torch.arange(w, dtype=torch.float64) + 0.5, indexing="ij")
    k = intrinsics.double()
    x = (u.reshape(1, -1) - k[:, 0, 2:3]) / k[:, 0, 0:1] * d  # (N, HW)
    y = (v.reshape(1, -1) - k[:, 1, 2:3]) / k[:, 1, 1:2] * d
    cam = torch.stack((x, y, d), -1)  # (N, HW, 3) OpenCV camera frame
    r, t = extrinsics[:, :, :3].double(), extrinsics[:, :, 3].double()
    xyz = (cam - t[:, None]) @ r  # R^T (p - t), row-vector form
    return xyz.float(), d > 0


def sample(valid: torch.Tensor, points: int, generator: torch.Generator) -> torch.Tensor:
    """(N, P) indices of P candidates per env (see the module docstring for the rule)."""
    n, m = valid.shape
    score = torch.rand(n, m, generator=generator)
    score[~valid] = -1.0  # candidates sort first, in random order
    order = score.topk(min(points, m), dim=1).indices  # (N, min(P, M)), sorted: candidates first
    count = valid.sum(1, keepdim=True).clamp(1, order.shape[1])  # (N, 1)
    j = torch.arange(points).expand(n, points)
    return order.gather(1, torch.where(j < count, j, j % count))

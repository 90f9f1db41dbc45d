"""Fused, fixed-size point clouds from every camera of an env.

Every pixel of every observation camera that hits a surface (non-zero depth, inside the
camera's near/far range) is a candidate point, lifted to the env frame. Each env keeps exactly
P of its candidates, drawn uniformly at random without replacement; an env with fewer than P
candidates repeats its candidates (in random order) to fill P. The draw uses a torch generator
that `reset(seed=...)` reseeds, so seeded runs give the same clouds.
"""

from __future__ import annotations

import torch


def lift(position: torch.Tensor, cam_to_env: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """position: (N, H, W, 4) int32 camera-space mm (OpenGL axes) + id; cam_to_env: (N, 4, 4).
    Returns xyz (N, H*W, 3) float32 in the env frame (m) and valid (N, H*W) bool."""
    n = position.shape[0]
    cam = position[..., :3].reshape(n, -1, 3).float() / 1000.0  # (N, HW, 3)
    valid = position[..., 2].reshape(n, -1) < 0  # OpenGL cameras look along -z
    xyz = cam @ cam_to_env[:, :3, :3].transpose(1, 2) + cam_to_env[:, None, :3, 3]
    return xyz, valid


def sample(valid: torch.Tensor, points: int, generator: torch.Generator) -> torch.Tensor:
    """(N, P) indices of P candidates per env (see the module docstring for the rule)."""
    n, m = valid.shape
    score = torch.rand(n, m, generator=generator)
    score[~valid] = -1.0  # candidates sort first, in random order
    order = score.topk(min(points, m), dim=1).indices  # (N, min(P, M)), sorted: candidates first
    count = valid.sum(1, keepdim=True).clamp(1, order.shape[1])  # (N, 1)
    j = torch.arange(points).expand(n, points)
    return order.gather(1, torch.where(j < count, j, j % count))

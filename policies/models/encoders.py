"""Observation encoders: per-step features from the normalised state and, in image modes, a
small CNN per camera ending in a spatial soft-argmax (image keypoints, Levine et al. 2016)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def random_shift(x: torch.Tensor, pad: int) -> torch.Tensor:
    """Shift each image (B, C, H, W) by up to `pad` pixels, edges replicated."""
    b, c, h, w = x.shape
    x = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    dy = torch.randint(0, 2 * pad + 1, (b, 1), device=x.device)
    dx = torch.randint(0, 2 * pad + 1, (b, 1), device=x.device)
    rows = (dy + torch.arange(h, device=x.device))[:, None, :, None].expand(b, c, h, w + 2 * pad)
    x = x.gather(2, rows)
    cols = (dx + torch.arange(w, device=x.device))[:, None, None, :].expand(b, c, h, w)
    return x.gather(3, cols)


class SpatialSoftArgmax(nn.Module):
    """(B, C, H, W) -> (B, 2C): the expected image coordinates in [-1, 1] of each channel."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        p = torch.softmax(x.float().reshape(b, c, h * w), -1).reshape(b, c, h, w)
        ys = torch.linspace(-1, 1, h, device=x.device)
        xs = torch.linspace(-1, 1, w, device=x.device)
        return torch.cat(((p.sum(3) * ys).sum(2), (p.sum(2) * xs).sum(2)), 1).to(x.dtype)


def _conv(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), nn.GroupNorm(8, cout), nn.ReLU(inplace=True))


class ImageEncoder(nn.Module):
    def __init__(self, channels: int, features: int, keypoints: int = 64):
        super().__init__()
        self.net = nn.Sequential(
            _conv(channels, 32, 2), _conv(32, 32, 1), _conv(32, 64, 2), _conv(64, 64, 1), _conv(64, 128, 2),
            nn.Conv2d(128, keypoints, 1), SpatialSoftArgmax(),
        )
        self.head = nn.Sequential(nn.Linear(2 * keypoints, features), nn.LayerNorm(features), nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x))


class ObsEncoder(nn.Module):
    """Normalised state (B, To, D) and raw images (B, To, K, C, H, W) -> features (B, To, F)."""

    def __init__(self, state_dim: int, cameras: int = 0, channels: int = 3, image_features: int = 256,
                 shift: int = 0, depth_scale_mm: float = 2000.0):
        super().__init__()
        self.cams = nn.ModuleList(ImageEncoder(channels, image_features) for _ in range(cameras))
        self.shift, self.depth_scale = shift, depth_scale_mm
        self.out_dim = state_dim + cameras * image_features

    def _image_input(self, images: torch.Tensor) -> torch.Tensor:
        x = images.float()
        rgb = x[:, :3] / 127.5 - 1.0
        if x.shape[1] == 3:
            return rgb
        depth = (x[:, 3:] / self.depth_scale).clamp(0, 1) * 2 - 1
        return torch.cat((rgb, depth), 1)

    def forward(self, state: torch.Tensor, images: torch.Tensor | None = None) -> torch.Tensor:
        if not self.cams:
            return state
        b, t, k = images.shape[:3]
        feats = [state]
        for i, enc in enumerate(self.cams):
            x = self._image_input(images[:, :, i].flatten(0, 1))  # (B * To, C, H, W)
            if self.training and self.shift:
                x = random_shift(x, self.shift)
            feats.append(enc(x).reshape(b, t, -1))
        return torch.cat(feats, -1)

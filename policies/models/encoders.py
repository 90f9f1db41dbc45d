"""Observation encoders: per-step features from the normalised state and, in image modes, a
CNN per camera (a small one, or ResNet-18 with GroupNorm) ending in a spatial soft-argmax (image
keypoints, Levine et al. 2016). Augmentation in training: random shift and random crop (the
centre crop when acting)."""

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


def crop(x: torch.Tensor, share: float, random: bool) -> torch.Tensor:
    """Cut `share` of each side of images (B, C, H, W) away: one random window per image, or the centre."""
    b, c, h, w = x.shape
    ch, cw = h - round(h * share), w - round(w * share)
    if not random:
        top, left = (h - ch) // 2, (w - cw) // 2
        return x[:, :, top : top + ch, left : left + cw]
    dy = torch.randint(0, h - ch + 1, (b, 1), device=x.device)
    dx = torch.randint(0, w - cw + 1, (b, 1), device=x.device)
    rows = (dy + torch.arange(ch, device=x.device))[:, None, :, None].expand(b, c, ch, w)
    x = x.gather(2, rows)
    cols = (dx + torch.arange(cw, device=x.device))[:, None, None, :].expand(b, c, ch, cw)
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


class BasicBlock(nn.Module):
    """ResNet's basic block (He et al. 2016), GroupNorm in place of BatchNorm (as Diffusion Policy:
    batch statistics and EMA weights do not mix)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.GroupNorm(cout // 16, cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.GroupNorm(cout // 16, cout),
        )
        self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(cout // 16, cout))
                     if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.skip(x))


def resnet18(channels: int) -> tuple[nn.Sequential, int]:
    """ResNet-18's convolutional trunk (stem, four stages of two blocks), its output channels."""
    layers: list[nn.Module] = [nn.Conv2d(channels, 64, 7, 2, 3, bias=False), nn.GroupNorm(4, 64), nn.ReLU(inplace=True),
                               nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    return nn.Sequential(*layers), cin


def small_cnn(channels: int) -> tuple[nn.Sequential, int]:
    return nn.Sequential(_conv(channels, 32, 2), _conv(32, 32, 1), _conv(32, 64, 2), _conv(64, 64, 1), _conv(64, 128, 2)), 128


TRUNKS = {"cnn": small_cnn, "resnet18": resnet18}  # policy.image_encoder


class ImageEncoder(nn.Module):
    def __init__(self, channels: int, features: int, keypoints: int = 64, trunk: str = "cnn"):
        super().__init__()
        body, width = TRUNKS[trunk](channels)
        self.net = nn.Sequential(*body, nn.Conv2d(width, keypoints, 1), SpatialSoftArgmax())  # cnn: the keys of earlier checkpoints
        self.head = nn.Sequential(nn.Linear(2 * keypoints, features), nn.LayerNorm(features), nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x))


class ObsEncoder(nn.Module):
    """Normalised state (B, To, D) and raw images (B, To, K, C, H, W) -> features (B, To, F)."""

    def __init__(self, state_dim: int, cameras: int = 0, channels: int = 3, image_features: int = 256,
                 shift: int = 0, depth_scale_mm: float = 2000.0, trunk: str = "cnn", keypoints: int = 64,
                 crop_share: float = 0.0):
        super().__init__()
        self.cams = nn.ModuleList(ImageEncoder(channels, image_features, keypoints, trunk) for _ in range(cameras))
        self.shift, self.depth_scale, self.crop_share = shift, depth_scale_mm, crop_share
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
            if self.crop_share:
                x = crop(x, self.crop_share, random=self.training)
            if self.training and self.shift:
                x = random_shift(x, self.shift)
            feats.append(enc(x).reshape(b, t, -1))
        return torch.cat(feats, -1)

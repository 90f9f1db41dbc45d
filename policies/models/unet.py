"""A 1-D conditional UNet over action sequences (Janner et al. 2022; Chi et al. 2023): residual
blocks of Conv1d-GroupNorm-Mish whose features are scaled and shifted (FiLM) by a conditioning
vector made of the diffusion-step embedding and the observation features."""

from __future__ import annotations

import math

import torch
from torch import nn


class StepEmbedding(nn.Module):
    """Sinusoidal embedding of the diffusion step, then an MLP."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.Mish(), nn.Linear(4 * dim, dim))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        freqs = torch.exp(-math.log(10_000) * torch.arange(half, device=t.device) / max(half - 1, 1))
        angles = t.float()[:, None] * freqs[None]
        return self.mlp(torch.cat((angles.sin(), angles.cos()), -1))


def _conv_block(cin: int, cout: int, kernel: int, groups: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv1d(cin, cout, kernel, padding=kernel // 2), nn.GroupNorm(groups, cout), nn.Mish())


class FiLMResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, cond_dim: int, kernel: int, groups: int):
        super().__init__()
        self.conv1 = _conv_block(cin, cout, kernel, groups)
        self.conv2 = _conv_block(cout, cout, kernel, groups)
        self.film = nn.Sequential(nn.Mish(), nn.Linear(cond_dim, 2 * cout))
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        h = self.conv1(x)  # (B, C, T)
        scale, shift = self.film(cond)[..., None].chunk(2, 1)
        h = self.conv2(h * (1 + scale) + shift)
        return h + self.skip(x)


class ConditionalUNet1D(nn.Module):
    """x (B, T, A) noisy actions, t (B,) steps, cond (B, Dc) -> (B, T, A) predicted noise.
    T must be divisible by 2 ** (len(dims) - 1)."""

    def __init__(self, action_dim: int, cond_dim: int, dims: tuple[int, ...], kernel: int = 5, groups: int = 8,
                 step_embed: int = 128):
        super().__init__()
        self.step = StepEmbedding(step_embed)
        c = cond_dim + step_embed
        chans = (action_dim, *dims)
        self.down = nn.ModuleList()
        for i, (cin, cout) in enumerate(zip(chans[:-1], chans[1:])):
            last = i == len(dims) - 1
            self.down.append(nn.ModuleList([
                FiLMResBlock(cin, cout, c, kernel, groups), FiLMResBlock(cout, cout, c, kernel, groups),
                nn.Conv1d(cout, cout, 3, 2, 1) if not last else nn.Identity(),
            ]))
        self.mid = nn.ModuleList([FiLMResBlock(dims[-1], dims[-1], c, kernel, groups) for _ in range(2)])
        self.up = nn.ModuleList()
        for cout, cin in reversed(list(zip(dims[:-1], dims[1:]))):  # (d1 <- d2), (d0 <- d1), ...
            self.up.append(nn.ModuleList([
                FiLMResBlock(2 * cin, cout, c, kernel, groups), FiLMResBlock(cout, cout, c, kernel, groups),
                nn.ConvTranspose1d(cout, cout, 4, 2, 1),
            ]))
        self.out = nn.Sequential(_conv_block(dims[0], dims[0], kernel, groups), nn.Conv1d(dims[0], action_dim, 1))

    def forward(self, x: torch.Tensor, t: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        c = torch.cat((self.step(t), cond), -1)
        h = x.transpose(1, 2)  # (B, A, T)
        skips = []
        for res1, res2, down in self.down:
            h = res2(res1(h, c), c)
            skips.append(h)
            h = down(h)
        for res in self.mid:
            h = res(h, c)
        for res1, res2, up in self.up:  # the top level's skip stays unused: its resolution is the output's
            h = res2(res1(torch.cat((h, skips.pop()), 1), c), c)
            h = up(h)
        return self.out(h).transpose(1, 2)

"""Diffusion noise schedule: DDPM forward noising for training (Ho et al. 2020) and
deterministic DDIM sampling with few steps (Song et al. 2021); the network predicts the noise."""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn


def betas(kind: str, steps: int) -> torch.Tensor:
    if kind == "linear":
        return torch.linspace(1e-4, 0.02, steps, dtype=torch.float64)
    s = 0.008  # cosine schedule (Nichol & Dhariwal 2021)
    x = torch.linspace(0, steps, steps + 1, dtype=torch.float64)
    ab = torch.cos((x / steps + s) / (1 + s) * math.pi / 2) ** 2
    return (1 - ab[1:] / ab[:-1]).clamp(max=0.999)


class NoiseSchedule(nn.Module):
    def __init__(self, steps: int, kind: str = "cosine"):
        super().__init__()
        self.steps = steps
        self.register_buffer("alpha_bar", torch.cumprod(1 - betas(kind, steps), 0).float(), persistent=False)

    def add_noise(self, x0: torch.Tensor, noise: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        ab = self.alpha_bar[t].view(-1, *([1] * (x0.dim() - 1)))
        return ab.sqrt() * x0 + (1 - ab).sqrt() * noise

    @torch.no_grad()
    def ddim_sample(self, predict_noise: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], shape: tuple[int, ...],
                    steps: int, device: torch.device, generator: torch.Generator | None = None) -> torch.Tensor:
        """x_T ~ N(0, I) denoised in `steps` DDIM steps (eta = 0); x0 estimates clipped to [-1, 1]."""
        x = torch.randn(shape, device=device, generator=generator)
        ts = torch.linspace(self.steps - 1, 0, steps, device=device).round().long()
        for i, t in enumerate(ts):
            ab = self.alpha_bar[t]
            ab_prev = self.alpha_bar[ts[i + 1]] if i + 1 < len(ts) else torch.ones((), device=device)
            eps = predict_noise(x, t.expand(shape[0])).float()
            x0 = ((x - (1 - ab).sqrt() * eps) / ab.sqrt()).clamp(-1, 1)
            eps = (x - ab.sqrt() * x0) / (1 - ab).sqrt()
            x = ab_prev.sqrt() * x0 + (1 - ab_prev).sqrt() * eps
        return x

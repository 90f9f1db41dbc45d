"""Policy kind `diffusion`: its config, its policy (Diffusion Policy) and its run."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field

import torch
from torch import nn

from policies.config import PolicyConfig, RunConfig, check, positive
from policies.data import ObsSpec
from policies.kinds.kind import Kind
from policies.models.schedule import NoiseSchedule
from policies.models.unet import ConditionalUNet1D
from policies.policy import Policy


@dataclass
class DiffusionConfig(PolicyConfig):
    unet_dims: tuple[int, ...] = (128, 256, 512)
    """channels of the 1-D UNet's levels (each after the first halves the sequence length)"""
    kernel_size: int = 5
    """1-D convolution kernel size"""
    groups: int = 8
    """GroupNorm groups"""
    step_embed: int = 128
    """diffusion-step embedding size"""
    train_steps: int = 100
    """DDPM noise steps in training"""
    inference_steps: int = 10
    """DDIM denoising steps when acting"""
    beta_schedule: str = "cosine"
    """noise schedule: cosine or linear"""
    ema_decay: float = 0.999
    """EMA decay of the weights used for evaluation (0: no EMA)"""

    def __post_init__(self) -> None:
        super().__post_init__()
        positive(self, "kernel_size", "groups", "step_embed", "train_steps", "inference_steps")
        check(len(self.unet_dims) > 0 and min(self.unet_dims) > 0, f"policy.unet_dims must be positive, got {self.unet_dims}")
        bad = [d for d in self.unet_dims if d % self.groups]
        check(not bad, f"policy.unet_dims must be multiples of policy.groups ({self.groups}): {bad}")
        check(self.inference_steps <= self.train_steps, "policy.inference_steps must be <= policy.train_steps")
        check(self.beta_schedule in ("cosine", "linear"), f"policy.beta_schedule {self.beta_schedule!r}; allowed: cosine, linear")
        check(0.0 <= self.ema_decay < 1.0, f"policy.ema_decay must be in [0, 1), got {self.ema_decay}")
        levels = 2 ** (len(self.unet_dims) - 1)
        check(self.pred_horizon % levels == 0, f"policy.pred_horizon ({self.pred_horizon}) must be a multiple of {levels} for {len(self.unet_dims)} UNet levels")
        check(self.kernel_size % 2 == 1, f"policy.kernel_size must be odd, got {self.kernel_size}")


class DiffusionPolicy(Policy):
    """Diffusion Policy (Chi et al. 2023), CNN variant: a 1-D UNet denoises the action chunk,
    conditioned through FiLM on the observation features; DDPM training, DDIM sampling."""

    def __init__(self, spec: ObsSpec, cfg: DiffusionConfig):
        super().__init__(spec, cfg)
        self.unet = ConditionalUNet1D(spec.action_dim, self.cond_dim, cfg.unet_dims, cfg.kernel_size, cfg.groups, cfg.step_embed)
        self.schedule = NoiseSchedule(cfg.train_steps, cfg.beta_schedule)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        x0 = self.normaliser.normalise_action(batch["actions"])  # (B, Tp, A)
        feats = self.features(batch)
        noise = torch.randn_like(x0)
        t = torch.randint(0, self.schedule.steps, (x0.shape[0],), device=x0.device)
        pred = self.unet(self.schedule.add_noise(x0, noise, t), t, feats.flatten(1))
        return nn.functional.mse_loss(pred.float(), noise) + self.aux_loss(feats, batch)

    def predict_chunk(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        cond = self.features(obs).flatten(1)
        shape = (cond.shape[0], self.cfg.pred_horizon, self.spec.action_dim)
        x = self.schedule.ddim_sample(lambda x, t: self.unet(x, t, cond), shape, self.cfg.inference_steps, cond.device,
                                      self.generator)
        return self.normaliser.unnormalise_action(x)


@dataclass
class DiffusionRun(RunConfig):
    policy: DiffusionConfig = field(default_factory=DiffusionConfig)
    kind: typing.ClassVar[str] = "diffusion"


KIND = Kind(DiffusionRun, DiffusionPolicy)

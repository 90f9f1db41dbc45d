"""Policy kind `act`: its config, its policy (ACT) and its run."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field

import torch
from torch import nn

from policies.config import PolicyConfig, RunConfig, check, positive
from policies.data import ObsSpec
from policies.kinds.kind import Kind
from policies.models.act import ACTNet
from policies.policy import Policy


@dataclass
class ACTConfig(PolicyConfig):
    # PolicyConfig's fields with ACT's defaults: the help is written there unless given here
    obs_horizon: int = 1
    pred_horizon: int = 30
    """actions predicted at once: ACT's chunk size k"""
    action_horizon: int = 1
    """steps between predictions; with temporal_ensemble every prediction's action for the current
    step is averaged, so 1 (a chunk every step) is ACT's own setting"""
    temporal_ensemble: bool = True
    """act with the weighted average of every chunk's action for the current step (ACT's temporal
    ensembling), weights exp(-ensemble_decay * i) with i = 0 the oldest chunk; off: execute
    action_horizon actions of each chunk as the other policies do"""
    ensemble_decay: float = 0.01
    """m of the ensembling weights exp(-m * i): larger trusts the older chunks more"""
    hidden: int = 512
    """transformer width"""
    heads: int = 8
    """attention heads"""
    feedforward: int = 1600
    """transformer feed-forward width"""
    enc_layers: int = 4
    """layers of the decoder's transformer encoder (over the latent, state and camera tokens)"""
    dec_layers: int = 7
    """layers of the transformer decoder (chunk queries)"""
    cvae_layers: int = 4
    """layers of the CVAE encoder (training only)"""
    latent_dim: int = 32
    """size of the CVAE's style latent z"""
    kl_weight: float = 10.0
    """weight of the KL term (the reconstruction term is L1 on normalised actions)"""
    dropout: float = 0.1
    """transformer dropout"""
    sample_latent: bool = False
    """acting: draw z from the prior N(0, I) (seeded by the evaluation seed) instead of its mean 0"""
    ema_decay: float = 0.999
    """EMA decay of the weights used for evaluation (0: no EMA)"""
    lr: float = 1e-4

    def __post_init__(self) -> None:
        super().__post_init__()
        positive(self, "hidden", "heads", "feedforward", "enc_layers", "dec_layers", "cvae_layers", "latent_dim")
        check(self.hidden % self.heads == 0, f"policy.hidden ({self.hidden}) must be a multiple of policy.heads ({self.heads})")
        check(self.ensemble_decay >= 0, f"policy.ensemble_decay must be >= 0, got {self.ensemble_decay}")
        check(self.kl_weight >= 0, f"policy.kl_weight must be >= 0, got {self.kl_weight}")
        check(0.0 <= self.dropout < 1.0, f"policy.dropout must be in [0, 1), got {self.dropout}")
        check(0.0 <= self.ema_decay < 1.0, f"policy.ema_decay must be in [0, 1), got {self.ema_decay}")


class ACTPolicy(Policy):
    """ACT (Zhao et al. 2023): action chunks from a CVAE with a transformer decoder
    (policies/models/act.py), L1 reconstruction plus policy.kl_weight times the KL to N(0, I);
    when acting, temporal ensembling of the overlapping chunks (policy.temporal_ensemble)."""

    cfg: ACTConfig

    def __init__(self, spec: ObsSpec, cfg: ACTConfig):
        super().__init__(spec, cfg)
        self.net = ACTNet(spec.state_dim, spec.action_dim, len(spec.cameras), cfg.image_features, cfg.obs_horizon,
                          cfg.pred_horizon, cfg.hidden, cfg.heads, cfg.feedforward, cfg.enc_layers, cfg.dec_layers,
                          cfg.cvae_layers, cfg.latent_dim, cfg.dropout)
        self._chunks: list[tuple[int, torch.Tensor]] = []  # (step it was predicted at, (N, L, A) actions from then)
        self._step = 0

    def _split(self, feats: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Features (B, To, D + K F) -> state (B, To, D), camera features (B, To, K, F) or None."""
        d, k = self.spec.state_dim, len(self.spec.cameras)
        cams = feats[..., d:].unflatten(-1, (k, self.cfg.image_features)) if k else None
        return feats[..., :d], cams

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        target = self.normaliser.normalise_action(batch["actions"])  # (B, Tp, A)
        feats = self.features(batch)
        pred, mu, logvar = self.net(*self._split(feats), actions=target)
        kl = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp())).sum(-1).mean()
        return nn.functional.l1_loss(pred.float(), target) + self.cfg.kl_weight * kl.float() + self.aux_loss(feats, batch)

    def predict_chunk(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        state, cams = self._split(self.features(obs))
        z = None
        if self.cfg.sample_latent:
            z = torch.randn(state.shape[0], self.cfg.latent_dim, device=state.device, generator=self.generator)
        return self.normaliser.unnormalise_action(self.net(state, cams, z=z)[0].float())

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self._chunks, self._step = [], 0

    @torch.no_grad()
    def predict_action(self, obs) -> torch.Tensor:
        if not self.cfg.temporal_ensemble:
            return super().predict_action(obs)
        stacked = self.observe(obs)
        if self._step % self.cfg.action_horizon == 0:
            start = self.cfg.obs_horizon - 1  # the chunk starts at the oldest observation
            self._chunks.append((self._step, self.predict_chunk(stacked)[:, start:]))
        self._chunks = [(s, c) for s, c in self._chunks if self._step - s < c.shape[1]]
        action = ensemble([c[:, self._step - s] for s, c in self._chunks], self.cfg.ensemble_decay)
        self._step += 1
        return action


def ensemble(actions: list[torch.Tensor], decay: float) -> torch.Tensor:
    """ACT's temporal ensembling: the (N, A) actions that chunks predicted for one step, oldest
    first, averaged with weights exp(-decay * i)."""
    w = torch.exp(-decay * torch.arange(len(actions), dtype=torch.float32, device=actions[0].device))
    return (torch.stack(actions, 0) * (w / w.sum())[:, None, None]).sum(0)


@dataclass
class ACTRun(RunConfig):
    policy: ACTConfig = field(default_factory=ACTConfig)
    kind: typing.ClassVar[str] = "act"


KIND = Kind(ACTRun, ACTPolicy)

"""Policy kind `bc`: its config, its policy (behaviour cloning) and its run."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field

import torch
from torch import nn

from policies.config import PolicyConfig, RunConfig, check
from policies.data import ObsSpec
from policies.kinds.kind import Kind
from policies.policy import Policy


@dataclass
class BCConfig(PolicyConfig):
    # PolicyConfig's fields with BC's defaults (their help is written there)
    obs_horizon: int = 1
    pred_horizon: int = 1
    action_horizon: int = 1
    hidden: tuple[int, ...] = (512, 512, 512)
    """MLP hidden layer widths"""
    dropout: float = 0.0
    """dropout after each hidden layer"""

    def __post_init__(self) -> None:
        super().__post_init__()
        check(len(self.hidden) > 0 and min(self.hidden) > 0, f"policy.hidden must be positive widths, got {self.hidden}")
        check(0.0 <= self.dropout < 1.0, f"policy.dropout must be in [0, 1), got {self.dropout}")


class BCPolicy(Policy):
    """Behaviour cloning: an MLP from observation features to the action chunk, MSE loss."""

    def __init__(self, spec: ObsSpec, cfg: BCConfig):
        super().__init__(spec, cfg)
        layers, width = [], self.cond_dim
        for h in cfg.hidden:
            layers += [nn.Linear(width, h), nn.ReLU(inplace=True)] + ([nn.Dropout(cfg.dropout)] if cfg.dropout else [])
            width = h
        self.mlp = nn.Sequential(*layers, nn.Linear(width, cfg.pred_horizon * spec.action_dim))

    def _forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.mlp(features.flatten(1)).view(-1, self.cfg.pred_horizon, self.spec.action_dim)

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        target = self.normaliser.normalise_action(batch["actions"])
        feats = self.features(batch)
        return nn.functional.mse_loss(self._forward(feats).float(), target) + self.aux_loss(feats, batch)

    def predict_chunk(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.normaliser.unnormalise_action(self._forward(self.features(obs)).float())


@dataclass
class BCRun(RunConfig):
    policy: BCConfig = field(default_factory=BCConfig)
    kind: typing.ClassVar[str] = "bc"


KIND = Kind(BCRun, BCPolicy)

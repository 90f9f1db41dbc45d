"""Normalisation carried by every policy: actions to [-1, 1] by their min/max, state (and the
auxiliary targets, where a policy has them) to zero mean and unit variance. Stats are buffers, so they travel with the weights in a checkpoint and move
with the policy to its device."""

from __future__ import annotations

import torch
from torch import nn

MIN_RANGE = 1e-4  # a dimension that (almost) never changes keeps scale 1
MIN_STD = 1e-3


class Normaliser(nn.Module):
    def __init__(self, action_dim: int, state_dim: int, aux_dim: int = 0):
        super().__init__()
        self.register_buffer("action_low", -torch.ones(action_dim))
        self.register_buffer("action_high", torch.ones(action_dim))
        self.register_buffer("state_mean", torch.zeros(state_dim))
        self.register_buffer("state_std", torch.ones(state_dim))
        if aux_dim:  # only then: checkpoints of policies without auxiliary targets keep their keys
            self.register_buffer("aux_mean", torch.zeros(aux_dim))
            self.register_buffer("aux_std", torch.ones(aux_dim))

    @torch.no_grad()
    def fit(self, actions: torch.Tensor, states: torch.Tensor, aux: torch.Tensor | None = None) -> "Normaliser":
        """actions: (M, A), states and aux: (M', D) from the training split only."""
        actions, states = actions.double(), states.double()
        self.action_low.copy_(actions.min(0).values)
        self.action_high.copy_(actions.max(0).values)
        if states.shape[1]:
            self.state_mean.copy_(states.mean(0))
            self.state_std.copy_(states.std(0, unbiased=False))
        if aux is not None:
            self.aux_mean.copy_(aux.double().mean(0))
            self.aux_std.copy_(aux.double().std(0, unbiased=False))
        return self

    def _action_scale(self) -> tuple[torch.Tensor, torch.Tensor]:
        span = self.action_high - self.action_low
        centre = (self.action_high + self.action_low) / 2
        half = torch.where(span > MIN_RANGE, span / 2, torch.ones_like(span))
        return centre, half

    def _state_std(self) -> torch.Tensor:
        return torch.where(self.state_std > MIN_STD, self.state_std, torch.ones_like(self.state_std))

    def normalise_aux(self, a: torch.Tensor) -> torch.Tensor:
        return (a - self.aux_mean) / torch.where(self.aux_std > MIN_STD, self.aux_std, torch.ones_like(self.aux_std))

    def normalise_action(self, a: torch.Tensor) -> torch.Tensor:
        centre, half = self._action_scale()
        return (a - centre) / half

    def unnormalise_action(self, a: torch.Tensor) -> torch.Tensor:
        centre, half = self._action_scale()
        return a * half + centre

    def normalise_state(self, s: torch.Tensor) -> torch.Tensor:
        return (s - self.state_mean) / self._state_std()

    def unnormalise_state(self, s: torch.Tensor) -> torch.Tensor:
        return s * self._state_std() + self.state_mean

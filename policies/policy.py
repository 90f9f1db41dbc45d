"""Policies behind one small interface:

    policy.reset(seed)                  # new episodes in every env: forget history and queued actions;
                                        # the seed (the batch's first episode seed) seeds sampling noise
    action = policy.predict_action(obs) # env observation batch -> (N, A) actions, unnormalised

Each policy carries its `Normaliser` and its `ObsSpec`, keeps the last `obs_horizon` observations,
predicts `pred_horizon` actions at once and executes `action_horizon` of them before predicting
again. Training calls `loss(batch)` with a raw (unnormalised) batch from `policies.data.gather`;
it does not modify the batch. Where the data names auxiliary targets (`dataset.aux_keys`, e.g.
the cube's offset from the gripper), a linear head learns them from the current step's image
features and its loss is added (`policy.aux_weight`): the camera encoders are taught where the
object is; acting never uses the head.

Sampling noise when acting (diffusion's initial noise, ACT's sampled latent) comes from the
policy's own generator, seeded by `reset(seed)`: re-evaluating a checkpoint on the same seeds
gives the same actions, whatever else drew from torch's global generator.
"""

from __future__ import annotations

import abc

import torch
from torch import nn

from policies.config import PolicyConfig
from policies.data import ObsSpec, extract
from policies.models.encoders import ObsEncoder
from policies.normaliser import Normaliser


class Policy(nn.Module, abc.ABC):
    def __init__(self, spec: ObsSpec, cfg: PolicyConfig):
        super().__init__()
        self.spec, self.cfg = spec, cfg
        self.normaliser = Normaliser(spec.action_dim, spec.state_dim, spec.aux_dim)
        c, _, _ = spec.image_shape
        self.encoder = ObsEncoder(spec.state_dim, len(spec.cameras), c, cfg.image_features, cfg.image_shift, spec.depth_scale_mm,
                                  cfg.image_encoder, cfg.image_keypoints, cfg.image_crop)
        self.aux_head = nn.Linear(len(spec.cameras) * cfg.image_features, spec.aux_dim) if spec.aux_dim else None
        self.cond_dim = cfg.obs_horizon * self.encoder.out_dim
        self._history: list[dict[str, torch.Tensor]] = []
        self._queue: torch.Tensor | None = None  # (N, k, A) actions still to execute
        self._generator: torch.Generator | None = None  # sampling noise when acting, seeded by reset()

    @property
    def device(self) -> torch.device:
        return self.normaliser.action_low.device

    def features(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, To, F) observation features from a raw batch's state (B, To, D) and images."""
        state = self.normaliser.normalise_state(batch["state"])
        if self.training and self.cfg.state_noise:
            state = state + self.cfg.state_noise * torch.randn_like(state)
        return self.encoder(state, batch.get("images"))

    def aux_loss(self, features: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor | float:
        """The auxiliary targets' MSE from the current step's image features (0 without targets)."""
        if self.aux_head is None or "aux" not in batch:
            return 0.0
        pred = self.aux_head(features[:, -1, self.spec.state_dim :])
        return self.cfg.aux_weight * nn.functional.mse_loss(pred.float(), self.normaliser.normalise_aux(batch["aux"]))

    @abc.abstractmethod
    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Training loss of a raw batch: state (B, To, D), [images], actions (B, Tp, A)."""

    @abc.abstractmethod
    def predict_chunk(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, Tp, A) unnormalised actions for observation histories state (B, To, D), [images]."""

    def reset(self, seed: int | None = None) -> None:
        """Forget history and queued actions; `seed` seeds the sampling noise (None: a seed drawn
        from torch's global generator)."""
        self._history, self._queue = [], None
        self._generator = self._new_generator(seed)

    def _new_generator(self, seed: int | None) -> torch.Generator:
        seed = int(torch.randint(2**62, ()).item()) if seed is None else seed
        return torch.Generator(self.device).manual_seed(seed)

    @property
    def generator(self) -> torch.Generator:
        """The acting noise's generator: seeded by reset(seed), on the policy's device."""
        if self._generator is None or self._generator.device != self.device:
            self._generator = self._new_generator(None)
        return self._generator

    def observe(self, obs) -> dict[str, torch.Tensor]:
        """Add an env observation batch to the history; the history stacked: state (N, To, D), [images]."""
        x = {k: v.to(self.device) for k, v in extract(obs, self.spec).items()}
        self._history = (self._history or [x] * self.cfg.obs_horizon)[1:] + [x]
        return {k: torch.stack([h[k] for h in self._history], 1) for k in x}

    @torch.no_grad()
    def predict_action(self, obs) -> torch.Tensor:
        stacked = self.observe(obs)
        if self._queue is None or self._queue.shape[1] == 0:
            start = self.cfg.obs_horizon - 1  # the chunk starts at the oldest observation
            self._queue = self.predict_chunk(stacked)[:, start : start + self.cfg.action_horizon]
        action, self._queue = self._queue[:, 0], self._queue[:, 1:]
        return action

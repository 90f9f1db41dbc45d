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

from policies.config import ACTConfig, BCConfig, DiffusionConfig, PolicyConfig
from policies.data import ObsSpec, extract
from policies.models.act import ACTNet
from policies.models.encoders import ObsEncoder
from policies.models.schedule import NoiseSchedule
from policies.models.unet import ConditionalUNet1D
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


POLICIES: dict[type[PolicyConfig], type[Policy]] = {BCConfig: BCPolicy, DiffusionConfig: DiffusionPolicy, ACTConfig: ACTPolicy}


def build_policy(spec: ObsSpec, cfg: PolicyConfig) -> Policy:
    if type(cfg) not in POLICIES:
        raise ValueError(f"no policy for {type(cfg).__name__}; known: {', '.join(c.__name__ for c in POLICIES)}")
    return POLICIES[type(cfg)](spec, cfg)

"""ACT's network (Zhao et al. 2023, "Learning Fine-Grained Bimanual Manipulation with Low-Cost
Hardware"): a conditional VAE whose decoder is a transformer.

- The CVAE encoder (training only) reads a CLS token, the current state and the target action
  chunk, and gives the posterior of a style latent z: mean and log-variance from the CLS output.
- The decoder's transformer encoder reads z, then per observation step a state token and one
  token per camera; its transformer decoder turns `chunk` learned queries, attending to those
  tokens, into the chunk of actions.

Acting uses z = 0 (the prior's mean) unless a sampled latent is asked for.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoid(positions: int, dim: int) -> torch.Tensor:
    """(positions, dim) fixed sinusoidal position table."""
    pos = torch.arange(positions, dtype=torch.float32)[:, None]
    freqs = torch.exp(-math.log(10_000.0) * torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    table = torch.zeros(positions, dim)
    table[:, 0::2] = torch.sin(pos * freqs)
    table[:, 1::2] = torch.cos(pos * freqs)[:, : dim // 2]
    return table


class ACTNet(nn.Module):
    """state (B, To, D) normalised, camera features (B, To, K, F), actions (B, Tp, A) normalised
    (training) -> predicted actions (B, Tp, A), posterior mean and log-variance (B, Z)."""

    def __init__(self, state_dim: int, action_dim: int, cameras: int, camera_dim: int, obs_horizon: int, chunk: int,
                 hidden: int, heads: int, feedforward: int, enc_layers: int, dec_layers: int, cvae_layers: int,
                 latent_dim: int, dropout: float):
        super().__init__()
        self.latent_dim, self.chunk = latent_dim, chunk

        def encoder(layers: int) -> nn.TransformerEncoder:
            layer = nn.TransformerEncoderLayer(hidden, heads, feedforward, dropout, batch_first=True, norm_first=True)
            return nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

        # CVAE encoder: [CLS, state, a_1 .. a_Tp]
        self.cls = nn.Parameter(torch.zeros(1, 1, hidden))
        self.cvae_state = nn.Linear(state_dim, hidden) if state_dim else None
        self.cvae_action = nn.Linear(action_dim, hidden)
        self.cvae = encoder(cvae_layers)
        self.posterior = nn.Linear(hidden, 2 * latent_dim)
        self.register_buffer("cvae_pos", sinusoid(2 + chunk, hidden)[None], persistent=False)
        # decoder: tokens [z, (state, cam_1 .. cam_K) per observation step] -> chunk queries
        self.latent_in = nn.Linear(latent_dim, hidden)
        self.state_in = nn.Linear(state_dim, hidden) if state_dim else None
        self.camera_in = nn.ModuleList(nn.Linear(camera_dim, hidden) for _ in range(cameras))
        per_step = (1 if state_dim else 0) + cameras
        self.token_pos = nn.Parameter(0.02 * torch.randn(1, 1 + obs_horizon * per_step, hidden))
        self.encoder = encoder(enc_layers)
        layer = nn.TransformerDecoderLayer(hidden, heads, feedforward, dropout, batch_first=True, norm_first=True)
        self.decoder = nn.TransformerDecoder(layer, dec_layers)
        self.queries = nn.Parameter(0.02 * torch.randn(1, chunk, hidden))
        self.head = nn.Linear(hidden, action_dim)

    def encode(self, state: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior (mean, log-variance) (B, Z) from the current state (B, D) and the chunk (B, Tp, A)."""
        b = actions.shape[0]
        tokens = [self.cls.expand(b, -1, -1)]
        if self.cvae_state is not None:
            tokens.append(self.cvae_state(state)[:, None])
        tokens.append(self.cvae_action(actions))
        x = torch.cat(tokens, 1)
        x = self.cvae(x + self.cvae_pos[:, : x.shape[1]])
        mu, logvar = self.posterior(x[:, 0]).chunk(2, -1)
        return mu, logvar

    def decode(self, z: torch.Tensor, state: torch.Tensor, cams: torch.Tensor | None) -> torch.Tensor:
        """(B, Tp, A) actions from z (B, Z), state (B, To, D), camera features (B, To, K, F) or None."""
        b, t = state.shape[:2]
        per_step = []
        if self.state_in is not None:
            per_step.append(self.state_in(state)[:, :, None])  # (B, To, 1, H)
        for i, proj in enumerate(self.camera_in):
            per_step.append(proj(cams[:, :, i])[:, :, None])
        memory = torch.cat([self.latent_in(z)[:, None], torch.cat(per_step, 2).flatten(1, 2)], 1)
        memory = self.encoder(memory + self.token_pos)
        out = self.decoder(self.queries.expand(b, -1, -1), memory)
        return self.head(out)

    def forward(self, state: torch.Tensor, cams: torch.Tensor | None, actions: torch.Tensor | None = None,
                z: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Training (actions given): z drawn from the posterior (reparameterised). Acting: `z`, or 0."""
        mu = logvar = None
        if actions is not None:
            mu, logvar = self.encode(state[:, -1], actions)
            z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        elif z is None:
            z = state.new_zeros(state.shape[0], self.latent_dim)
        return self.decode(z, state, cams), mu, logvar

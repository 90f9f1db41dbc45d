"""The LightningModule that trains any policy: one `_shared_step` for train and val, an EMA copy
of the weights for the policies that have one (diffusion, ACT), AdamW with warm-up and cosine decay. Its hyperparameters (run
config, ObsSpec, env) and state dict (weights, EMA weights, normaliser) make a checkpoint that
`policies eval` needs nothing else to run."""

from __future__ import annotations

import copy
import math
from typing import Any

import lightning as L
import torch

from policies.config import RunConfig
from policies.data import ObsSpec
from policies.kinds import build_policy, run_from_dict
from policies.policy import Policy


class PolicyModule(L.LightningModule):
    def __init__(self, run: dict[str, Any], spec: dict[str, Any], env: dict[str, Any]):
        super().__init__()
        self.save_hyperparameters()
        self.run_cfg: RunConfig = run_from_dict(run)
        self.spec = ObsSpec.from_dict(spec)
        self.env = env
        self.policy: Policy = build_policy(self.spec, self.run_cfg.policy)
        decay = getattr(self.run_cfg.policy, "ema_decay", 0.0)
        self.ema_decay = decay
        self.ema: Policy | None = copy.deepcopy(self.policy).requires_grad_(False) if decay > 0 else None

    @property
    def eval_policy(self) -> Policy:
        """The weights to act with: the EMA ones when there are."""
        return self.ema if self.ema is not None else self.policy

    def setup(self, stage: str) -> None:
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if stage == "fit" and dm is not None and dm.normaliser is not None:
            for p in (self.policy, self.ema):
                if p is not None:
                    p.normaliser.load_state_dict(dm.normaliser.state_dict())

    def _shared_step(self, batch: dict[str, torch.Tensor], stage: str) -> torch.Tensor:
        policy = self.policy if stage == "train" else self.eval_policy
        loss = policy.loss(batch)
        self.log(f"{stage}/loss", loss, prog_bar=True, sync_dist=stage != "train", batch_size=len(batch["actions"]))
        return loss

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._shared_step(batch, "train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor | None:
        if len(batch["actions"]) == 0:  # no validation episodes (dataset.val_fraction 0)
            return None
        return self._shared_step(batch, "val")

    @torch.no_grad()
    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.ema is None:
            return
        step = self.global_step
        decay = min(self.ema_decay, (1 + step) / (10 + step))  # short memory early in training
        ema_params = [p for p in self.ema.parameters()]
        params = [p.detach() for p in self.policy.parameters()]
        torch._foreach_lerp_(ema_params, params, 1 - decay)
        for b_ema, b in zip(self.ema.buffers(), self.policy.buffers()):
            b_ema.copy_(b)

    def configure_optimizers(self):
        cfg, steps = self.run_cfg.policy, self.run_cfg.train.max_steps
        opt = torch.optim.AdamW(self.policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.95, 0.999))

        def factor(step: int) -> float:
            if step < cfg.warmup_steps:
                return (step + 1) / cfg.warmup_steps
            progress = min(1.0, (step - cfg.warmup_steps) / max(1, steps - cfg.warmup_steps))
            return 0.5 * (1 + math.cos(math.pi * progress))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def load_policy(checkpoint: str, device: str | torch.device = "cpu") -> tuple[Policy, PolicyModule]:
    """The acting policy of a checkpoint (EMA weights when there are), in eval mode on `device`.
    A file that is not a checkpoint of `policies train` is one ValueError naming it."""
    try:
        module = PolicyModule.load_from_checkpoint(checkpoint, map_location=device, weights_only=False)
    except Exception as e:  # a foreign file fails anywhere in unpickling or in Lightning's reading of it
        reason = (str(e).splitlines() or [""])[0]
        raise ValueError(f"{checkpoint}: not a checkpoint of `policies train` ({type(e).__name__}: {reason})") from None
    policy = module.eval_policy.to(device).eval()
    return policy, module

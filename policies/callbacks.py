"""Training callbacks: evaluation rollouts after each validation, and throughput."""

from __future__ import annotations

import time
from typing import Any

import lightning as L
import torch
from lightning.pytorch.utilities import rank_zero_info

from policies.config import EvalConfig
from policies.evaluate import evaluate, summary

EVAL_METRICS = ("success_at_end", "success_once", "episode_len")


class EvalCallback(L.Callback):
    """After each validation (every train.val_every steps), rank 0 rolls the acting policy in
    `episodes` envs; the numbers go to every rank (so checkpointing on them agrees) and to the logs."""

    def __init__(self, cfg: EvalConfig):
        self.cfg = cfg
        self.history: list[dict[str, Any]] = []

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking or self.cfg.episodes == 0:
            return
        result = None
        if trainer.is_global_zero:
            result = evaluate(pl_module.eval_policy, pl_module.env, self.cfg.episodes, self.cfg.num_envs,
                              self.cfg.num_workers, self.cfg.seed, self.cfg.max_episode_steps)
            result["step"] = trainer.global_step
            rank_zero_info(f"\nstep {trainer.global_step}: eval {summary(result)}")
        result = trainer.strategy.broadcast(result, src=0)
        self.history.append(result)
        for k in EVAL_METRICS:
            pl_module.log(f"eval/{k}", float(result[k]), prog_bar=k != "episode_len", sync_dist=False, rank_zero_only=False)

    def state_dict(self) -> dict[str, Any]:  # a resumed run's results.json keeps the evaluations before it
        return {"history": self.history}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.history = list(state_dict.get("history", []))


class Throughput(L.Callback):
    """Training samples per second over all ranks, logged and shown in the progress bar."""

    def __init__(self, batch_size: int, every: int = 50):
        self.batch_size, self.every = batch_size, every
        self._t0: float | None = None
        self._steps = 0
        self.last = 0.0

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx: int) -> None:
        if self._t0 is None:  # the first batch includes warm-up (allocations, cudnn autotuning)
            self._sync(pl_module)
            self._t0, self._steps = time.monotonic(), 0
            return
        self._steps += 1
        if self._steps >= self.every:
            self._sync(pl_module)
            dt = time.monotonic() - self._t0
            self.last = self._steps * self.batch_size * trainer.world_size / dt
            pl_module.log("train/samples_per_s", self.last, prog_bar=True, rank_zero_only=True)
            self._t0, self._steps = time.monotonic(), 0

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._t0 = None  # validation and rollouts are not training time
        if self.last:
            rank_zero_info(f"\nstep {trainer.global_step}: {self.last:,.0f} training samples/s")

    @staticmethod
    def _sync(pl_module: L.LightningModule) -> None:
        if pl_module.device.type == "cuda":
            torch.cuda.synchronize(pl_module.device)

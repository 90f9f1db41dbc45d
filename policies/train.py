"""Train a policy from a run config: `train(run)`.

A run writes OUT/NAME/: config.yaml, metrics.csv (CSV logger), tb/ (TensorBoard),
checkpoints/{best,last}.ckpt, and at the end results.json (final evaluation of the best
checkpoint on fresh seeds) and curves.png (loss and eval success against training step).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any, Sequence

import lightning as L
import torch
import yaml
from lightning.pytorch.callbacks import ModelCheckpoint, OnExceptionCheckpoint
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.utilities import rank_zero_info

from envs.wrappers.video import require_mp4_writer
from policies.callbacks import EvalCallback, Throughput
from policies.config import RunConfig
from policies.data import DemoData, split_episodes
from policies.datamodule import DemoDataModule
from policies.evaluate import evaluate, summary
from policies.module import PolicyModule, load_policy
from policies.plot import plot_curves
from replay.trajectory import TrajectoryFile

FINAL_SEED_OFFSET = 50_000  # the final evaluation's seeds differ from those that picked the best checkpoint

# Lightning's advice that does not apply here, kept out of the run's output: the loaders have no
# workers on purpose (batches are gathered on the device), the run directory is ours and holds
# config.yaml before the loggers start, the exception-checkpoint callback makes fit() look for a
# last.ckpt to resume even on a fresh run, and a deprecation inside Lightning itself.
_NOT_FOR_US = (
    r"The '\w+_dataloader' does not have many workers",
    r"Experiment logs directory .* exists and is not empty",
    r"`\.fit\(ckpt_path=None\)` was called without a model",
    r"\.fit\(ckpt_path=\"last\"\) is set, but there is no last checkpoint",
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",
)


class _NoTips(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "Tip:" not in record.getMessage()


@contextlib.contextmanager
def _quiet_lightning():
    loggers = [logging.getLogger(n) for n in ("lightning.pytorch.utilities.rank_zero", "lightning.pytorch")]
    tips = _NoTips()
    with warnings.catch_warnings():
        for message in _NOT_FOR_US:
            warnings.filterwarnings("ignore", message=message)
        for lg in loggers:
            lg.addFilter(tips)
        try:
            yield
        finally:
            for lg in loggers:
                lg.removeFilter(tips)


def run_dir(run: RunConfig, env_id: str) -> Path:
    name = run.train.name or f"{run.kind}_{run.dataset.obs_mode}_{env_id.split('-')[0]}"
    return Path(run.train.out) / name


def _precision(run: RunConfig) -> str:
    if run.train.precision != "auto":
        return run.train.precision
    on_gpu = run.train.accelerator in ("gpu", "cuda") or (run.train.accelerator == "auto" and torch.cuda.is_available())
    return "bf16-mixed" if on_gpu else "32-true"


def train(run: RunConfig, callbacks: Sequence[L.Callback] = ()) -> dict[str, Any]:
    """Fit, keep the best checkpoint by eval success, evaluate it; returns the final results (rank 0)."""
    spec, env = DemoData.peek(run.data, run.dataset)
    out = run_dir(run, env["env_id"])
    ckpt_dir = out / "checkpoints"
    last = ckpt_dir / "last.ckpt"
    interrupted = ckpt_dir / "interrupted.ckpt"  # written on Ctrl-C or an error
    global_zero = int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0"))) == 0
    resume_from = max((p for p in (last, interrupted) if p.is_file()), key=lambda p: p.stat().st_mtime, default=None)
    if run.train.resume and resume_from is None:
        raise ValueError(f"--train.resume: no {last} to continue from")
    if not run.train.resume and resume_from is not None and global_zero:
        raise ValueError(f"{out} already holds a run: pass --train.resume to continue it, or another --train.name")
    evaluating = run.eval.episodes > 0
    if run.eval.video and (evaluating or run.eval.final_episodes):  # fail now, not at the first evaluation
        require_mp4_writer()
    if not evaluating:  # the validation loss picks the best checkpoint: there must be validation episodes
        used = len(TrajectoryFile(run.data).episodes[: run.dataset.max_episodes or None])
        if not split_episodes(used, run.dataset.val_fraction, run.dataset.split_seed)[1]:
            raise ValueError(f"dataset.val_fraction {run.dataset.val_fraction} leaves none of the {used} episodes for "
                             "validation, which picks the best checkpoint when eval.episodes is 0")
    if global_zero:
        out.mkdir(parents=True, exist_ok=True)
        if run.train.resume and (out / "metrics.csv").is_file():  # the CSV logger starts a new file: keep the old part
            parts = len(list(out.glob("metrics.part*.csv")))
            (out / "metrics.csv").rename(out / f"metrics.part{parts}.csv")
        (out / "config.yaml").write_text(yaml.safe_dump(run.to_dict(), sort_keys=False))

    L.seed_everything(run.train.seed, workers=True, verbose=False)
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cudnn.benchmark = True

    p = run.policy
    dm = DemoDataModule(run.data, run.dataset, p.obs_horizon, p.pred_horizon, run.train.batch_size, run.train.val_every,
                        run.train.val_batches, run.train.seed)
    module = PolicyModule(run.to_dict(), spec.to_dict(), env)
    best = ModelCheckpoint(ckpt_dir, filename="best", monitor="eval/success_at_end" if evaluating else "val/loss",
                           mode="max" if evaluating else "min", save_top_k=1, save_last=True, enable_version_counter=False)
    eval_cb = EvalCallback(run.eval)
    with _quiet_lightning():
        trainer = L.Trainer(
            accelerator=run.train.accelerator, devices=run.train.devices, strategy=run.train.strategy,
            num_nodes=run.train.num_nodes,
            precision=_precision(run), max_steps=run.train.max_steps,
            max_time=timedelta(minutes=run.train.max_minutes) if run.train.max_minutes else None,
            logger=[CSVLogger(out, name="", version=""), TensorBoardLogger(out, name="tb", version="", default_hp_metric=False)],
            callbacks=[eval_cb, Throughput(run.train.batch_size), best, OnExceptionCheckpoint(ckpt_dir, "interrupted"), *callbacks],
            check_val_every_n_epoch=1, num_sanity_val_steps=0, log_every_n_steps=min(50, run.train.val_every),
            enable_progress_bar=run.train.progress_bar, enable_model_summary=False, default_root_dir=out,
        )
        start = time.monotonic()
        # our own checkpoint (config, normaliser, env): loaded whole, as load_policy does
        trainer.fit(module, dm, ckpt_path=str(resume_from) if run.train.resume else None, weights_only=False)
    if not best.best_model_path and not last.is_file():  # stopped (max_minutes) before the first validation
        trainer.save_checkpoint(last)
    if not trainer.is_global_zero:
        return {}
    minutes = (time.monotonic() - start) / 60
    results: dict[str, Any] = {"run": str(out), "env_id": env["env_id"], "policy": run.kind, "obs_mode": spec.obs_mode,
                               "control_mode": env["control_mode"], "steps": trainer.global_step,
                               "train_minutes": round(minutes, 2), "eval_history": eval_cb.history}
    chosen = best.best_model_path or str(last)
    results["checkpoint"] = chosen
    if run.eval.final_episodes and Path(chosen).is_file():
        policy, _ = load_policy(chosen, trainer.strategy.root_device)  # fit's teardown moved the module to the CPU
        final = evaluate(policy, env, run.eval.final_episodes, run.eval.num_envs, run.eval.num_workers,
                         run.eval.seed + FINAL_SEED_OFFSET, run.eval.max_episode_steps, run.eval.video or None)
        results["final"] = final
        rank_zero_info(f"final ({Path(chosen).name}): {summary(final)}")
    (out / "results.json").write_text(json.dumps(results, indent=1))
    plot_curves(out, out / "curves.png", title=f"{run.kind} {spec.obs_mode} {env['env_id']}")
    return results

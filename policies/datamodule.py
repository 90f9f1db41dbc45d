"""Lightning DataModule: the demonstrations live on the training device as tensors; the loaders
yield only sample indices, and batches are gathered on the device after transfer, so no worker
process or host-to-device copy of data sits in the training loop."""

from __future__ import annotations

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from policies.config import DatasetConfig
from policies.data import DemoData, gather, still_dims
from policies.normaliser import Normaliser


class _RandomBatches(Dataset):
    """Epochs of `steps` batches of sample indices drawn with replacement from one seeded stream
    (read in the main process: the loader has no workers)."""

    def __init__(self, num_samples: int, batch_size: int, steps: int, seed: int):
        self.num_samples, self.batch_size, self.steps = num_samples, batch_size, steps
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.randint(self.num_samples, (self.batch_size,), generator=self.generator)


class _FixedBatches(Dataset):
    def __init__(self, num_samples: int, batch_size: int, batches: int):
        order = torch.randperm(num_samples, generator=torch.Generator().manual_seed(0))
        self.chunks = [c for c in order.split(batch_size)][:batches]

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.chunks[i]


class DemoDataModule(L.LightningDataModule):
    def __init__(
        self,
        path: str,
        dataset: DatasetConfig,
        obs_horizon: int,
        pred_horizon: int,
        batch_size: int,
        steps_per_epoch: int,
        val_batches: int,
        seed: int = 0,
    ):
        super().__init__()
        self.path, self.cfg = path, dataset
        self.obs_horizon, self.pred_horizon = obs_horizon, pred_horizon
        self.batch_size, self.steps_per_epoch, self.val_batches, self.seed = batch_size, steps_per_epoch, val_batches, seed
        self.data: DemoData | None = None
        self.normaliser: Normaliser | None = None

    def setup(self, stage: str | None = None) -> None:
        if self.data is not None:
            return
        data = DemoData(self.path, self.cfg)
        self.data, self.spec, self.env = data, data.spec, data.env
        self.train_episodes, self.val_episodes = data.split(self.cfg.val_fraction, self.cfg.split_seed)
        act_rows, obs_rows = data.rows(self.train_episodes)
        acts = data.actions[act_rows] if data.plan is None else torch.cat((data.actions[act_rows], data.plan[act_rows]))
        aux = data.aux[obs_rows] if data.aux is not None else None
        self.normaliser = Normaliser(data.spec.action_dim, data.spec.state_dim, data.spec.aux_dim).fit(acts, data.state[obs_rows], aux)
        device = self.trainer.strategy.root_device if self.trainer is not None else torch.device("cpu")
        self.store = {
            "state": data.state.to(device),
            "images": data.images.to(device) if data.images is not None else None,
            "aux": data.aux.to(device) if data.aux is not None else None,
            "actions": data.actions.to(device),
            "plan": data.plan.to(device) if data.plan is not None else None,
        }
        self.tables = {
            split: {k: v.to(device) for k, v in data.windows(eps, self.obs_horizon, self.pred_horizon).items()}
            for split, eps in (("train", self.train_episodes), ("val", self.val_episodes))
        }
        self.still = still_dims(self.env, data.actions.shape[1])
        self.still = self.still.to(device) if self.still is not None else None

    def num_samples(self, split: str) -> int:
        return len(self.tables[split]["obs"])

    def train_dataloader(self) -> DataLoader:
        rank, step = (self.trainer.global_rank, self.trainer.global_step) if self.trainer is not None else (0, 0)
        seed = hash((self.seed, rank, step)) % (2**63)  # a resumed run draws new batches, each rank its own
        ds = _RandomBatches(self.num_samples("train"), self.batch_size, self.steps_per_epoch, seed)
        return DataLoader(ds, batch_size=None, shuffle=False, num_workers=0)

    def val_dataloader(self) -> DataLoader:
        if self.num_samples("val") == 0:  # dataset.val_fraction 0: one empty batch, so that the evaluation still runs
            return DataLoader([torch.zeros(0, dtype=torch.long)], batch_size=None, num_workers=0)
        return DataLoader(_FixedBatches(self.num_samples("val"), self.batch_size, self.val_batches), batch_size=None, num_workers=0)

    def on_after_batch_transfer(self, batch: torch.Tensor, dataloader_idx: int) -> dict[str, torch.Tensor]:
        split = "train" if self.trainer is None or self.trainer.training else "val"
        return self.batch(split, batch)

    def batch(self, split: str, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """The samples `idx` of `split` as a batch on the data's device."""
        return gather(self.store, self.tables[split], idx.to(self.tables[split]["obs"].device), self.still)

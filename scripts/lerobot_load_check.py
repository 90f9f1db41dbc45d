"""Load a `replay export --format lerobot` dataset with LeRobot's own `LeRobotDataset` and compare
every frame with the trajectory file it came from. Runs in a separate environment that has
lerobot (its releases cannot install beside our pins: docs/FORMAT.md gives the recipe):

    /tmp/lrvenv/bin/python scripts/lerobot_load_check.py DATASET_DIR TRAJECTORY.h5 [--video-backend pyav]

Needs lerobot, torch, h5py and numpy there; nothing of SkillForge is imported.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import h5py
import numpy as np
import torch
from lerobot.datasets.compute_stats import aggregate_stats
from lerobot.datasets.lerobot_dataset import LeRobotDataset


def source_frames(h5: Path) -> dict[str, np.ndarray]:
    """Per LeRobot feature, the trajectory file's values of every frame (episodes in order, each
    episode's final observation left out), read with h5py alone."""
    out: dict[str, list] = {}
    with h5py.File(h5, "r") as f:
        for i in range(len([k for k in f if k.startswith("traj_")])):
            g = f[f"traj_{i}"]
            t = len(g["actions"])
            obs = g["obs"]
            if isinstance(obs, h5py.Dataset):
                state = obs[:t]
            else:
                state = np.concatenate([obs["agent/qpos"][:t], obs["agent/qvel"][:t]], 1)
                for group in ("cameras", "sensor_data"):
                    for cam in obs.get(group, {}):
                        out.setdefault(f"observation.images.{cam}", []).append(obs[group][cam]["rgb"][:t])
            out.setdefault("observation.state", []).append(state)
            out.setdefault("action", []).append(g["actions"][:])
    return {k: np.concatenate(v) for k, v in out.items()}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("h5", type=Path)
    p.add_argument("--video-backend", default=None, help="torchcodec (LeRobot's default) or pyav")
    args = p.parse_args()

    ds = LeRobotDataset(repo_id="skillforge/export", root=args.root, video_backend=args.video_backend)
    meta = ds.meta
    print(f"LeRobotDataset: {ds.num_episodes} episodes, {ds.num_frames} frames, fps {ds.fps}, "
          f"codebase {meta.info['codebase_version']}, robot {meta.robot_type}")
    print("features:", json.dumps({k: [v["dtype"], list(v["shape"])] for k, v in ds.features.items()}))
    print("camera keys:", meta.camera_keys, "video keys:", meta.video_keys, "video backend:", ds.video_backend)
    print("tasks:", list(meta.tasks.index))
    print("stats keys:", sorted(meta.stats))

    src = source_frames(args.h5)
    n = len(src["action"])
    loader = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=False, num_workers=0)
    seen = 0
    got: dict[str, list[np.ndarray]] = {k: [] for k in src}
    for batch in loader:
        assert torch.equal(batch["index"], torch.arange(seen, seen + len(batch["index"]))), "frames out of order"
        for key in src:
            x = batch[key].numpy()
            got[key].append(np.round(x.transpose(0, 2, 3, 1) * 255) if key in meta.camera_keys else x)  # (B, 3, H, W) in [0, 1]
        seen += len(batch["index"])
    assert seen == ds.num_frames == n, (seen, ds.num_frames, n)
    print(f"read all {seen} frames through a DataLoader; against the trajectory file:")
    for key, want in src.items():
        x = np.concatenate(got[key]).astype(np.float64)
        want = want.astype(np.float64)
        if key in meta.video_keys:  # lossy: the mean error, and that against the source shifted by a frame
            shift = {d: np.abs(x[max(0, -d):n - max(0, d)] - want[max(0, d):n - max(0, -d)]).mean() for d in (-1, 0, 1)}
            print(f"  {key}: video, mean |difference| {shift[0]:.2f} of 255 (worst frame "
                  f"{np.abs(x - want).mean(axis=(1, 2, 3)).max():.2f}); against the previous / next source frame "
                  f"{shift[-1]:.2f} / {shift[1]:.2f}")
        else:
            print(f"  {key}: largest |difference| {np.abs(x - want).max():g}")

    # the episodes' own stats, aggregated by LeRobot (which checks their types and shapes), against stats.json
    import pyarrow.parquet as pq

    table = pq.read_table(args.root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    per_episode = [{k: {s: np.array(row[f"stats/{k}/{s}"]) for s in meta.stats[k]} for k in meta.stats} for row in table]
    agg = aggregate_stats(per_episode)
    diff = max(float(np.abs(agg[k][s] - meta.stats[k][s]).max()) for k in agg for s in ("min", "max", "mean", "std", "count"))
    print(f"LeRobot's aggregate_stats over the {len(per_episode)} episodes' stats: min/max/mean/std/count "
          f"differ from stats.json by at most {diff:.2g}")

    item = ds[0]
    print("ds[0]:", {k: (list(v.shape), str(v.dtype).replace("torch.", "")) if isinstance(v, torch.Tensor) else v for k, v in item.items()})
    chunk = LeRobotDataset(repo_id="skillforge/export", root=args.root, video_backend=args.video_backend,
                           delta_timestamps={"action": [i / ds.fps for i in range(8)]})
    last = chunk[len(chunk) - 1]
    print(f"delta_timestamps action chunk at the last frame: {list(last['action'].shape)}, "
          f"padded steps {int(last['action_is_pad'].sum())} of 8")


if __name__ == "__main__":
    main()

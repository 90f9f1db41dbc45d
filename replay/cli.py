"""`replay`: convert, split and subset trajectory files.

    replay convert FILE [--obs MODE] [--control MODE] [--out PATH] [--num-envs B] [--workers W]
                   [--count K] [--use-env-states] [--allow-failure] [--cam-width W --cam-height H]
                   [--overwrite | --resume] [--executor local|ray [--address ADDR]]
    replay split FILE --val 0.1 [--seed 0] [--out-dir DIR]
    replay subset FILE OUT [--count K] [--success-only]
    replay merge OUT IN [IN ...] [--overwrite]
    replay export FILE --format lerobot --out DIR [--fps F] [--task TEXT] [--video] [--camera NAME ...]
                  [--overwrite]

Bad input (a missing or non-trajectory file, a sidecar that does not match its HDF5 file, an
unknown mode or env id) gets one line on stderr, exit code 2, and nothing is written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from envs.modes import ObsMode


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="replay", description="Convert, split and subset trajectory files.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="the same episodes in another obs and/or control mode")
    c.add_argument("file", type=Path, help="input trajectory .h5 (never modified)")
    c.add_argument("--obs", help=f"obs mode: {', '.join(m.value for m in ObsMode)} (default: the input's)")
    c.add_argument("--control", help="control mode: pd_joint_pos, pd_joint_delta_pos, pd_ee_delta_pos, pd_ee_delta_pose, pd_ee_pose (default: the input's)")
    c.add_argument("--out", type=Path, help="output .h5 (default: FILE's name + .OBS.CONTROL.h5, beside it)")
    c.add_argument("--num-envs", type=int, help="episodes converted at once in one batched env (default 64; 16 for camera modes)")
    c.add_argument("--workers", type=int, help="workers, each converting batches (default 1; with --executor ray, "
                                               "one per CPU of the cluster)")
    c.add_argument("--count", type=int, help="convert only the first K episodes")
    c.add_argument("--use-env-states", action="store_true", help="obs-only conversion: trust the recorded states, skip checking that the actions replay to success")
    c.add_argument("--allow-failure", action="store_true", help="also write episodes whose conversion failed (marked unsuccessful)")
    c.add_argument("--cam-width", type=int, help="camera image width (camera obs modes)")
    c.add_argument("--cam-height", type=int, help="camera image height (camera obs modes)")
    c.add_argument("--action-noise", type=float, default=0.0, metavar="STD",
                   help="DART-style perturbed conversion: execute each converted action plus Gaussian noise of this std "
                        "(target mode's action units, arm only) and keep the noise-free corrective actions as "
                        "expert_actions, which policies train on (default 0: none)")
    c.add_argument("--noise-seed", type=int, default=0, help="seed of --action-noise (default 0)")
    c.add_argument("--overwrite", action="store_true", help="replace an existing output (or an interrupted one's OUT.pending.h5)")
    c.add_argument("--resume", action="store_true", help="continue an interrupted conversion (its OUT.pending.h5)")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    c.add_argument("--executor", default="local", help="local (worker processes on this machine, default) or ray "
                                                       '(Ray actors on a cluster; pip install -e ".[ray]")')
    c.add_argument("--address", help="the Ray cluster to join, e.g. HEAD:6379 (default: a local Ray started for the run)")
    s = sub.add_parser("split", help="episode-level train/val files FILE.train.h5 and FILE.val.h5")
    s.add_argument("file", type=Path)
    s.add_argument("--val", type=float, required=True, help="fraction of episodes for validation, e.g. 0.1")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out-dir", type=Path, help="where to write (default: beside FILE)")
    b = sub.add_parser("subset", help="the first K episodes, or the successful ones, into OUT")
    b.add_argument("file", type=Path)
    b.add_argument("out", type=Path)
    b.add_argument("--count", type=int)
    b.add_argument("--success-only", action="store_true")
    m = sub.add_parser("merge", help="join files of one task and control mode, renumbering episodes")
    m.add_argument("out", type=Path)
    m.add_argument("inputs", type=Path, nargs="+")
    m.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    e = sub.add_parser("export", help="the episodes as a dataset of another library's format (LeRobot v3.0)")
    e.add_argument("file", type=Path, help="input trajectory .h5 (never modified)")
    e.add_argument("--format", choices=["lerobot"], default="lerobot", help="output format (default lerobot: LeRobot dataset v3.0)")
    e.add_argument("--out", type=Path, required=True, help="output folder (written as DIR.partial, renamed when complete)")
    e.add_argument("--fps", type=int, help="frames per second (default: the env's control frequency)")
    e.add_argument("--task", help="the task's instruction text (default: the task's one-line description)")
    e.add_argument("--video", action="store_true", help="camera images as AV1 mp4 files under videos/ (default: PNG in the parquet rows)")
    e.add_argument("--camera", action="append", help="export this camera's rgb images (repeatable; default: every camera)")
    e.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _export(args) -> int:
    from tqdm import tqdm

    from replay.lerobot import ExportConfig, export_lerobot
    from replay.trajectory import read_meta

    cfg = ExportConfig(file=args.file, out=args.out, fps=args.fps, task=args.task, video=args.video,
                       cameras=args.camera, overwrite=args.overwrite)
    total = len(read_meta(cfg.file)["episodes"])
    try:
        with tqdm(total=total, unit="ep", desc="export", dynamic_ncols=True, disable=args.no_progress) as bar:
            r = export_lerobot(cfg, bar.update)
    except KeyboardInterrupt:
        print(f"interrupted: nothing written to {cfg.out}", file=sys.stderr)
        return 130
    print(f"{r.out}: LeRobot v3.0 dataset, {r.episodes} episodes, {r.frames} frames at {r.fps} fps; features: {', '.join(r.features)}")
    if r.skipped:
        print(f"left out {r.skipped} episodes without actions")
    return 0


def _convert(args) -> int:
    import torch

    torch.set_num_threads(1)  # the env's torch work is small; a second thread only spins on a core the physics needs
    from tqdm import tqdm

    from replay.control import ActionNoise
    from replay.convert import ConvertConfig, run

    cfg = ConvertConfig(
        file=args.file, obs=args.obs, control=args.control, out=args.out, num_envs=args.num_envs,
        workers=args.workers, count=args.count, use_env_states=args.use_env_states,
        allow_failure=args.allow_failure, cam_width=args.cam_width, cam_height=args.cam_height,
        overwrite=args.overwrite, noise=ActionNoise(args.action_noise, seed=args.noise_seed),
        executor=args.executor, address=args.address, resume=args.resume,
    )
    what = f"{cfg.env_id} {cfg.source_obs.value}/{cfg.source_control.value} -> {cfg.obs_mode.value}/{cfg.control_mode.value}"
    bar = tqdm(total=len(cfg.episode_ids), unit="ep", desc=what, dynamic_ncols=True, disable=args.no_progress)
    try:
        report = run(cfg, bar.update)
    except KeyboardInterrupt:
        bar.close()
        where = f"committed episodes are in {cfg.part}; continue with --resume" if cfg.part.exists() else "nothing was committed"
        print(f"interrupted: {where}", file=sys.stderr)
        return 130
    bar.close()
    for line in report.lines():
        print(line)
    if report.out is None:
        print("error: no episode converted: nothing written", file=sys.stderr)
        return 1
    return 0


def _split(args) -> int:
    from replay.trajectory import split_file

    train, val, n_train, n_val = split_file(args.file, args.val, args.seed, args.out_dir)
    print(f"{train}: {n_train} episodes\n{val}: {n_val} episodes")
    return 0


def _subset(args) -> int:
    from replay.trajectory import subset_file

    n = subset_file(args.file, args.out, args.count, args.success_only)
    print(f"{args.out}: {n} episodes")
    return 0


def _merge(args) -> int:
    from replay.trajectory import merge_files

    n = merge_files(args.inputs, args.out, args.overwrite)
    print(f"{args.out}: {n} episodes from {len(args.inputs)} files")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"convert": _convert, "split": _split, "subset": _subset, "merge": _merge, "export": _export}
    try:
        return commands[args.command](args)
    except (ValueError, OSError, RuntimeError) as e:  # TrajectoryError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

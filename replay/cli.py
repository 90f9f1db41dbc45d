"""`replay`: convert, split and subset trajectory files.

    replay convert FILE [--obs-mode MODE] [--control-mode MODE] [--out PATH] [--num-envs B] [--workers W]
                   [--count K] [--use-env-states] [--allow-failure] [--cam-width W --cam-height H]
                   [--overwrite | --resume] [--executor local|ray [--address ADDR]]
    replay split FILE --val 0.1 [--seed 0] [--out-dir DIR]
    replay subset FILE OUT [--count K] [--success-only]
    replay merge OUT IN [IN ...] [--overwrite]
    replay export FILE --format lerobot --out DIR [--fps F] [--task TEXT] [--video] [--camera NAME ...]
                  [--overwrite]

The flags are generated from the dataclasses below and the configs they hold (envs/cli.py).
Bad input (a missing or non-trajectory file, a sidecar that does not match its HDF5 file, an
unknown mode or env id) gets one `error:` line on stderr, exit code 2, and nothing is written.
"""

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import tyro

from envs.cli import Command
from envs.cli import main as run_cli

if TYPE_CHECKING:
    from replay.convert import ConvertConfig
    from replay.lerobot import ExportConfig

Positional = tyro.conf.Positional
Flat = tyro.conf.arg(name="")  # a config's fields as the command's own flags, without a prefix
ALIASES = {"--obs": "--obs-mode", "--control": "--control-mode"}  # old spellings, still accepted


def _convert_args() -> type:
    from replay.convert import ConvertConfig

    @dataclass
    class ConvertArgs:
        config: Annotated[ConvertConfig, Flat]
        no_progress: bool = False
        """no progress bar"""

    return ConvertArgs


def _export_args() -> type:
    from replay.lerobot import ExportConfig

    @dataclass
    class ExportArgs:
        config: Annotated[ExportConfig, Flat]
        format: Literal["lerobot"] = "lerobot"
        """output format (lerobot: LeRobot dataset v3.0)"""
        no_progress: bool = False
        """no progress bar"""

    return ExportArgs


@dataclass
class SplitArgs:
    file: Annotated[Path, Positional, tyro.conf.arg(metavar="FILE")]
    """trajectory .h5 to split (never modified)"""
    val: float
    """fraction of episodes for validation, e.g. 0.1"""
    seed: int = 0
    """seed of the episode-level split"""
    out_dir: Annotated[Path | None, tyro.conf.arg(metavar="DIR", help_behavior_hint="(default: beside FILE)")] = None
    """where to write FILE.train.h5 and FILE.val.h5"""


@dataclass
class SubsetArgs:
    file: Annotated[Path, Positional, tyro.conf.arg(metavar="FILE")]
    """trajectory .h5 (never modified)"""
    out: Annotated[Path, Positional, tyro.conf.arg(metavar="OUT")]
    """the subset's .h5"""
    count: Annotated[int | None, tyro.conf.arg(metavar="K", help_behavior_hint="(default: every episode)")] = None
    """keep the first K episodes (after --success-only)"""
    success_only: bool = False
    """keep the successful episodes only"""


@dataclass
class MergeArgs:
    out: Annotated[Path, Positional, tyro.conf.arg(metavar="OUT")]
    """the merged .h5"""
    inputs: Annotated[list[Path], Positional, tyro.conf.arg(metavar="IN")]
    """files of one task and control mode to join"""
    overwrite: bool = False
    """replace an existing OUT"""


def _export(args) -> int:
    from tqdm import tqdm

    from replay.lerobot import export_lerobot
    from replay.trajectory import read_meta

    cfg: ExportConfig = args.config
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

    from replay.convert import run

    cfg: ConvertConfig = args.config
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


COMMANDS = {
    "convert": Command("the same episodes in another obs and/or control mode", _convert, _convert_args, ALIASES),
    "split": Command("episode-level train/val files FILE.train.h5 and FILE.val.h5", _split, SplitArgs),
    "subset": Command("the first K episodes, or the successful ones, into OUT", _subset, SubsetArgs),
    "merge": Command("join files of one task and control mode, renumbering episodes", _merge, MergeArgs),
    "export": Command("the episodes as a dataset of another library's format (LeRobot v3.0)", _export, _export_args),
}


def main(argv: list[str] | None = None) -> int:
    return run_cli("replay", "Convert, split and subset trajectory files.", COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())

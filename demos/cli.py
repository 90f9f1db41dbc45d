"""`demos`: motion-planned demonstrations.

    demos generate TASK --n N [--out PATH] [--seed S] [--num-envs B] [--workers W]
                   [--control-mode pd_joint_pos] [--obs-mode none|state]
                   [--no-only-success] [--resume | --overwrite] [--shard i/K]
                   [--executor local|ray [--address ADDR]]
    demos list
    demos info FILE
    demos verify FILE [--num-envs B] [--shuffle SEED]
    demos merge OUT IN [IN ...] [--overwrite]
    demos report FILE [--out report.html] [--videos K]

The flags are generated from the dataclasses below and demos.generate.GenerateConfig
(envs/cli.py: `--help` shows every default; bad input is one `error:` line, exit 2).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import tyro

from envs.cli import Command
from envs.cli import main as run_cli

if TYPE_CHECKING:
    from demos.generate import GenerateConfig

Positional = tyro.conf.Positional


@dataclass
class ListArgs:
    """`demos list`: no options."""


@dataclass
class InfoArgs:
    file: Annotated[Path, Positional, tyro.conf.arg(metavar="FILE")]
    """demonstration file (.h5 with its .json sidecar)"""


@dataclass
class VerifyArgs:
    file: Annotated[Path, Positional, tyro.conf.arg(metavar="FILE")]
    """demonstration file (.h5 with its .json sidecar)"""
    num_envs: int = 16
    """episodes replayed together, each batch in a fresh env"""
    shuffle: Annotated[int | None, tyro.conf.arg(metavar="SEED", help_behavior_hint="(default: the file's order)")] = None
    """replay the episodes in an order shuffled by SEED"""

    def __post_init__(self) -> None:
        if self.num_envs < 1:
            raise ValueError(f"--num-envs must be positive, got {self.num_envs}")


@dataclass
class MergeArgs:
    out: Annotated[Path, Positional, tyro.conf.arg(metavar="OUT")]
    """the merged .h5"""
    inputs: Annotated[list[Path], Positional, tyro.conf.arg(metavar="IN")]
    """files of one task to join"""
    overwrite: bool = False
    """replace an existing OUT"""


@dataclass
class ReportArgs:
    file: Annotated[Path, Positional, tyro.conf.arg(metavar="FILE")]
    """demonstration file (.h5 with its .json sidecar)"""
    out: Annotated[Path | None, tyro.conf.arg(metavar="PATH", help_behavior_hint="(default: beside FILE, NAME.report.html)")] = None
    """the page"""
    videos: int = 3
    """episodes shown as videos when the file has camera images"""

    def __post_init__(self) -> None:
        if self.videos < 0:
            raise ValueError(f"--videos must be >= 0, got {self.videos}")


def _generate(cfg: GenerateConfig) -> int:
    from tqdm import tqdm

    from demos.generate import generate
    from replay.trajectory import pending_path

    bars = []  # made at the first progress report, so errors before it print alone

    def update(p) -> None:
        if not bars:
            # one rate on the bar, the run's own (from the workers' start): tqdm's would be timed
            # from this first report, microseconds after the bar is made
            fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"
            bars.append(tqdm(total=cfg.n, initial=p.resumed_from, unit="demo", dynamic_ncols=True, desc=cfg.env_id,
                             bar_format=fmt))
        bar = bars[0]
        bar.n = p.saved
        rate = p.successes / max(p.attempts, 1)
        retried = f", {p.retried} batches retried" if p.retried else ""
        bar.set_postfix_str(f"success {rate:.1%}, {(p.saved - p.resumed_from) / max(p.elapsed, 1e-9):.2f} demos/s{retried}", refresh=True)

    try:
        p = generate(cfg, update)
    except KeyboardInterrupt:
        for bar in bars:
            bar.close()
        pending = pending_path(cfg.out)
        where = f"{pending} ({cfg.out} is unchanged)" if pending.exists() else str(cfg.out)
        print(f"interrupted: committed episodes are in {where}; continue with --resume", file=sys.stderr)
        return 130
    finally:
        for bar in bars:
            bar.close()
    made = p.saved - p.resumed_from
    print(
        f"{cfg.env_id}: {p.saved} demos in {cfg.out} ({made} new) | {p.attempts} attempts, "
        f"{p.successes / max(p.attempts, 1):.1%} success, {p.elapsed:.1f} s, {made / max(p.elapsed, 1e-9):.2f} demos/s"
        + (f" | {p.retried} batches retried after a worker was lost" if p.retried else "")
        + (f", {p.lost} given up (counted as failed attempts)" if p.lost else "")
    )
    return 0


def _list(args) -> int:
    from demos.solutions import SOLUTIONS

    for env_id, sol in sorted(SOLUTIONS.items()):
        print(f"{env_id:24s} robots: {', '.join(sol.robots)}")
    return 0


def _info(args) -> int:
    import numpy as np

    from replay.trajectory import parts_dir, read_meta

    meta = read_meta(args.file)
    eps = meta["episodes"]
    lengths = np.array([e.get("elapsed_steps", 0) for e in eps])
    size = args.file.stat().st_size
    info = meta["env_info"]
    print(f"file        {args.file} ({size / 2**20:.2f} MiB, {size / max(len(eps), 1) / 1024:.1f} KiB per episode)")
    if parts_dir(args.file).is_dir():
        print(f"unfinished  its episodes are in {parts_dir(args.file)}; `demos generate --resume` finishes the file")
    print(f"env         {info.get('env_id')}  max_episode_steps {info.get('max_episode_steps')}")
    print(f"env kwargs  {json.dumps(info.get('env_kwargs', {}))}")
    print(f"source      {meta.get('source_type', '?')}" + (f" ({meta['source_desc']})" if meta.get("source_desc") else ""))
    if "generation" in meta:
        print(f"generation  {json.dumps(meta['generation'])}")
    if "versions" in meta:
        print(f"versions    {' '.join(f'{k} {v}' for k, v in meta['versions'].items())}")
    print(f"episodes    {len(eps)}  success {sum(bool(e.get('success')) for e in eps) / max(len(eps), 1):.1%}")
    if len(lengths):
        q = np.percentile(lengths, [0, 25, 50, 75, 100])
        print(f"length      min {q[0]:.0f}  p25 {q[1]:.0f}  median {q[2]:.0f}  p75 {q[3]:.0f}  max {q[4]:.0f}  mean {lengths.mean():.1f}")
    return 0


def _verify(args) -> int:
    from replay.verify import verify_file

    ok, total, failed = verify_file(args.file, args.num_envs, args.shuffle)
    print(f"{args.file}: {ok}/{total} episodes reproduce their recorded outcome ({ok / max(total, 1):.1%})")
    if failed:
        print(f"not reproduced: episode ids {failed[:20]}{' ...' if len(failed) > 20 else ''}")
    return 0 if not failed else 1


def _merge(args) -> int:
    from replay.trajectory import merge_files

    n = merge_files(args.inputs, args.out, args.overwrite)
    print(f"{args.out}: {n} episodes from {len(args.inputs)} files")
    return 0


def _report(args) -> int:
    from demos.report import build_report

    out = build_report(args.file, args.out, args.videos)
    print(f"{out}: report of {args.file} ({out.stat().st_size / 2**10:.0f} KiB)")
    return 0


def _generate_config() -> type[GenerateConfig]:
    from demos.generate import GenerateConfig

    return GenerateConfig


COMMANDS = {
    "generate": Command("plan and record demonstrations", _generate, _generate_config, {"--keep-failures": "--no-only-success"}),
    "list": Command("tasks with a solution and their robots", _list, ListArgs),
    "info": Command("summary of a demonstration file", _info, InfoArgs),
    "verify": Command("replay every episode's actions and count reproduced successes", _verify, VerifyArgs),
    "merge": Command("join files of one task, renumbering episodes", _merge, MergeArgs),
    "report": Command("one self-contained HTML page to judge a demonstration file before training", _report, ReportArgs),
}


def main(argv: list[str] | None = None) -> int:
    return run_cli("demos", "Motion-planned demonstrations stored as HDF5.", COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())

"""`demos`: motion-planned demonstrations.

    demos generate TASK --n N [--out PATH] [--seed S] [--num-envs B] [--workers W]
                   [--control-mode pd_joint_pos] [--obs-mode none|state]
                   [--only-success | --keep-failures] [--resume | --overwrite] [--shard i/K]
                   [--executor local|ray [--address ADDR]]
    demos list
    demos info FILE
    demos verify FILE [--num-envs B] [--shuffle SEED]
    demos merge OUT IN [IN ...] [--overwrite]
    demos report FILE [--out report.html] [--videos K]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _shard(text: str) -> tuple[int, int]:
    try:
        i, k = text.split("/")
        return int(i), int(k)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected i/K, e.g. 0/4, got {text!r}") from None


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (the usage itself is in --help)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def _executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", default="local", help="local (worker processes on this machine, default) or ray "
                                                       '(Ray actors on a cluster; pip install -e ".[ray]")')
    p.add_argument("--address", help="the Ray cluster to join, e.g. HEAD:6379 (default: a local Ray started for the run)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="demos", description="Motion-planned demonstrations stored as HDF5.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    g = sub.add_parser("generate", help="plan and record demonstrations")
    g.add_argument("task", help="task id, e.g. PickCube or PickCube-v1")
    g.add_argument("--n", type=int, required=True, help="demonstrations to save")
    g.add_argument("--out", type=Path, help="output .h5 (default out/TASK.motionplanning.CONTROL.h5)")
    g.add_argument("--seed", type=int, default=0, help="first seed")
    g.add_argument("--num-envs", type=int, default=16, help="envs run together in one batch")
    g.add_argument("--workers", type=int, help="generation workers, each with its env and planner (default: one per "
                                               "CPU of this machine, or of the Ray cluster)")
    g.add_argument("--control-mode", default="pd_joint_pos")
    g.add_argument("--obs-mode", default="none", help="none or state (render images later with replay convert)")
    g.add_argument("--robot-uids", default=None, help="the robot (default: the first the task's solution supports)")
    g.add_argument("--hold", type=int, default=1,
                   help="end an episode once the task has succeeded this many steps in a row (default 1: at first "
                        "success); a longer hold shows policies how to stay at the goal")
    g.add_argument("--speed", type=float, default=1.0,
                   help="planned motions' speed as a fraction of the planner's joint limits (2 rad/s, 5 rad/s^2); "
                        "slower demos have more, smaller steps")
    keep = g.add_mutually_exclusive_group()
    keep.add_argument("--only-success", dest="only_success", action="store_true", default=True, help="save successes only (default)")
    keep.add_argument("--keep-failures", dest="only_success", action="store_false", help="save failed attempts too")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue an interrupted run's file")
    mode.add_argument("--overwrite", action="store_true", help="replace an existing file")
    g.add_argument("--shard", type=_shard, default=(0, 1), help="i/K: this machine's part of the seed space")
    _executor_args(g)
    sub.add_parser("list", help="tasks with a solution and their robots")
    i = sub.add_parser("info", help="summary of a demonstration file")
    i.add_argument("file", type=Path)
    v = sub.add_parser("verify", help="replay every episode's actions and count reproduced successes")
    v.add_argument("file", type=Path)
    v.add_argument("--num-envs", type=int, default=16, help="episodes replayed together, each batch in a fresh env")
    v.add_argument("--shuffle", type=int, metavar="SEED", help="replay the episodes in an order shuffled by SEED")
    m = sub.add_parser("merge", help="join files of one task, renumbering episodes")
    m.add_argument("out", type=Path)
    m.add_argument("inputs", type=Path, nargs="+")
    m.add_argument("--overwrite", action="store_true")
    r = sub.add_parser("report", help="one self-contained HTML page to judge a demonstration file before training")
    r.add_argument("file", type=Path)
    r.add_argument("--out", type=Path, help="the page (default: beside FILE, NAME.report.html)")
    r.add_argument("--videos", type=int, default=3, help="episodes shown as videos when the file has camera images (default 3)")
    return p


def _generate(args) -> int:
    from tqdm import tqdm

    from demos.generate import GenerateConfig, generate
    from replay.trajectory import pending_path

    cfg = GenerateConfig(
        task=args.task, n=args.n, out=args.out, seed=args.seed, num_envs=args.num_envs,
        workers=args.workers if args.workers is not None or args.executor == "ray" else os.cpu_count() or 1,
        executor=args.executor, address=args.address,
        control_mode=args.control_mode, obs_mode=args.obs_mode, robot_uids=args.robot_uids,
        only_success=args.only_success, resume=args.resume, overwrite=args.overwrite, shard=args.shard,
        hold=args.hold, speed=args.speed,
    )
    bars = []  # made at the first progress report, so errors before it print alone

    def update(p) -> None:
        if not bars:
            bars.append(tqdm(total=cfg.n, initial=p.resumed_from, unit="demo", dynamic_ncols=True, desc=cfg.env_id))
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

    if args.num_envs < 1:
        raise ValueError(f"--num-envs must be positive, got {args.num_envs}")
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

    if args.videos < 0:
        raise ValueError(f"--videos must be >= 0, got {args.videos}")
    out = build_report(args.file, args.out, args.videos)
    print(f"{out}: report of {args.file} ({out.stat().st_size / 2**10:.0f} KiB)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"generate": _generate, "list": _list, "info": _info, "verify": _verify, "merge": _merge, "report": _report}
    try:
        return commands[args.command](args)
    except (ValueError, OSError) as e:  # bad input; TrajectoryError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a bug or a broken environment: still one line, with the type to report it
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""Measures `replay convert` as a user runs it: whole commands, timed from outside.

    python -m benchmarks.replay_convert [--n 50] [--dir /tmp/replay_bench] [--tasks PickCube-v1 ...] [--workers 1]

1. control: N PickCube demos pd_joint_pos -> pd_ee_delta_pose with state obs (target <= 5.4 s
   whole command on dev-2core, >= 99 % converted);
2. every task with a motion-planning solution: pd_joint_pos -> pd_ee_delta_pose, share converted
   (target >= 98 %; PegInsertionSide and PlugCharger >= 90 %);
3. obs: N PickCube demos -> rgbd 128 x 128 (target <= 55 s, <= 400 KB per episode).

Demos are generated first (`demos generate`, not timed) into --dir and reused on later runs.
Each line carries the 1-minute load average before and after, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path


def _demos(task: str, n: int, folder: Path) -> Path:
    path = folder / f"{task}.h5"
    if not path.exists():
        cmd = [sys.executable, "-m", "demos.cli", "generate", task, "--n", str(n), "--out", str(path)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def _timed(args: list[str]) -> tuple[float, float, str, tuple[float, float]]:
    """(wall s, CPU s of the command and its workers, its stdout, load average before / after)."""
    load0 = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "replay.cli", "convert", *args, "--overwrite", "--no-progress"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"replay convert {' '.join(args)} failed: {done.stderr.strip()}")
    return wall, cpu, done.stdout, (load0, os.getloadavg()[0])


def _summary(out: str) -> tuple[int, int, float]:
    m = re.search(r"converted (\d+)/(\d+)", out)
    kb = re.search(r"\((\d+) KB per episode\)", out)
    return int(m.group(1)), int(m.group(2)), float(kb.group(1)) if kb else float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.replay_convert", description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=50, help="demos per task")
    p.add_argument("--dir", type=Path, default=Path("/tmp/replay_bench"))
    p.add_argument("--tasks", nargs="*", help="tasks for the conversion-rate pass (default: every task with a solution)")
    p.add_argument("--workers", type=int, default=1, help="passed to replay convert")
    p.add_argument("--skip-rgbd", action="store_true")
    args = p.parse_args(argv)
    from demos.solutions import SOLUTIONS

    args.dir.mkdir(parents=True, exist_ok=True)
    tasks = args.tasks or sorted(SOLUTIONS)
    w = ["--workers", str(args.workers)]
    print(f"cpus {os.cpu_count()}, workers {args.workers}, {args.n} demos per task, files in {args.dir}")
    print("| what | task | converted | whole command: wall | CPU | KB per episode | load before / after |")
    print("|---|---|---|---|---|---|---|")
    notes: list[str] = []
    pick = _demos("PickCube-v1", args.n, args.dir)
    wall, cpu, out, load = _timed([str(pick), "--obs-mode", "state", "--control-mode", "pd_ee_delta_pose", *w])
    ok, total, kb = _summary(out)
    print(f"| pd_joint_pos -> pd_ee_delta_pose, state obs | PickCube-v1 | {ok}/{total} ({ok / total:.1%}) | {wall:.2f} s | {cpu:.2f} s | {kb:.0f} | {load[0]:.1f} / {load[1]:.1f} |")
    for task in tasks:
        if task == "PickCube-v1":
            continue
        path = _demos(task, args.n, args.dir)
        wall, cpu, out, load = _timed([str(path), "--control-mode", "pd_ee_delta_pose", *w])
        ok, total, kb = _summary(out)
        print(f"| pd_joint_pos -> pd_ee_delta_pose | {task} | {ok}/{total} ({ok / total:.1%}) | {wall:.2f} s | {cpu:.2f} s | {kb:.0f} | {load[0]:.1f} / {load[1]:.1f} |")
        notes += [f"{task}: {line.strip()}" for line in out.splitlines()[1:]]
    if not args.skip_rgbd:
        wall, cpu, out, load = _timed([str(pick), "--obs-mode", "rgbd", "--cam-width", "128", "--cam-height", "128", *w])
        ok, total, kb = _summary(out)
        print(f"| obs -> rgbd 128x128 (2 cameras) | PickCube-v1 | {ok}/{total} ({ok / total:.1%}) | {wall:.2f} s | {cpu:.2f} s | {kb:.0f} | {load[0]:.1f} / {load[1]:.1f} |")
    for line in notes:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

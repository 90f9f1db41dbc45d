"""Collect the results.json of finished runs into one report: a markdown table and one JSON file.

    python -m policies.report runs/targets/*/ --out runs/targets [--note "what was run, where"]

writes OUT/report.md and OUT/results.json (each replaced whole, never appended to) and prints the
table. Run folders without results.json (failed, or still running) are named and left out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

HEADER = ("| run | env | policy | obs | control | recipe | data episodes | steps | train min | success_at_end [95 % CI] | "
          "success_once [95 % CI] | episode len | episodes |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")


def row(r: dict[str, Any]) -> str:
    """One table row of a run's results.json."""
    recipe = r.get("recipe") or {}  # runs of `policies recipe run`
    made = f"`{recipe['file']}` | {recipe['episodes']}" if recipe else " | "
    head = (f"| {Path(r.get('run', '')).name} | {r['env_id']} | {r['policy']} | {r['obs_mode']} | {r['control_mode']} | "
            f"{made} | {r['steps']} | {r['train_minutes']} | ")
    f = r.get("final") or {}
    if not f:
        return head + "no final eval | | | |\n"
    lo, hi = f["success_at_end_ci95"]
    olo, ohi = f["success_once_ci95"]
    return (head + f"{f['success_at_end']:.2f} [{lo:.2f}, {hi:.2f}] | {f['success_once']:.2f} [{olo:.2f}, {ohi:.2f}] | "
            f"{f['episode_len']:.1f} | {f['episodes']} |\n")


def markdown(results: list[dict[str, Any]], note: str = "") -> str:
    """The whole report: a title, the note, one row per run."""
    return "# Policy runs\n\n" + (f"{note}\n\n" if note else "") + HEADER + "".join(row(r) for r in results)


def _write(path: Path, text: str) -> None:
    """Write under a temporary name and rename, so an interrupted report never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _fail(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m policies.report", description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="run folders (each with results.json)")
    ap.add_argument("--out", default="", help="folder to write report.md and results.json into (default: print only)")
    ap.add_argument("--note", default="", help="line written above the table (what was run, on which machine)")
    args = ap.parse_args(argv)
    results = []
    for run in args.runs:
        if not Path(run).is_dir():
            return _fail(f"{run}: not a run folder")
        path = Path(run) / "results.json"
        if not path.is_file():
            print(f"{run}: no results.json (run failed or still running)")
            continue
        try:
            r = json.loads(path.read_text())
            row(r)
        except (ValueError, KeyError, TypeError) as e:
            return _fail(f"{path}: not a policies results file ({type(e).__name__}: {e})")
        results.append(r)
    text = markdown(results, args.note)
    print(text, end="")
    if args.out:
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            return _fail(f"--out {out}: not a folder")
        out.mkdir(parents=True, exist_ok=True)
        _write(out / "results.json", json.dumps(results, indent=1))
        _write(out / "report.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

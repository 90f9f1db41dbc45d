"""Collect the results.json of finished runs into one JSON file and rows of docs/RESULTS.md.

    python -m policies.report runs/diffusion_state_PickCube runs/... --json results.json --markdown docs/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HEADER = ("| env | policy | obs | control | steps | train min | success_at_end [95 % CI] | success_once [95 % CI] | "
          "episode len | episodes |\n|---|---|---|---|---|---|---|---|---|---|\n")


def row(r: dict) -> str:
    f = r.get("final") or {}
    if not f:
        return f"| {r['env_id']} | {r['policy']} | {r['obs_mode']} | {r['control_mode']} | {r['steps']} | {r['train_minutes']} | no final eval | | | |\n"
    lo, hi = f["success_at_end_ci95"]
    olo, ohi = f["success_once_ci95"]
    return (f"| {r['env_id']} | {r['policy']} | {r['obs_mode']} | {r['control_mode']} | {r['steps']} | {r['train_minutes']} | "
            f"{f['success_at_end']:.2f} [{lo:.2f}, {hi:.2f}] | {f['success_once']:.2f} [{olo:.2f}, {ohi:.2f}] | "
            f"{f['episode_len']:.1f} | {f['episodes']} |\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m policies.report", description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="run folders (each with results.json)")
    ap.add_argument("--json", default="", help="write all results to this file")
    ap.add_argument("--markdown", default="", help="append table rows to this markdown file (header added if new)")
    ap.add_argument("--note", default="", help="line written above the rows")
    args = ap.parse_args(argv)
    results = []
    for run in args.runs:
        path = Path(run) / "results.json"
        if path.is_file():
            results.append(json.loads(path.read_text()))
        else:
            print(f"{run}: no results.json (run failed or still running)")
    rows = "".join(row(r) for r in results)
    print(HEADER + rows, end="")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.markdown:
        md = Path(args.markdown)
        text = md.read_text() if md.is_file() else "# Results\n\nPolicies trained on 100 demonstrations, evaluated on 100 fresh seeds.\n"
        text += f"\n{args.note}\n\n" + HEADER + rows if args.note or "| env |" not in text else rows
        md.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

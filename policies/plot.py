"""The end-of-run plot: training/validation loss and evaluation success against training step."""

from __future__ import annotations

import csv
from pathlib import Path


def _series(rows: list[dict[str, str]], key: str) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for r in rows:
        if r.get(key) not in (None, ""):
            xs.append(int(float(r["step"])))
            ys.append(float(r[key]))
    return xs, ys


def plot_curves(run_dir: str | Path, png: str | Path, title: str = "") -> Path | None:
    """curves.png from a run's CSV logs (metrics.part*.csv of resumed runs, then metrics.csv)."""
    files = sorted(Path(run_dir).glob("metrics.part*.csv"), key=lambda p: int(p.stem.split("part")[1]))
    files += [p for p in [Path(run_dir) / "metrics.csv"] if p.is_file()]
    if not files:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for path in files:
        with open(path) as f:
            rows += list(csv.DictReader(f))
    fig, (ax_loss, ax_eval) = plt.subplots(1, 2, figsize=(11, 4))
    for key in ("train/loss", "val/loss"):
        xs, ys = _series(rows, key)
        if xs:
            ax_loss.plot(xs, ys, label=key, marker="o" if key.startswith("val") else None, markersize=3)
    ax_loss.set(xlabel="training step", ylabel="loss", yscale="log", title="loss")
    if ax_loss.lines:
        ax_loss.legend()
    for key in ("eval/success_at_end", "eval/success_once"):
        xs, ys = _series(rows, key)
        if xs:
            ax_eval.plot(xs, ys, marker="o", label=key)
    ax_eval.set(xlabel="training step", ylabel="success rate", ylim=(-0.02, 1.02), title="evaluation")
    if ax_eval.lines:
        ax_eval.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return Path(png)

"""Parity tables: what ManiSkill 3.0.1 defines for a task, controller or observation carrying its
name, beside what ours measures.

Each module in this package that defines `TABLE` contributes one table. A row holds ManiSkill's
value (read from the `mani-skill==3.0.1` wheel's source; `source` names the file) and a function
that measures ours on a live env. docs/PARITY.md is rendered from these tables
(`python -m tests.parity > docs/PARITY.md`) and tests/test_parity.py holds both to each other:
every row equal within its tolerance, or carrying a stated deviation.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class Row:
    """One compared value. `ours` measures ours (it builds what it needs); `deviation`, when
    non-empty, states why ours differs on purpose (the row then need not be equal)."""

    name: str
    maniskill: Any
    ours: Callable[[], Any]
    source: str = ""
    deviation: str = ""
    tol: float = 1e-6
    pending: str = ""  # known unequal and not yet mended (the work left): said on the page, checked still unequal


@dataclass(frozen=True)
class Table:
    """`title`: an env id (a task's table) or a topic ("Controllers", "Observations", ...)."""

    title: str
    rows: Sequence[Row]
    notes: str = ""
    env_id: str | None = None  # set for a task's table: the registry test requires one per ManiSkill id
    order: int = 100  # place in docs/PARITY.md (tasks sort by title after the topics)
    extra: dict = field(default_factory=dict)


def _flat(v: Any) -> list:
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    if hasattr(v, "tolist"):
        return _flat(v.tolist())
    return [v]


def equal(a: Any, b: Any, tol: float = 1e-6) -> bool:
    """Numbers (and nested sequences of them) within tol; anything else by ==."""
    fa, fb = _flat(a), _flat(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
            if not math.isclose(float(x), float(y), rel_tol=0.0, abs_tol=tol):
                return False
        elif x != y:
            return False
    return True


def tables() -> list[Table]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        table = getattr(module, "TABLE", None)
        if table is not None:
            found.append(table)
    return sorted(found, key=lambda t: (t.order, t.title))


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(_show(x) for x in v) + ")"
    if hasattr(v, "tolist"):
        return _show(v.tolist())
    return str(v)


def measure(table: Table) -> list[tuple[Row, Any, bool]]:
    out = []
    for row in table.rows:
        ours = row.ours()
        out.append((row, ours, equal(row.maniskill, ours, row.tol)))
    return out


def render(measured: Sequence[tuple[Table, list[tuple[Row, Any, bool]]]]) -> str:
    lines = [
        "# Parity with ManiSkill 3.0.1",
        "",
        "Every task, controller, camera and observation that carries a ManiSkill name is held to what",
        "ManiSkill 3.0.1 defines (read from the `mani-skill==3.0.1` wheel's source; it is never a",
        "dependency). This page is rendered from the tables in `tests/parity/` by",
        "`python -m tests.parity > docs/PARITY.md`, and `tests/test_parity.py` fails when a value or",
        "this page drifts. A row that differs on purpose says why under *deviation*.",
        "",
    ]
    for table, rows in measured:
        lines += [f"## {table.title}", ""]
        if table.notes:
            lines += [table.notes.strip(), ""]
        lines += ["| value | ManiSkill 3.0.1 | ours | equal | source / deviation |", "|---|---|---|---|---|"]
        for row, ours, ok in rows:
            mark = "yes" if ok else "no (deviation)" if row.deviation else "**no**"
            why = row.deviation or (f"`{row.source}`" if row.source else "")
            if row.pending:
                why += f" — not yet equal: {row.pending}"
            lines.append(f"| {row.name} | {_show(row.maniskill)} | {_show(ours)} | {mark} | {why} |")
        lines.append("")
    return "\n".join(lines)

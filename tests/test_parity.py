"""Every env id that carries a ManiSkill name has a parity table (tests/parity/), every row of
every table is equal to ManiSkill 3.0.1's value or states its deviation, and docs/PARITY.md is
the tables as measured now."""

from pathlib import Path

import pytest

import envs
from tests.parity import equal, measure, render, tables
from tests.marks import fast_only, slow

# ids of our own, not ManiSkill's: they need no table
OWN_IDS = {"CartpoleBalanceBenchmark-v1"}
DOC = Path(__file__).parent.parent / "docs" / "PARITY.md"
TABLES = tables()


def test_every_maniskill_id_has_a_table():
    covered = {t.env_id for t in TABLES if t.env_id}
    missing = sorted(set(envs.env_ids()) - OWN_IDS - covered)
    assert not missing, f"no parity table for {missing}"


# the quick subset (-m "not slow") checks the tables that measure little
@pytest.mark.parametrize("table", fast_only(TABLES, *[t for t in TABLES if t.title in ("Robots", "Physics", "Env state")]),
                         ids=[t.title for t in TABLES])
def test_table_rows_equal_or_stated(table):
    for row, ours, ok in measure(table):
        if row.pending:  # open work, stated on the page; mended rows must drop the mark
            assert not ok, f"{table.title}: {row.name} is equal now: drop its pending mark"
            continue
        assert ok or row.deviation, f"{table.title}: {row.name}: ManiSkill {row.maniskill!r}, ours {ours!r}"
        assert row.source or row.deviation, f"{table.title}: {row.name}: no source named"


@slow
def test_doc_is_the_tables():
    assert DOC.exists(), "docs/PARITY.md missing: python -m tests.parity > docs/PARITY.md"
    assert DOC.read_text() == render([(t, measure(t)) for t in TABLES]), "docs/PARITY.md is stale: python -m tests.parity > docs/PARITY.md"


def test_equal_helper():
    assert equal(0.1, 0.1 + 1e-9) and not equal(0.1, 0.11) and equal((1, 2.0), [1, 2]) and not equal((1,), (1, 2))

"""Test markers (registered in pyproject.toml):

* `slow`: more than about half a second of CPU, or one of many registry entries of the same
  check; `pytest -m "not slow"` is the quick subset (about a minute on two cores).
* `render`: renders through Vulkan (lavapipe on a CPU-only machine).
"""

from __future__ import annotations

from typing import Any, Iterable

import pytest

slow = pytest.mark.slow
render = pytest.mark.render


def fast_only(values: Iterable[Any], *fast: Any) -> list:
    """`values` for pytest.mark.parametrize with every entry but those in `fast` marked slow: the
    quick subset runs a registry-driven check on one representative, the full run on every entry.
    A tuple entry is one value per argument name."""
    out = []
    for v in values:
        if v in fast:
            out.append(v)
        else:
            out.append(pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=slow))
    return out

"""Import-time helpers."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a block of imports. Importing torch, SAPIEN and the
    tasks creates about a million objects, none of them garbage, and the collector, started by
    allocation counts, walks the survivors again and again: about 5 % of the import's CPU."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

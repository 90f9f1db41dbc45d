"""`python -m tests.parity > docs/PARITY.md`: render the parity tables, measured now."""

import sys

from tests.parity import measure, render, tables

if __name__ == "__main__":
    sys.stdout.write(render([(t, measure(t)) for t in tables()]))

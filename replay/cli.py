"""`replay`: trajectory conversion (lands with the replay issue)."""

import sys


def main(argv: list[str] | None = None) -> int:
    print("error: `replay` has no commands yet: trajectory conversion is not built yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

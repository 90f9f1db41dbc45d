"""`demos`: motion-planned demonstrations (generation lands with the demos issue)."""

import sys


def main(argv: list[str] | None = None) -> int:
    print("error: `demos` has no commands yet: demonstration generation is not built yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

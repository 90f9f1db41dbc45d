"""`policies`: imitation-learning trainers (land with the policies issue)."""

import sys


def main(argv: list[str] | None = None) -> int:
    print("error: `policies` has no commands yet: training is not built yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

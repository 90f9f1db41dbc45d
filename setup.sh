#!/usr/bin/env bash
# Sets up SkillForge in ./.venv on a fresh machine (python3 + pip): torch's CPU build first, so the
# project's own `torch` requirement does not pull a CUDA build, then the project and its pins.
#   bash setup.sh          # the package and its command-line tools
#   bash setup.sh --test   # ... plus what the tests need
set -euo pipefail
cd "$(dirname "$0")"
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"
[ -x .venv/bin/python ] || python3 -m venv .venv
py=.venv/bin/python
$py -m pip install -q --upgrade pip
$py -c "import torch" 2>/dev/null || $py -m pip install -q torch==2.13.0
$py -m pip install -q -e ".${extras}"
echo "SkillForge is set up in .venv (torch $($py -c 'import torch; print(torch.__version__)'))"

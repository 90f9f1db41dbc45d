#!/usr/bin/env bash
# Sets up SkillForge in ./.venv on a fresh machine (python3 + pip): torch's CPU build first, so the
# project's own `torch` requirement does not pull a CUDA build, then the project and its pins.
# On a machine without a GPU it also installs Mesa's lavapipe (software Vulkan, scripts/lavapipe.sh)
# so that cameras render; `python -m envs.doctor` reports which Vulkan device SAPIEN uses.
#   bash setup.sh          # the package and its command-line tools
#   bash setup.sh --test   # ... plus what the tests need (the camera tests render: lavapipe is required;
#                          # the report test opens pages in headless Chromium: Debian's chromium package)
set -euo pipefail
cd "$(dirname "$0")"
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"
[ -x .venv/bin/python ] || python3 -m venv .venv
py=.venv/bin/python
$py -m pip install -q --upgrade pip
$py -c "import torch" 2>/dev/null || $py -m pip install -q torch==2.13.0
$py -m pip install -q -e ".${extras}"
# Bytecode for every installed module, once: where PYTHONDONTWRITEBYTECODE is set (it is on our dev
# and CI machines) pip writes none and Python caches none, so each process compiled torch's 2,000+
# modules from source again (`import torch` 4.4-5.4 s on dev-2core; 2.3 s compiled). A few test
# files of third-party packages do not compile; they are never imported.
$py -m compileall -q -j 0 "$($py -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" envs demos replay policies \
  >/dev/null 2>&1 || true
if ls /dev/nvidiactl /dev/dri/renderD* >/dev/null 2>&1; then
  echo "GPU device found: cameras render with its Vulkan driver"
elif bash scripts/lavapipe.sh >/dev/null; then
  echo "no GPU: cameras render with lavapipe (software Vulkan)"
elif [ -n "$extras" ]; then
  echo "setup.sh: installing lavapipe failed; the camera tests need it (see scripts/lavapipe.sh)" >&2
  exit 1
else
  echo "setup.sh: warning: lavapipe not installed; state obs modes work, visual ones need a Vulkan device" >&2
fi
if [ -n "$extras" ] && ! command -v chromium >/dev/null; then
  (apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null) \
    || { echo "setup.sh: installing chromium failed; tests/test_dataset_report.py needs it (apt-get install chromium, as root)" >&2; exit 1; }
  echo "chromium installed (tests/test_dataset_report.py opens the dataset report in it)"
fi
echo "SkillForge is set up in .venv (torch $($py -c 'import torch; print(torch.__version__)'))"

#!/usr/bin/env bash
# After ../shared/device/build-site.sh: the policies' own dependencies that the H200 host's image
# lacks (tyro for the CLI, tensorboardX for the logs, matplotlib for curves.png, with their pure
# dependencies; ~17 MiB), packed as .device/extra.tar.xz, and a line in .device/prelude.sh that puts
# them after the image's packages on PYTHONPATH (the image's numpy, torch and lightning stay first).
# Without it `policies train` stops there at `import tyro`.  Run from the project's root:
#   bash ../shared/device/build-site.sh && bash scripts/device_extras.sh
set -euo pipefail
[ -f .device/prelude.sh ] || { echo "error: run ../shared/device/build-site.sh first (no .device/prelude.sh)" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
PLAT="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp $PLAT -d "$tmp/wheels" \
  "tyro>=0.8" "tensorboardX>=2.6" "matplotlib>=3.7"
rm -f "$tmp"/wheels/numpy-*.whl  # the image's numpy 2 serves
mkdir "$tmp/xpy"
for w in "$tmp"/wheels/*.whl; do python3 -m zipfile -e "$w" "$tmp/xpy/"; done
find "$tmp/xpy" \( -name __pycache__ -o -name tests \) -prune -exec rm -rf {} +
rm -rf "$tmp/xpy/matplotlib/mpl-data/sample_data"
tar -C "$tmp" -cJf .device/extra.tar.xz xpy
line='tar -C /tmp/dev -xJf .device/extra.tar.xz && export PYTHONPATH=$PYTHONPATH:/tmp/dev/xpy  # scripts/device_extras.sh'
grep -qF "$line" .device/prelude.sh || echo "$line" >> .device/prelude.sh
echo ".device/extra.tar.xz: $(du -h .device/extra.tar.xz | cut -f1)"

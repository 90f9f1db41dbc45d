#!/usr/bin/env bash
# After ../shared/device/build-site.sh: what the H200 host's image lacks, with pure dependencies,
# packed in two archives: .device/cli.tar.xz (tyro, which every CLI needs; < 1 MiB) and
# .device/extra.tar.xz (the policies' tensorboardX for the logs and matplotlib for curves.png;
# ~16 MiB; carry it only for training). Lines in .device/prelude.sh put them after the image's
# packages on PYTHONPATH (the image's numpy, torch and lightning stay first); the extra archive is
# unpacked only when it was carried.  Run from the project's root:
#   bash ../shared/device/build-site.sh && bash scripts/device_extras.sh
set -euo pipefail
[ -f .device/prelude.sh ] || { echo "error: run ../shared/device/build-site.sh first (no .device/prelude.sh)" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
PLAT="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp $PLAT -d "$tmp/wheels" \
  "tyro>=0.8" "tensorboardX>=2.6" "matplotlib>=3.7"
rm -f "$tmp"/wheels/numpy-*.whl  # the image's numpy 2 serves
unpack() {  # unpack DIR WHEEL-GLOBS...: the wheels into DIR/xpy
  local dir=$1; shift; mkdir -p "$dir/xpy"
  for g in "$@"; do for w in "$tmp"/wheels/$g; do python3 -m zipfile -e "$w" "$dir/xpy/"; rm "$w"; done; done
  find "$dir/xpy" \( -name __pycache__ -o -name tests \) -prune -exec rm -rf {} +
}
unpack "$tmp/cli" "tyro-*.whl" "docstring_parser-*.whl" "typeguard-*.whl"
unpack "$tmp/extra" "*.whl"
rm -rf "$tmp/extra/xpy/matplotlib/mpl-data/sample_data"
tar -C "$tmp/cli" -cJf .device/cli.tar.xz xpy
tar -C "$tmp/extra" -cJf .device/extra.tar.xz xpy
sed -i '/scripts\/device_extras.sh/d' .device/prelude.sh
cat >> .device/prelude.sh <<'LINES'
tar -C /tmp/dev -xJf .device/cli.tar.xz && export PYTHONPATH=$PYTHONPATH:/tmp/dev/xpy  # scripts/device_extras.sh
if [ -f .device/extra.tar.xz ]; then tar -C /tmp/dev -xJf .device/extra.tar.xz; fi  # scripts/device_extras.sh
LINES
echo ".device/cli.tar.xz: $(du -h .device/cli.tar.xz | cut -f1), .device/extra.tar.xz: $(du -h .device/extra.tar.xz | cut -f1)"

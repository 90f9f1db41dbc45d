#!/usr/bin/env bash
# After ../shared/device/build-site.sh: what the offline H200 host needs to run the Ray executor
# beside motion planning, small enough to travel with the simulation archive (the tree and its
# carry must stay under 64 MiB):
#   .device/ray.tar.xz        Ray 2.60 without its Java jars, dashboard front end and libraries
#                             (rllib, data, serve, train, tune, llm), binaries stripped, with
#                             jsonschema and its dependencies (the image has Ray's others); ~18 MiB
#   .device/plan-lite.tar.xz  the plan profile without its scipy (~12 MiB saved). The image's own
#                             scipy needs NumPy >= 2, so under the profile's NumPy 1.26 neither
#                             scipy nor toppra imports: planning that reaches toppra (time
#                             parametrisation of an RRT path) fails there; the screw and IK paths
#                             the cube tasks use do not need it
# There, after `source .device/prelude.sh` (without `plan`):
#   tar -C /tmp/dev -xJf .device/plan-lite.tar.xz && mkdir -p /tmp/dev/ray && tar -C /tmp/dev/ray -xJf .device/ray.tar.xz
#   find /tmp/dev/ray/ray/core/src -type f -exec chmod +x {} +
#   export PYTHONPATH=/tmp/dev/plan:$PYTHONPATH:/tmp/dev/ray
# and carry .device/prelude.sh, .device/gl, .device/sim.tar.xz, .device/cli.tar.xz and these two.
# Run from the project's root.
set -euo pipefail
[ -f .device/plan.tar.xz ] || { echo "error: run ../shared/device/build-site.sh first (no .device/plan.tar.xz)" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
PLAT="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLAT -d "$tmp/wheels" \
  "ray==2.60.*" jsonschema jsonschema-specifications referencing rpds-py
mkdir -p "$tmp/ray"
for w in "$tmp"/wheels/*.whl; do python3 -m zipfile -e "$w" "$tmp/ray"; done
rm -rf "$tmp"/ray/ray/{jars,rllib,data,serve,train,tune,llm,dashboard/client} "$tmp"/ray/ray-*.dist-info/RECORD
strip --strip-unneeded "$tmp"/ray/ray/_raylet.so "$tmp"/ray/ray/core/src/ray/gcs/gcs_server "$tmp"/ray/ray/core/src/ray/raylet/raylet
find "$tmp/ray" -name __pycache__ -prune -exec rm -rf {} +
chmod +x "$tmp"/ray/ray/core/src/ray/gcs/gcs_server "$tmp"/ray/ray/core/src/ray/raylet/raylet  # zipfile drops the mode
XZ_OPT="-9e -T0" tar -C "$tmp/ray" -cJf .device/ray.tar.xz .
tar -C "$tmp" -xJf .device/plan.tar.xz
rm -rf "$tmp"/plan/scipy "$tmp"/plan/scipy.libs "$tmp"/plan/scipy-*.dist-info
XZ_OPT="-9e -T0" tar -C "$tmp" -cJf .device/plan-lite.tar.xz plan
echo ".device/ray.tar.xz: $(du -h .device/ray.tar.xz | cut -f1), .device/plan-lite.tar.xz: $(du -h .device/plan-lite.tar.xz | cut -f1)"

#!/usr/bin/env bash
# Software Vulkan (Mesa lavapipe, >= 25) for SAPIEN rendering on a machine without a GPU.
# Debian 12's own lavapipe (Mesa 22.3) lacks descriptorBindingPartiallyBound, which SAPIEN requires,
# so this takes mesa-vulkan-drivers from the bookworm-backports suite of the mirror apt already uses,
# unpacks it under PREFIX (nothing is installed system-wide) and writes an ICD file there.
# The runtime libraries it needs come from the machine's own suite (apt-get install: run as root).
# Usage: eval "$(bash scripts/lavapipe.sh [PREFIX])"   -> exports VK_ICD_FILENAMES
# Exporting is optional: `envs` finds the ICD at the default PREFIX by itself
# (envs/sensors/vulkan.py: $SKILLFORGE_LAVAPIPE, else ${XDG_CACHE_HOME:-~/.cache}/skillforge/lavapipe).
set -euo pipefail
PREFIX=${1:-${SKILLFORGE_LAVAPIPE:-${XDG_CACHE_HOME:-$HOME/.cache}/skillforge/lavapipe}}
ICD=$PREFIX/lvp_icd.json
if [ -f "$ICD" ]; then echo "export VK_ICD_FILENAMES=$ICD"; exit 0; fi
# runtime libraries of the backported driver and the Vulkan loader, from the machine's own suite
if ! dpkg -s libvulkan1 libllvm15 libxcb-dri3-0 libxcb-present0 libxcb-randr0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxshmfence1 libwayland-client0 libx11-xcb1 libelf1 >/dev/null 2>&1; then
  (apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    libvulkan1 libllvm15 libxcb-dri3-0 libxcb-present0 libxcb-randr0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 \
    libxshmfence1 libwayland-client0 libx11-xcb1 libelf1 libdrm2 >/dev/null) || { echo "apt-get install of runtime libraries failed" >&2; exit 1; }
fi
mkdir -p "$PREFIX"/apt/lists/partial "$PREFIX"/apt/cache/archives/partial "$PREFIX"/root
# the Debian mirror apt is configured with (first 'URIs:' in deb822 sources, else first 'deb' line)
MIRROR=$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 | awk '{print $2}')
[ -n "$MIRROR" ] || MIRROR=$(grep -h '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | head -1 | awk '{print $2}')
echo "deb $MIRROR bookworm-backports main" > "$PREFIX/apt/sources.list"
O="-o Dir::Etc::SourceList=$PREFIX/apt/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$PREFIX/apt/lists -o Dir::Cache=$PREFIX/apt/cache -o APT::Sandbox::User=root"
apt-get $O update >/dev/null
VER=$(apt-cache $O madison mesa-vulkan-drivers | awk '$3 ~ /bpo12/ {print $3; exit}')
[ -n "$VER" ] || { echo "no backports mesa-vulkan-drivers found" >&2; exit 1; }
(cd "$PREFIX" && apt-get $O download "mesa-vulkan-drivers=$VER" >/dev/null)
dpkg-deb -x "$PREFIX"/mesa-vulkan-drivers_*.deb "$PREFIX/root"
LIB=$(find "$PREFIX/root" -name 'libvulkan_lvp.so' | head -1)
SRC=$(find "$PREFIX/root" -name 'lvp_icd*.json' | head -1)
sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$LIB\"#" "$SRC" > "$ICD"
echo "export VK_ICD_FILENAMES=$ICD"

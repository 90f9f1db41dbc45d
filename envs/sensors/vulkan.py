"""Which Vulkan driver SAPIEN renders with.

A machine with a GPU (an NVIDIA, AMD or Intel device node) keeps the Vulkan loader's own
choice. A CPU-only machine renders with Mesa's lavapipe, which `scripts/lavapipe.sh` (run by
`setup.sh`) unpacks under `lavapipe_prefix()`; Debian 12's own lavapipe is too old for SAPIEN.
`configure_icd` points the loader there when the user has chosen no driver
(VK_ICD_FILENAMES / VK_DRIVER_FILES unset). It must run before the first Vulkan instance is
made, i.e. before SAPIEN's first RenderSystem: `render_system()` does both. State-only envs
never call anything here.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

ICD_VARIABLES = ("VK_ICD_FILENAMES", "VK_DRIVER_FILES")


def lavapipe_prefix() -> Path:
    """Where scripts/lavapipe.sh installs lavapipe (override with SKILLFORGE_LAVAPIPE)."""
    if os.environ.get("SKILLFORGE_LAVAPIPE"):
        return Path(os.environ["SKILLFORGE_LAVAPIPE"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "skillforge" / "lavapipe"


def lavapipe_icd() -> Path | None:
    icd = lavapipe_prefix() / "lvp_icd.json"
    return icd if icd.is_file() else None


def gpu_device_nodes() -> list[str]:
    """Device files of GPUs a Vulkan driver could use (NVIDIA's control node, DRM render nodes)."""
    return sorted(glob.glob("/dev/nvidiactl") + glob.glob("/dev/dri/renderD*"))


def configure_icd() -> str:
    """Choose the Vulkan driver for this process (before SAPIEN makes its Vulkan instance) and
    say which: the user's, the loader's default (a GPU is present), or the project's lavapipe."""
    for var in ICD_VARIABLES:
        if os.environ.get(var):
            return f"{var}={os.environ[var]} (set before SkillForge looked)"
    if gpu_device_nodes():
        return "the Vulkan loader's default drivers (a GPU device node is present)"
    icd = lavapipe_icd()
    if icd is None:
        return "the Vulkan loader's default drivers (no GPU, and no project lavapipe: run `bash scripts/lavapipe.sh`)"
    os.environ["VK_ICD_FILENAMES"] = str(icd)
    # lavapipe draws each small picture without its rasterizer threads: less CPU per picture,
    # and faster on a few shared cores (rgbd N = 16 on 2 cores: 394 env-steps/s against 313 with
    # lavapipe's default threads); export LP_NUM_THREADS to change
    os.environ.setdefault("LP_NUM_THREADS", "0")
    return f"the project's lavapipe ({icd}, LP_NUM_THREADS={os.environ['LP_NUM_THREADS']})"


def render_system():
    """A new SAPIEN RenderSystem on the chosen Vulkan device, or a RuntimeError that says what
    to do. All render systems of the process share one Vulkan device."""
    configure_icd()
    import sapien

    try:
        system = sapien.render.RenderSystem()
    except RuntimeError as e:
        raise RuntimeError(
            f"SAPIEN found no usable Vulkan device ({e}). Visual obs modes and render() need one: on a "
            "CPU-only machine run `bash scripts/lavapipe.sh` (setup.sh does); `python -m envs.doctor` says more. "
            "State obs modes need no Vulkan."
        ) from None
    return system

"""Which Vulkan device SAPIEN renders with here, and when none works, why and what to install.

    python -m envs.doctor

Exit status 0 when a test picture renders, 1 otherwise. State obs modes need no Vulkan at all;
visual obs modes and render() do.
"""

from __future__ import annotations

import os
import subprocess
import sys

from envs.sensors.vulkan import ICD_VARIABLES, configure_icd, gpu_device_nodes, lavapipe_icd, lavapipe_prefix

# Runs in a child process: a broken driver can crash the process that loads it.
_PROBE = """
import warnings; warnings.filterwarnings("ignore")
import numpy as np, sapien
print("DEVICES", sapien.render.get_device_summary().replace(chr(10), " | "))
system = sapien.render.RenderSystem()
print("DEVICE", system.device.name)
import gymnasium as gym, envs
env = gym.make("PickCube-v1", num_envs=1, obs_mode="rgbd", sensor_configs={"width": 32, "height": 32})
obs, _ = env.reset(seed=0)
rgb = obs["sensor_data"]["base_camera"]["rgb"].numpy()
print("PICTURE", rgb.shape, int(rgb.std() > 0))
"""


def _advice(output: str, user_icd: dict[str, str]) -> list[str]:
    lines = []
    for var, value in user_icd.items():
        missing = [f for f in value.split(os.pathsep) if f and not os.path.isfile(f)]
        if missing:
            lines.append(f"{var} names file(s) that do not exist: {', '.join(missing)}. Unset it to let SkillForge choose.")
    if not gpu_device_nodes() and lavapipe_icd() is None:
        lines.append(
            "No GPU and no project lavapipe. Install it with `bash scripts/lavapipe.sh` (needs root for apt-get; "
            "`bash setup.sh` runs it on CPU-only machines)."
        )
    if "failed to find a rendering device" in output or "descriptorBindingPartiallyBound" in output:
        lines.append(
            "SAPIEN rejected every Vulkan driver it found. Debian 12's own lavapipe (Mesa 22.3) lacks "
            "descriptorBindingPartiallyBound; scripts/lavapipe.sh installs Mesa >= 25 lavapipe under "
            f"{lavapipe_prefix()}."
        )
    if "libvulkan" in output:
        lines.append("The Vulkan loader is missing: `apt-get install libvulkan1` (scripts/lavapipe.sh does).")
    if any(n.startswith("/dev/nvidia") for n in gpu_device_nodes()):
        lines.append(
            "An NVIDIA GPU is present: its Vulkan driver comes with the NVIDIA driver (libnvidia-gl / "
            "nvidia_icd.json in /usr/share/vulkan/icd.d); check `nvidia-smi` and that the container "
            "exposes the graphics capability (NVIDIA_DRIVER_CAPABILITIES=all)."
        )
    if not lines:
        lines.append("Set VK_LOADER_DEBUG=error,warn and run again to see what the Vulkan loader tried.")
    return lines


def main(argv: list[str] | None = None) -> int:
    user_icd = {v: os.environ[v] for v in ICD_VARIABLES if os.environ.get(v)}
    choice = configure_icd()
    print(f"GPU device nodes : {', '.join(gpu_device_nodes()) or 'none'}")
    print(f"project lavapipe : {lavapipe_icd() or f'not installed (expected under {lavapipe_prefix()})'}")
    print(f"user ICD setting : {user_icd or 'none'}")
    print(f"Vulkan driver    : {choice}")
    probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    out = probe.stdout + probe.stderr
    found = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in probe.stdout.splitlines() if " " in line}
    if "DEVICES" in found:
        print(f"SAPIEN sees      : {found['DEVICES']}")
    if probe.returncode == 0 and found.get("PICTURE", "").endswith(" 1"):
        print(f"renders with     : {found['DEVICE']}")
        print("OK: visual obs modes and render() work here.")
        return 0
    print("FAILED: SAPIEN could not render a test picture.")
    tail = [line for line in out.strip().splitlines() if line.strip()][-3:]
    for line in tail:
        print(f"  | {line}")
    for line in _advice(out, user_icd):
        print(f"- {line}")
    return 1


if __name__ == "__main__":
    sys.exit(main())

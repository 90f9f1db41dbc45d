"""Batched SAPIEN manipulation environments. `import envs` registers every task with gymnasium:

    import gymnasium as gym, envs
    env = gym.make("PickCube-v1", num_envs=64, obs_mode="state", control_mode="pd_joint_delta_pos")
"""

import warnings

# SAPIEN says this at import on machines without a system Vulkan loader; state-only work needs none.
warnings.filterwarnings("ignore", message="Failed to find system libvulkan")

from envs.imports import collector_paused

with collector_paused():
    from envs import robots, tasks  # noqa: F401  (registers robots and tasks)
    from envs.core.env import BaseEnv
    from envs.core.registry import check_env_id, env_ids
    from envs.modes import ControlMode, ObsMode, RenderMode, SimBackend

__all__ = ["BaseEnv", "ControlMode", "ObsMode", "RenderMode", "SimBackend", "check_env_id", "env_ids"]

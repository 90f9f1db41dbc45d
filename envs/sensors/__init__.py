"""Cameras and what they observe. Importing this package renders nothing and needs no Vulkan;
`envs.sensors.suite` (imported only by envs that render) builds the cameras."""

from envs.sensors.config import (
    CameraConfig,
    SensorSettings,
    default_base_camera,
    default_render_camera,
    look_at,
    resolve_sensor_configs,
)

__all__ = [
    "CameraConfig",
    "SensorSettings",
    "default_base_camera",
    "default_render_camera",
    "look_at",
    "resolve_sensor_configs",
]

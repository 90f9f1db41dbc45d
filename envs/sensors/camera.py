"""One camera in every env, read as batched tensors.

Env i's camera lives in env i's own render system (see envs/core/world.py), so it sees env i
alone. Cameras render with SkillForge's single-pass shader (shaders/lambert), which writes one
int32 picture, "Camera", per camera: packed colour, depth in micrometres, entity id, and a
drawn flag (all zero where nothing is hit). Every obs mode is cut from that one read-back.

Conventions of what leaves this module (all poses env-local, as everywhere in SkillForge):
* intrinsics (N, 3, 3): the OpenCV pinhole matrix K (pixels; pixel (u, v) is centred at
  u + 0.5, v + 0.5).
* extrinsic_cv (N, 3, 4): [R | t] mapping env-frame points to OpenCV camera coordinates
  (x right, y down, z forward): x_cam = R @ x_env + t.
* cam2world_gl (N, 4, 4): the camera's pose in the env frame with OpenGL camera axes (x right,
  y up, z backward), mapping OpenGL camera points to env-frame points.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import sapien
import torch

from envs.sensors.config import CameraConfig

PICTURE = "Camera"
SHADER_DIR = str(Path(__file__).parent / "shaders" / "lambert")
DEPTH_MAX_MM = 32767  # depth leaves as int16 millimetres


def make_component(config: CameraConfig) -> sapien.render.RenderCameraComponent:
    cam = sapien.render.RenderCameraComponent(config.width, config.height, SHADER_DIR)
    cam.set_fovy(config.fov, compute_x=True)
    cam.near, cam.far = config.near, config.far
    cam.name = config.uid
    return cam


# The cuts below run in numpy: torch spreads element-wise work on large tensors over its
# intra-op threads, which on a loaded two-core machine made them 50x slower (72 ms against 1.3 ms
# to unpack 16 pictures' colours).
_LITTLE_ENDIAN = sys.byteorder == "little"


def rgb_of(raw: np.ndarray) -> torch.Tensor:  # (N, H, W, 4) int32 -> (N, H, W, 3) uint8
    packed = np.ascontiguousarray(raw[..., 0])
    if _LITTLE_ENDIAN:  # the packed int's bytes are r, g, b, 0
        rgb = packed.view(np.uint8).reshape(*packed.shape, 4)[..., :3]
    else:
        rgb = np.stack((packed & 255, (packed >> 8) & 255, (packed >> 16) & 255), -1).astype(np.uint8)
    return torch.from_numpy(np.ascontiguousarray(rgb))


def depth_um_of(raw: np.ndarray) -> np.ndarray:  # (N, H, W) int32 micrometres, 0 = nothing
    return raw[..., 1]


def depth_of(raw: np.ndarray) -> torch.Tensor:  # (N, H, W, 1) int16 millimetres, 0 = nothing
    return torch.from_numpy(np.clip((raw[..., 1:2] + 500) // 1000, 0, DEPTH_MAX_MM).astype(np.int16))


def segmentation_of(raw: np.ndarray) -> torch.Tensor:  # (N, H, W, 1) int16 entity ids, 0 = nothing
    return torch.from_numpy(raw[..., 2:3].astype(np.int16))


def color_of(raw: np.ndarray) -> torch.Tensor:  # (N, H, W, 4) uint8 rgb and alpha (255 where drawn)
    alpha = np.where(raw[..., 3:4] != 0, 255, 0).astype(np.uint8)
    return torch.from_numpy(np.concatenate((rgb_of(raw).numpy(), alpha), -1))


def cut_on_device(raw: torch.Tensor, key: str) -> torch.Tensor:
    """The cuts above for a picture batch still on the GPU (gpu_batch.py): cutting there first
    leaves 5 of the 16 bytes per pixel to copy back. GPUs are little-endian."""
    if key == "rgb":
        packed = raw[..., 0].contiguous()
        return packed.view(torch.uint8).reshape(*packed.shape, 4)[..., :3]
    if key == "depth":
        return torch.clamp((raw[..., 1:2] + 500) // 1000, 0, DEPTH_MAX_MM).to(torch.int16)
    if key == "segmentation":
        return raw[..., 2:3].to(torch.int16)
    raise ValueError(f"no cut named {key!r}")


class BatchedCamera:
    def __init__(self, config: CameraConfig, components: list[sapien.render.RenderCameraComponent], offsets: torch.Tensor):
        self.config = config
        self.uid = config.uid
        self.components = components
        self._offsets = offsets.double().numpy()  # (N, 3) env origins in the shared frame
        self._intrinsics = torch.from_numpy(np.stack([c.get_intrinsic_matrix() for c in components]).astype(np.float32))

    def take_picture(self) -> None:
        """Queue this step's render of every env's camera (read it with `read`)."""
        for c in self.components:
            c.take_picture()

    def read(self) -> np.ndarray:  # (N, H, W, 4) int32, see the module docstring
        return np.stack([c.get_picture(PICTURE) for c in self.components])

    def intrinsics(self) -> torch.Tensor:  # (N, 3, 3)
        return self._intrinsics

    def extrinsics(self) -> torch.Tensor:  # (N, 3, 4) env frame -> OpenCV camera
        e = np.stack([c.get_extrinsic_matrix() for c in self.components]).astype(np.float64)
        e[:, :, 3] += np.einsum("nij,nj->ni", e[:, :, :3], self._offsets)
        return torch.from_numpy(e.astype(np.float32))

    def cam2world_gl(self) -> torch.Tensor:  # (N, 4, 4) OpenGL camera -> env frame
        m = np.stack([c.get_model_matrix() for c in self.components]).astype(np.float64)
        m[:, :3, 3] -= self._offsets
        return torch.from_numpy(m.astype(np.float32))

    def params(self) -> dict[str, torch.Tensor]:
        """ManiSkill's sensor_param entry of this camera."""
        return {"extrinsic_cv": self.extrinsics(), "cam2world_gl": self.cam2world_gl(), "intrinsic_cv": self.intrinsics()}

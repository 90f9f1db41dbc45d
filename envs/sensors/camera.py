"""One camera in every env, read as batched tensors.

Env i's camera lives in env i's own render system (see envs/core/world.py), so it sees env i
alone. Cameras render with SAPIEN's single-pass "minimal" shader, which writes two pictures:
"Color" (RGBA float in [0, 1]) and "PositionSegmentation" (int32: the camera-space position in
millimetres, OpenGL axes with -z forward, then the entity's segmentation id; all zero where
nothing is hit). Everything here reads those two.

Conventions of what leaves this module (all poses env-local, as everywhere in SkillForge):
* intrinsics (N, 3, 3): the OpenCV pinhole matrix K (pixels).
* extrinsics (N, 3, 4): [R | t] mapping env-frame points to OpenCV camera coordinates
  (x right, y down, z forward): x_cam = R @ x_env + t.
* cam_to_env (N, 4, 4): the camera's pose in the env frame with OpenGL axes (x right, y up,
  z backward), which maps the camera-space positions of "PositionSegmentation".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sapien
import torch

from envs.sensors.config import CameraConfig

COLOR = "Rgb"
POSITION = "PositionSegmentation"
SHADER_DIR = str(Path(__file__).parent / "shaders" / "lambert")
DEPTH_MAX_MM = 32767  # depth is int16 millimetres


def make_component(config: CameraConfig) -> sapien.render.RenderCameraComponent:
    sapien.render.set_picture_format(COLOR, "r8g8b8a8unorm")  # our shader's own picture name
    cam = sapien.render.RenderCameraComponent(config.width, config.height, SHADER_DIR)
    cam.set_fovy(config.fov, compute_x=True)
    cam.near, cam.far = config.near, config.far
    cam.name = config.uid
    return cam


class BatchedCamera:
    def __init__(self, config: CameraConfig, components: list[sapien.render.RenderCameraComponent], offsets: torch.Tensor):
        self.config = config
        self.uid = config.uid
        self.components = components
        self._offsets = offsets.double().numpy()  # (N, 3) env origins in the shared frame
        self._intrinsics = torch.from_numpy(np.stack([c.get_intrinsic_matrix() for c in components]).astype(np.float32))

    def take_picture(self) -> None:
        """Queue this step's render of every env's camera (the pictures are read later)."""
        for c in self.components:
            c.take_picture()

    def color(self) -> torch.Tensor:  # (N, H, W, 3) uint8
        raw = np.stack([c.get_picture(COLOR) for c in self.components])  # (N, H, W, 4) uint8
        return torch.from_numpy(raw[..., :3]).contiguous()

    def position(self) -> torch.Tensor:  # (N, H, W, 4) int32: camera-space mm (OpenGL axes), segmentation id
        return torch.from_numpy(np.stack([c.get_picture(POSITION) for c in self.components]))

    @staticmethod
    def depth_of(position: torch.Tensor) -> torch.Tensor:  # (N, H, W, 1) int16 mm, 0 where nothing is hit
        return (-position[..., 2:3]).clamp_(0, DEPTH_MAX_MM).to(torch.int16)

    @staticmethod
    def segmentation_of(position: torch.Tensor) -> torch.Tensor:  # (N, H, W, 1) int16 ids, 0 = nothing
        return position[..., 3:4].to(torch.int16)

    def intrinsics(self) -> torch.Tensor:  # (N, 3, 3)
        return self._intrinsics

    def extrinsics(self) -> torch.Tensor:  # (N, 3, 4) env frame -> OpenCV camera
        e = np.stack([c.get_extrinsic_matrix() for c in self.components]).astype(np.float64)
        e[:, :, 3] += np.einsum("nij,nj->ni", e[:, :, :3], self._offsets)
        return torch.from_numpy(e.astype(np.float32))

    def cam_to_env(self) -> torch.Tensor:  # (N, 4, 4) OpenGL camera -> env frame
        m = np.stack([c.get_model_matrix() for c in self.components]).astype(np.float64)
        m[:, :3, 3] -= self._offsets
        return torch.from_numpy(m.astype(np.float32))

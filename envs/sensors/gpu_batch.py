"""Batched rendering on a CUDA GPU: every env's cameras of one uid in one submission.

The per-camera path (camera.py) submits each picture and waits for it on its own; on an NVIDIA
GPU that costs about 1.5 ms per 128 x 128 picture, whatever the GPU's speed (driver submit and
fence latency: 191 ms of camera work per step for 64 envs' 128 pictures). SAPIEN's render-system group instead updates every render
system's object transforms with one CUDA kernel from a (K, 7) pose buffer, draws a group's
cameras back to back and copies all their pictures into one CUDA buffer.

SAPIEN fills such a buffer from its GPU physics; here the physics runs on the CPU, so every
step the poses of the K entities that can move (every actor and articulation link of the world,
in env order) are read on the CPU and copied to the GPU in one transfer. Render shapes and
mounted cameras are bound to their entity's row of the buffer once, at construction; entities
outside the world's groups (the lights, fixed cameras) keep the pose they had then, so nothing
may be added to the scenes afterwards, and no render body's visibility may change (SAPIEN counts
that as a change of the scene too). Actors in `world.hidden` (goal sites) are kept out of these
cameras' pictures by the pose uploaded for them, far outside the scene, not by their visibility;
their entities keep their real poses, so the physics and the render cameras are untouched.

Used by `Sensors` when CUDA is present and the render device is a GPU (`available`); the
per-camera path stays the one for lavapipe and for machines without CUDA.
"""

from __future__ import annotations

import sapien
import torch

from envs.core.world import BatchedWorld, pose_rows


def available(world: BatchedWorld) -> bool:
    """CUDA in torch and a render device that is not a CPU (lavapipe)."""
    if not torch.cuda.is_available():
        return False
    return world.scene.render_system.device.is_cuda()


FAR = 1.0e5  # metres added to a hidden entity's uploaded position: outside every camera's far plane


def _moving_entities(world: BatchedWorld, cameras: list[sapien.render.RenderCameraComponent]) -> list[sapien.Entity]:
    """Every actor and link of the world that is drawn or carries one of `cameras`."""
    entities = [e for group in world.actors.values() for e in group.entities]
    for art in world.articulations.values():
        entities += [link.entity for links in art.links for link in links.values()]
    # while `entities` holds the Python objects, SAPIEN hands out those same objects again, so
    # ids compare (ids of objects made and dropped one by one would be reused)
    mounts = {id(cam.entity) for cam in cameras}
    return [e for e in entities if e.find_component_by_type(sapien.render.RenderBodyComponent) is not None or id(e) in mounts]


class GpuCameraBatch:
    def __init__(self, world: BatchedWorld, cameras: dict[str, list[sapien.render.RenderCameraComponent]], picture: str):
        self.world = world
        self.picture = picture
        self.entities = _moving_entities(world, [cam for components in cameras.values() for cam in components])
        row = {id(e): k for k, e in enumerate(self.entities)}
        hidden = {id(e) for name in world.hidden for e in world.actors[name].entities}
        self.hidden_rows = [k for k, e in enumerate(self.entities) if id(e) in hidden]
        for k, entity in enumerate(self.entities):
            body = entity.find_component_by_type(sapien.render.RenderBodyComponent)
            if body is not None:
                for shape in body.render_shapes:
                    shape.set_gpu_pose_batch_index(k)
        for components in cameras.values():
            for cam in components:
                if id(cam.entity) in row:  # mounted on a moving entity
                    cam.set_gpu_pose_batch_index(row[id(cam.entity)])
        scenes = list({id(s): s for s in world.scenes}.values())
        self.group = sapien.render.RenderSystemGroup([s.render_system for s in scenes])
        device = torch.device("cuda", world.scene.render_system.device.cuda_id)  # the GPU that renders
        self.poses = torch.zeros(len(self.entities), 7, device=device)
        self._host = torch.zeros(len(self.entities), 7).pin_memory()
        self.group.set_cuda_poses(sapien.pysapien.CudaArray(self.poses))
        self.cameras = {uid: self.group.create_camera_group(components, [picture]) for uid, components in cameras.items()}

    def update(self) -> None:
        """Copy every moving entity's current pose to the GPU and into the render systems (a
        hidden entity's moved out of sight)."""
        rows = pose_rows(e.get_pose() for e in self.entities)
        rows[self.hidden_rows, :3] += FAR
        self._host.copy_(torch.from_numpy(rows))
        self.poses.copy_(self._host, non_blocking=True)
        self.group.update_render()

    def take_pictures(self) -> None:
        for group in self.cameras.values():
            group.take_picture()

    def read(self, uid: str) -> torch.Tensor:  # (N, H, W, 4) int32 on the GPU, as BatchedCamera.read
        return self.cameras[uid].get_picture_cuda(self.picture).torch()

"""Every camera of a batched env: building them into each env's render system, lighting, and
turning one step's pictures into the observation of a visual obs mode.

Observation layout (N envs; H, W per camera):

    obs["agent"], obs["extra"]            as in state_dict mode
    obs["cameras"][uid]["rgb"]            (N, H, W, 3) uint8                 rgb, rgbd
    obs["cameras"][uid]["depth"]          (N, H, W, 1) int16, millimetres    depth, rgbd
                                          along the optical axis; 0 = nothing within [near, far]
    obs["cameras"][uid]["segmentation"]   (N, H, W, 1) int16 entity ids      segmentation
                                          (0 = nothing; names in env.segmentation_ids)
    obs["cameras"][uid]["intrinsics"]     (N, 3, 3) float32, OpenCV K        every visual mode
    obs["cameras"][uid]["extrinsics"]     (N, 3, 4) float32, env -> OpenCV camera
    obs["pointcloud"]["xyz"]              (N, P, 3) float32, env frame (m)   pointcloud
    obs["pointcloud"]["rgb"]              (N, P, 3) uint8
    obs["pointcloud"]["segmentation"]     (N, P, 1) int16

Each camera renders one picture per step (colour, depth and ids together, see camera.py);
the obs mode decides what is cut from it.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import sapien
import torch

from envs.core.world import BatchedWorld
from envs.modes import ObsMode
from envs.sensors import camera, pointcloud
from envs.sensors.camera import BatchedCamera, make_component
from envs.sensors.config import CameraConfig, SensorSettings, look_at
from envs.sensors.gpu_batch import GpuCameraBatch
from envs.sensors.gpu_batch import available as gpu_batch_available

# the images each visual obs mode keeps per camera, and how each is cut from the camera's picture
_KEYS = {
    ObsMode.RGB: ("rgb",),
    ObsMode.DEPTH: ("depth",),
    ObsMode.RGBD: ("rgb", "depth"),
    ObsMode.SEGMENTATION: ("segmentation",),
    ObsMode.POINTCLOUD: (),
}
_CUT = {"rgb": camera.rgb_of, "depth": camera.depth_of, "segmentation": camera.segmentation_of}

AMBIENT = (0.3, 0.3, 0.32)
SUN = (look_at((0.0, 0.0, 0.0), (0.3, 0.5, -1.0)), (0.75, 0.73, 0.7))  # pose (x axis = direction), colour


def _light(scene: sapien.Scene) -> None:
    scene.render_system.ambient_light = list(AMBIENT)
    light = sapien.render.RenderDirectionalLightComponent()
    light.color = list(SUN[1])
    light.shadow = False  # our shader draws no shadows; a shadow map would only cost time
    entity = sapien.Entity()
    entity.name = "sun"
    entity.add_component(light)
    entity.set_pose(sapien.Pose(SUN[0][:3], SUN[0][3:]))
    scene.add_entity(entity)


def _mount_entities(world: BatchedWorld, mount: str) -> list[sapien.Entity]:
    """Env i's entity a camera mounted on `mount` moves with: an actor group's name, or a link
    name of an articulation ("link" or "group/link")."""
    if mount in world.actors:
        return world.actors[mount].entities
    group, _, link = mount.rpartition("/")
    for name, art in world.articulations.items():
        if group in ("", name) and link in art.links[0]:
            return [links[link].entity for links in art.links]
    choices = list(world.actors) + [f"{n}/{l}" for n, a in world.articulations.items() for l in a.links[0]]
    raise ValueError(f"unknown camera mount {mount!r}; allowed: {', '.join(choices)}")


class Sensors:
    def __init__(self, world: BatchedWorld, settings: SensorSettings, seed: int = 0, gpu_batch: bool | None = None):
        """gpu_batch: render each camera uid's pictures of all envs in one submission on a CUDA
        GPU (gpu_batch.py); None: whenever `gpu_batch.available`."""
        self.world = world
        self.settings = settings
        for scene in {id(s): s for s in world.scenes}.values():  # each render system once
            _light(scene)
        self.cameras = {c.uid: self._build(c) for c in settings.cameras}
        self.render_cameras = {c.uid: self._build(c) for c in settings.render_cameras}
        self.rng = np.random.default_rng(seed)  # point-cloud sampling
        self._rays = {uid: pointcloud.pixel_rays(c.intrinsics().numpy(), c.config.height, c.config.width) for uid, c in self.cameras.items()}
        self._rendered_version = -1
        self.segmentation_ids = self._segmentation_ids()
        self.gpu = None
        if gpu_batch or (gpu_batch is None and self.cameras and gpu_batch_available(world)):
            try:
                self.gpu = GpuCameraBatch(world, {uid: c.components for uid, c in self.cameras.items()}, camera.PICTURE)
            except Exception as e:  # a GPU whose Vulkan and CUDA do not share memory (some vGPU, WSL)
                if gpu_batch:
                    raise
                warnings.warn(f"GPU-batched cameras unavailable ({e}); rendering picture by picture", stacklevel=2)
        self._gpu_version = -1

    def _build(self, config: CameraConfig) -> BatchedCamera:
        pose = sapien.Pose(config.pose[:3], config.pose[3:])
        components = []
        mounts = _mount_entities(self.world, config.mount) if config.mount else None
        for i, scene in enumerate(self.world.scenes):
            cam = make_component(config)
            if mounts is None:
                entity = sapien.Entity()
                entity.name = f"{config.uid}_{i}"
                entity.add_component(cam)
                entity.set_pose(self.world.world_pose(i, pose))
                scene.add_entity(entity)
            else:
                mounts[i].add_component(cam)
                cam.set_local_pose(pose)
            components.append(cam)
        return BatchedCamera(config, components, self.world.offsets)

    def _segmentation_ids(self) -> dict[str, int]:
        """Entity name (without the env index) -> its id in segmentation images, equal in every
        env because each env's render system is built in the same order."""
        ids = {name: g.entities[0].per_scene_id for name, g in self.world.actors.items()}
        for name, art in self.world.articulations.items():
            ids.update({f"{name}/{link}": c.entity.per_scene_id for link, c in art.links[0].items()})
        return ids

    def seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(int(seed))

    def _update_render(self) -> None:
        """Copy the simulated poses into every env's render system, once per scene change."""
        if self._rendered_version != self.world.clock.version:
            for scene in self.world.scenes:
                scene.update_render()
            self._rendered_version = self.world.clock.version

    def observe(self, mode: ObsMode) -> dict[str, Any]:
        """The camera part of a visual obs mode's observation (see the module docstring)."""
        if self.gpu is not None:
            if self._gpu_version != self.world.clock.version:
                self.gpu.update()
                self._gpu_version = self.world.clock.version
            self.gpu.take_pictures()
        else:
            self._update_render()
            for cam in self.cameras.values():
                cam.take_picture()
        out: dict[str, Any] = {"cameras": {}}
        clouds = []
        for uid, cam in self.cameras.items():
            if self.gpu is not None:  # cut on the GPU, copy back only what the mode keeps
                raw_gpu = self.gpu.read(uid)
                entry = {key: camera.cut_on_device(raw_gpu, key).cpu() for key in _KEYS[mode]}
                raw = raw_gpu.cpu().numpy() if mode is ObsMode.POINTCLOUD else None
            else:
                raw = cam.read()  # (N, H, W, 4) int32
                entry = {key: _CUT[key](raw) for key in _KEYS[mode]}
            entry["intrinsics"] = cam.intrinsics()
            entry["extrinsics"] = cam.extrinsics()
            if mode is ObsMode.POINTCLOUD:
                xyz, valid = pointcloud.lift(camera.depth_um_of(raw), self._rays[uid], entry["extrinsics"].numpy())
                n = raw.shape[0]
                clouds.append((xyz, camera.rgb_of(raw).numpy().reshape(n, -1, 3), camera.segmentation_of(raw).numpy().reshape(n, -1, 1), valid))
            out["cameras"][uid] = entry
        if clouds:
            xyz, rgb, seg, valid = (np.concatenate(parts, 1) for parts in zip(*clouds))
            idx = pointcloud.sample(valid, self.settings.pointcloud_points, self.rng)[..., None]  # (N, P, 1)
            out["pointcloud"] = {
                "xyz": torch.from_numpy(np.take_along_axis(xyz, idx, 1)),
                "rgb": torch.from_numpy(np.take_along_axis(rgb, idx, 1)),
                "segmentation": torch.from_numpy(np.take_along_axis(seg, idx, 1)),
            }
        return out

    def render(self, uid: str | None = None) -> torch.Tensor:
        """(N, H, W, 3) uint8 from a human-view camera (the first render camera by default)."""
        cams = self.render_cameras or self.cameras
        if not cams:
            raise ValueError("this env has no camera to render with")
        cam = cams[uid] if uid is not None else next(iter(cams.values()))
        self._update_render()
        cam.take_picture()
        return camera.rgb_of(cam.read())


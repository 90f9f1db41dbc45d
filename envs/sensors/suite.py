"""Every camera of a batched env: building them into each env's render system, lighting, and
turning one step's pictures into the observation of a camera obs mode, laid out as ManiSkill
3.0.1 lays it out (N envs; H, W per camera; poses in the env frame):

    obs["agent"], obs["extra"]                     as in state_dict mode (no object state)
    obs["sensor_param"][uid]["extrinsic_cv"]       (N, 3, 4) float32, env -> OpenCV camera
    obs["sensor_param"][uid]["cam2world_gl"]       (N, 4, 4) float32, OpenGL camera -> env
    obs["sensor_param"][uid]["intrinsic_cv"]       (N, 3, 3) float32, OpenCV K
    obs["sensor_data"][uid]["rgb"]                 (N, H, W, 3) uint8
    obs["sensor_data"][uid]["depth"]               (N, H, W, 1) int16 mm along the optical axis, 0 = nothing
    obs["sensor_data"][uid]["position"]            (N, H, W, 3) int16 mm, OpenGL camera frame
    obs["sensor_data"][uid]["segmentation"]        (N, H, W, 1) int16 entity ids (0 = nothing;
                                                   names in env.segmentation_ids)
    sensor_data mode, the shader's own images:
    obs["sensor_data"][uid]["Color"]               (N, H, W, 4) uint8 rgb, alpha
    obs["sensor_data"][uid]["PositionSegmentation"](N, H, W, 4) int16 position mm, entity id
    pointcloud mode (sensor_data is then {}):
    obs["pointcloud"]["xyzw"]                      (N, P, 4) float32 env frame (m), w = 1 on an entity
    obs["pointcloud"]["rgb"]                       (N, P, 3) uint8
    obs["pointcloud"]["segmentation"]              (N, P, 1) int16
                                                   P = the sum of H*W over the cameras

Each mode's images per camera are `ObsMode.textures`. Each camera renders one picture per step
(colour, depth and ids together, see camera.py); the obs mode decides what is cut from it.
Actors in `world.hidden` (goal sites) are invisible to these cameras and visible in render().
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

# how each image is cut from a camera's picture (position needs the camera's rays: see _images)
_CUT = {"rgb": camera.rgb_of, "depth": camera.depth_of, "segmentation": camera.segmentation_of}
_ON_DEVICE = ("rgb", "depth", "segmentation")

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
    def __init__(self, world: BatchedWorld, settings: SensorSettings, gpu_batch: bool | None = None):
        """gpu_batch: render each camera uid's pictures of all envs in one submission on a CUDA
        GPU (gpu_batch.py); None: whenever `gpu_batch.available`."""
        self.world = world
        self.settings = settings
        for scene in {id(s): s for s in world.scenes}.values():  # each render system once
            _light(scene)
        self.cameras = {c.uid: self._build(c) for c in settings.cameras}
        self.render_cameras = {c.uid: self._build(c) for c in settings.render_cameras}
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

    def _update_render(self) -> None:
        """Copy the simulated poses into every env's render system, once per scene change."""
        if self._rendered_version != self.world.clock.version:
            for scene in self.world.scenes:
                scene.update_render()
            self._rendered_version = self.world.clock.version

    def show_hidden(self, visible: bool) -> None:
        """Observation cameras do not see `world.hidden`; render cameras do. With GPU-batched
        cameras the batch hides them by their uploaded pose, and their visibility stays as built
        (changing it would break the batch, see gpu_batch.py)."""
        if self.gpu is not None:
            return
        for name in self.world.hidden:
            for entity in self.world.actors[name].entities:
                body = entity.find_component_by_type(sapien.render.RenderBodyComponent)
                if body is not None:
                    body.visibility = 1.0 if visible else 0.0

    def _images(self, uid: str, raw: np.ndarray | None, raw_gpu: Any, textures: tuple[str, ...]) -> dict[str, torch.Tensor]:
        """The textures of one camera's picture (raw: (N, H, W, 4) int32 on the CPU, or raw_gpu
        on the GPU with raw None unless position is wanted)."""
        out = {}
        for key in textures:
            if key == "position":
                out[key] = torch.from_numpy(pointcloud.position_of(camera.depth_um_of(raw), self._rays[uid]))
            elif raw_gpu is not None:  # cut on the GPU, copy back only what the mode keeps
                out[key] = camera.cut_on_device(raw_gpu, key).cpu()
            else:
                out[key] = _CUT[key](raw)
        return out

    def observe(self, mode: ObsMode) -> dict[str, Any]:
        """The sensor_param, sensor_data (and pointcloud) part of a camera mode's observation
        (see the module docstring)."""
        self.show_hidden(False)
        if self.gpu is not None:
            if self._gpu_version != self.world.clock.version:
                self.gpu.update()
                self._gpu_version = self.world.clock.version
                self._rendered_version = -1  # the batch moved hidden actors out of sight: render() puts them back
            self.gpu.take_pictures()
        else:
            self._update_render()
            for cam in self.cameras.values():
                cam.take_picture()
        params, data = {}, {}
        for uid, cam in self.cameras.items():
            params[uid] = cam.params()
            raw_gpu = self.gpu.read(uid) if self.gpu is not None else None
            need_cpu = raw_gpu is None or any(t not in _ON_DEVICE for t in mode.textures) or mode is ObsMode.SENSOR_DATA
            raw = (raw_gpu.cpu().numpy() if raw_gpu is not None else cam.read()) if need_cpu else None
            images = self._images(uid, raw, raw_gpu if not need_cpu else None, mode.textures)
            if mode is ObsMode.SENSOR_DATA:  # the shader's images, untransformed, as ManiSkill's minimal shader names them
                images = {
                    "Color": camera.color_of(raw),
                    "PositionSegmentation": torch.cat((images["position"], images["segmentation"]), -1),
                }
            data[uid] = images
        out: dict[str, Any] = {"sensor_param": params, "sensor_data": data}
        if mode is ObsMode.POINTCLOUD:
            clouds = [
                (pointcloud.xyzw(d["position"].numpy(), d["segmentation"].numpy(), params[uid]["cam2world_gl"].numpy()),
                 d["rgb"].reshape(d["rgb"].shape[0], -1, 3), d["segmentation"].reshape(d["segmentation"].shape[0], -1, 1))
                for uid, d in data.items()
            ]
            out["sensor_data"] = {}
            out["pointcloud"] = {
                "xyzw": torch.from_numpy(np.concatenate([c[0] for c in clouds], 1)),
                "rgb": torch.cat([c[1] for c in clouds], 1),
                "segmentation": torch.cat([c[2] for c in clouds], 1),
            }
        return out

    def render(self, uid: str | None = None) -> torch.Tensor:
        """(N, H, W, 3) uint8 from a human-view camera (the first render camera by default)."""
        cams = self.render_cameras or self.cameras
        if not cams:
            raise ValueError("this env has no camera to render with")
        cam = cams[uid] if uid is not None else next(iter(cams.values()))
        self.show_hidden(True)
        self._update_render()
        self._gpu_version = -1  # render() wrote the real poses of hidden actors: the batch uploads again
        cam.take_picture()
        return camera.rgb_of(cam.read())


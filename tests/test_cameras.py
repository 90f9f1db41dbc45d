"""Every registered env x visual obs mode: cameras, their images and what they measure.

These tests render: on a CPU-only machine with lavapipe (setup.sh installs it), on a GPU with its
Vulkan driver. Images are small and N is 2 so the whole file stays fast on two cores.
"""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import envs
from envs.modes import ObsMode
from envs.sensors.config import look_at
from envs.tasks.common import TABLE_CENTRE, TABLE_HALF
from tests.marks import fast_only, render, slow

ENV_IDS = envs.env_ids()
VISUAL = [m.value for m in ObsMode if m.visual]
N = 2
H, W = 24, 32  # not square, so a swapped height/width shows
SMALL = {"width": W, "height": H}


def _make(make, env_id, obs_mode, **sensor_configs):
    return make(env_id, num_envs=N, obs_mode=obs_mode, sensor_configs={**SMALL, **sensor_configs})


# the images of each camera, per mode, as ManiSkill 3.0.1's obs-mode parser and minimal shader give them
IMAGES = {
    "sensor_data": {"Color": ((H, W, 4), torch.uint8), "PositionSegmentation": ((H, W, 4), torch.int16)},
    "pointcloud": {},
    **{m.value: {t: {"rgb": ((H, W, 3), torch.uint8), "depth": ((H, W, 1), torch.int16),
                     "segmentation": ((H, W, 1), torch.int16)}[t] for t in m.textures}
       for m in ObsMode if m.visual and m not in (ObsMode.SENSOR_DATA, ObsMode.POINTCLOUD)},
}


@render
@pytest.mark.parametrize("env_id", fast_only(ENV_IDS, "PickCube-v1"))
@pytest.mark.parametrize("obs_mode", fast_only(VISUAL, "rgb"))
def test_visual_obs_layout(make, env_id, obs_mode):
    env = _make(make, env_id, obs_mode)
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(env.action_space.sample())
    uids = [c.uid for c in env.unwrapped.sensor_settings.cameras]
    top = ["agent", "extra", "sensor_param", "sensor_data"] + (["pointcloud"] if obs_mode == "pointcloud" else [])
    assert list(obs) == top
    assert list(obs["sensor_param"]) == uids
    assert list(obs["sensor_data"]) == ([] if obs_mode == "pointcloud" else uids)
    ids = set(env.unwrapped.segmentation_ids.values())
    for uid in uids:
        param = obs["sensor_param"][uid]
        assert {k: (tuple(v.shape), v.dtype) for k, v in param.items()} == {
            "extrinsic_cv": ((N, 3, 4), torch.float32), "cam2world_gl": ((N, 4, 4), torch.float32), "intrinsic_cv": ((N, 3, 3), torch.float32)
        }
        flip = torch.diag(torch.tensor([1.0, -1.0, -1.0, 1.0]))  # OpenGL camera axes -> OpenCV's
        ext = torch.cat((param["extrinsic_cv"], torch.tensor([[[0.0, 0.0, 0.0, 1.0]]]).expand(N, 1, 4)), 1)
        assert torch.allclose(param["cam2world_gl"] @ flip @ ext, torch.eye(4).expand(N, 4, 4), atol=1e-4)
        if obs_mode == "pointcloud":
            continue
        data = obs["sensor_data"][uid]
        assert {k: (tuple(v.shape[1:]), v.dtype) for k, v in data.items()} == IMAGES[obs_mode]
        for i in range(N):  # every env's image shows something: not one constant value
            if "rgb" in data:
                assert data["rgb"][i].float().std() > 1.0, uid
            if "depth" in data:
                assert data["depth"][i].float().std() > 1.0 and (data["depth"][i] > 0).any(), uid
            if "segmentation" in data:
                seg = data["segmentation"][i]
                assert len(seg.unique()) >= 2 and set(seg.unique().tolist()) <= ids | {0}, uid
    if obs_mode == "pointcloud":
        pc = obs["pointcloud"]
        p = sum(c.width * c.height for c in env.unwrapped.sensor_settings.cameras)
        assert {k: (tuple(v.shape), v.dtype) for k, v in pc.items()} == {
            "xyzw": ((N, p, 4), torch.float32), "rgb": ((N, p, 3), torch.uint8), "segmentation": ((N, p, 1), torch.int16)
        }
        assert torch.equal(pc["xyzw"][..., 3] == 1, pc["segmentation"][..., 0] != 0)  # w marks the pixels that hit an entity
        assert (pc["xyzw"][pc["xyzw"][..., 3] == 0] == 0).all()  # the background is all zeros
    def check(space, value):
        if isinstance(value, dict):
            assert list(space) == sorted(value)
            for k in value:
                check(space[k], value[k])
        else:
            assert space.shape == tuple(value.shape) and space.dtype == value.numpy().dtype
    check(env.observation_space, obs)


@render
def test_sensor_data_mode_is_the_shader_images(make):
    """sensor_data's Color and PositionSegmentation hold what rgb, depth and segmentation cut from
    them: ManiSkill's minimal-shader transforms (depth = -z of the OpenGL-frame position)."""
    raw, _ = _make(make, "PickCube-v1", "sensor_data").reset(seed=1)
    cut, _ = _make(make, "PickCube-v1", "rgb+depth+segmentation").reset(seed=1)
    for uid, data in raw["sensor_data"].items():
        ref = cut["sensor_data"][uid]
        assert torch.equal(data["Color"][..., :3], ref["rgb"])
        assert torch.equal(data["PositionSegmentation"][..., 3:], ref["segmentation"])
        assert (data["PositionSegmentation"][..., 2:3] + ref["depth"]).abs().max() <= 1  # both whole millimetres


def _table_top_depth(data, i):
    """Expected depth (mm) of each pixel whose ray meets the table top (z = 0, |x|, |y| within
    the table), and where it does, from the observed intrinsics and extrinsics."""
    k, e = data["intrinsic_cv"][i].double(), data["extrinsic_cv"][i].double()
    h, w = data["depth"].shape[1:3]
    v, u = torch.meshgrid(torch.arange(h, dtype=torch.float64) + 0.5, torch.arange(w, dtype=torch.float64) + 0.5, indexing="ij")
    rays = torch.stack((u, v, torch.ones_like(u)), -1) @ torch.linalg.inv(k).T  # (H, W, 3), camera z = 1
    r, t = e[:, :3], e[:, 3]
    centre = -(r.T @ t)  # the camera centre in the env frame
    directions = rays @ r  # (H, W, 3) the rays in the env frame
    depth = -centre[2] / directions[..., 2]  # where each ray reaches height 0
    hit = centre + depth[..., None] * directions
    on_top = (depth > 0) & ((hit[..., 0] - TABLE_CENTRE[0]).abs() < TABLE_HALF[0]) & ((hit[..., 1] - TABLE_CENTRE[1]).abs() < TABLE_HALF[1])
    return depth * 1000.0, on_top


@render
@pytest.mark.parametrize("env_id", fast_only([e for e in ENV_IDS if e != "CartpoleBalanceBenchmark-v1"], "PickCube-v1"))  # on a table
def test_depth_matches_camera_to_table_distance(make, env_id):
    """Where segmentation says "table" and the pixel's ray meets the table top, depth equals the
    distance along the optical axis to the table top (z = 0), from the observed intrinsics and
    extrinsics."""
    depth_env = make(env_id, num_envs=N, obs_mode="depth")
    seg_env = make(env_id, num_envs=N, obs_mode="segmentation")
    depth, _ = depth_env.reset(seed=4)
    seg, _ = seg_env.reset(seed=4)
    table = depth_env.unwrapped.segmentation_ids["table-workspace"]
    checked = 0
    for uid, data in depth["sensor_data"].items():
        for i in range(N):
            expected, on_top = _table_top_depth({**data, **depth["sensor_param"][uid]}, i)
            mask = (seg["sensor_data"][uid]["segmentation"][i, ..., 0] == table) & on_top
            measured = data["depth"][i, ..., 0][mask].double()
            assert (measured - expected[mask]).abs().max() <= 1.5, uid  # depth is whole millimetres
            checked += int(mask.sum())
    assert checked > 1000


@render
@pytest.mark.parametrize("env_id", [e for e in ENV_IDS if e.startswith("PickCube")])
def test_pointcloud_cube_points_lie_in_the_cube(make, env_id):
    env = make(env_id, num_envs=N, obs_mode="pointcloud")
    obs, _ = env.reset(seed=2)
    base = env.unwrapped
    cube = base.world.actors["cube"]
    half = torch.tensor(cube.bodies[0].collision_shapes[0].half_size, dtype=torch.float32)
    pose = cube.pose()
    pc = obs["pointcloud"]
    for i in range(N):
        pts = pc["xyzw"][i, :, :3][pc["segmentation"][i, :, 0] == base.segmentation_ids["cube"]]  # (k, 3)
        assert len(pts) >= 10
        q = pose[i, 3:]
        local = envs.core.pose.quat_apply(envs.core.pose.quat_conj(q).expand(len(pts), 4), pts - pose[i, :3])
        assert (local.abs() <= half + 0.003).all()  # positions are whole millimetres
        table = pc["xyzw"][i, :, :3][pc["segmentation"][i, :, 0] == base.segmentation_ids["table-workspace"]]  # top, sides, floor
        top = table[((table[:, 0] - TABLE_CENTRE[0]).abs() < TABLE_HALF[0] - 0.01) & ((table[:, 1] - TABLE_CENTRE[1]).abs() < TABLE_HALF[1] - 0.01)
                    & (table[:, 2] > -0.5)]
        assert len(top) > 100 and top[:, 2].abs().max() < 0.002  # the table top is the z = 0 plane


@render
@pytest.mark.parametrize("env_id", fast_only(ENV_IDS, "PickCube-v1"))
def test_cameras_see_their_own_env_only(make, env_id):
    """A camera looking from env 0 towards env 1 (5 m along x) sees empty space past its own
    floor, and sees exactly what the same env sees when it is alone (N = 1)."""
    towards = {"base_camera": {"pose": look_at((0.0, 0.0, 0.5), (5.0, 0.0, 0.0)), "far": 50.0, "fov": 0.8}}
    alone = make(env_id, num_envs=1, obs_mode="rgbd", sensor_configs={**SMALL, **towards})
    together = make(env_id, num_envs=3, obs_mode="rgbd", sensor_configs={**SMALL, **towards})
    a, _ = alone.reset(seed=1)
    t, _ = together.reset(seed=1)
    for key in ("rgb", "depth"):
        assert torch.equal(a["sensor_data"]["base_camera"][key][0], t["sensor_data"]["base_camera"][key][0])
    depth = t["sensor_data"]["base_camera"]["depth"]
    assert ((depth == 0).float().mean(dim=(1, 2, 3)) > 0.2).all()  # nothing beyond the env's own floor


@render
@pytest.mark.parametrize("env_id", fast_only(ENV_IDS, "PickCube-v1"))
def test_rendering_does_not_change_physics(make, env_id):
    seen = make(env_id, num_envs=N, obs_mode="rgbd", sensor_configs=SMALL)
    blind = make(env_id, num_envs=N, obs_mode="state")
    seen.reset(seed=3)
    blind.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(5):
        a = rng.uniform(seen.action_space.low, seen.action_space.high).astype(np.float32)
        seen.step(a)
        blind.step(a)
    assert torch.equal(seen.unwrapped.get_state(), blind.unwrapped.get_state())


@render
def test_sensor_configs_override_and_validate(make):
    env = make("PickCube-v1", num_envs=1, obs_mode="rgb", robot_uids="panda_wristcam", sensor_configs={"width": 20, "height": 10, "hand_camera": None, "base_camera": {"fov": math.pi / 3}})
    obs, _ = env.reset(seed=0)
    assert set(obs["sensor_data"]) == {"base_camera"}
    assert obs["sensor_data"]["base_camera"]["rgb"].shape == (1, 10, 20, 3)
    fy = obs["sensor_param"]["base_camera"]["intrinsic_cv"][0, 1, 1].item()
    assert fy == pytest.approx(5 / math.tan(math.pi / 6), rel=1e-4)
    with pytest.raises(ValueError, match="unknown sensor_configs key.*'wrist'.*allowed: width, height"):
        make("PickCube-v1", obs_mode="rgb", sensor_configs={"wrist": {}})
    with pytest.raises(ValueError, match="camera hand_camera: unknown setting.*'zoom'.*allowed: width"):
        make("PickCube-v1", obs_mode="rgb", robot_uids="panda_wristcam", sensor_configs={"hand_camera": {"zoom": 2}})
    with pytest.raises(ValueError, match="width must be an integer"):
        make("PickCube-v1", obs_mode="rgb", sensor_configs={"width": 0})
    with pytest.raises(ValueError, match="unknown camera mount 'wrist'; allowed: table-workspace, ground, cube, goal_site, .*/panda_link0"):
        make("PickCube-v1", obs_mode="rgb", robot_uids="panda_wristcam", sensor_configs={"hand_camera": {"mount": "wrist"}})


@render
def test_hidden_actors_are_out_of_observations_and_in_render():
    """A goal site (world.hidden) is drawn by render() and by no observation camera, as
    ManiSkill's _hidden_objects."""
    from envs.tasks.common import build_goal_site
    from envs.tasks.pick_cube import PickCubeEnv

    class WithSite(PickCubeEnv):
        def _load_scene(self):
            super()._load_scene()
            self.site = build_goal_site(self.world, "probe_site", 0.06, (0.1, 0.9, 0.1, 1))

    configs = {**SMALL, "render_camera": {"width": 48, "height": 48}}
    env = WithSite(num_envs=1, obs_mode="rgb+segmentation", render_mode="rgb_array", sensor_configs=configs)
    try:
        env.reset(seed=0)
        sid = env.segmentation_ids["probe_site"]
        frames, images = [], []
        for z in (0.08, 5.0):  # above the table centre, in every camera's view; then out of all views
            env.site.set_pose(torch.tensor([[0.0, 0.0, z, 1.0, 0.0, 0.0, 0.0]]))
            obs = env.get_obs(env.evaluate())
            assert all(not (d["segmentation"] == sid).any() for d in obs["sensor_data"].values())
            images.append({uid: d["rgb"].clone() for uid, d in obs["sensor_data"].items()})
            frames.append(env.render().clone())
        assert all(torch.equal(images[0][uid], images[1][uid]) for uid in images[0])  # the cameras never see it
        assert not torch.equal(frames[0], frames[1])  # render() does
    finally:
        env.close()


@render
def test_gpu_camera_batch_never_sees_a_visibility_change(make, monkeypatch):
    """SAPIEN's render-system group refuses any change of its scenes after it is built, and counts
    a render body's visibility as one: with GPU-batched cameras the hidden goal site keeps its
    visibility through observations and render(). (No CUDA here: a stand-in batch takes the
    pictures picture by picture and records what it saw.)"""
    import sapien

    import envs.sensors.suite as suite
    from envs.sensors import camera

    seen = []

    class StandIn:
        def __init__(self, world, cameras, picture):
            self.world, self.cameras = world, cameras

        def update(self):
            for scene in self.world.scenes:
                scene.update_render()
            seen.append({e.find_component_by_type(sapien.render.RenderBodyComponent).visibility
                         for name in self.world.hidden for e in self.world.actors[name].entities})

        def take_pictures(self):
            for components in self.cameras.values():
                for c in components:
                    c.take_picture()

        def read(self, uid):
            return torch.from_numpy(np.stack([c.get_picture(camera.PICTURE) for c in self.cameras[uid]]))

    monkeypatch.setattr(suite, "gpu_batch_available", lambda world: True)
    monkeypatch.setattr(suite, "GpuCameraBatch", StandIn)
    env = make("PickCube-v1", num_envs=N, obs_mode="rgb", render_mode="rgb_array", sensor_configs=SMALL)
    assert isinstance(env.unwrapped.sensors.gpu, StandIn) and env.unwrapped.world.hidden
    env.reset(seed=0)
    for _ in range(2):
        env.step(env.action_space.sample())
        env.render()
    assert len(seen) >= 3 and all(v == {1.0} for v in seen)


@render
@pytest.mark.filterwarnings("ignore:.*render_mode='video'")
def test_render_rgb_array_and_human_without_display(make, monkeypatch):
    env = make("PickCube-v1", num_envs=N, obs_mode="state", render_mode="rgb_array", sensor_configs={"render_camera": {"width": 40, "height": 30}})
    env.reset(seed=0)
    frames = env.render()
    assert frames.shape == (N, 30, 40, 3) and frames.dtype == torch.uint8 and frames.float().std() > 1.0
    assert env.unwrapped.obs_mode is ObsMode.STATE
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(RuntimeError, match="render_mode='human' opens a window, and this machine has no display"):
        make("PickCube-v1", render_mode="human")
    with pytest.raises(ValueError, match="unknown render mode 'video'; allowed: rgb_array, human"):
        make("PickCube-v1", render_mode="video")


@slow  # a fresh interpreter
def test_state_modes_need_no_vulkan():
    """With no usable Vulkan driver a state env works, and a visual one says what to do."""
    code = (
        "import gymnasium as gym, envs\n"
        "env = gym.make('PickCube-v1', num_envs=2, obs_mode='state')\n"
        "env.reset(seed=0); env.step(env.action_space.sample())\n"
        "try:\n"
        "    gym.make('PickCube-v1', num_envs=2, obs_mode='rgb')\n"
        "except RuntimeError as e:\n"
        "    print('ERROR', e)\n"
    )
    environ = {**os.environ, "VK_ICD_FILENAMES": "/nonexistent/icd.json"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "ERROR SAPIEN found no usable Vulkan device" in out.stdout and "envs.doctor" in out.stdout


@pytest.mark.parametrize("target", [(1.0, 2.0, -0.5), (0.0, 0.0, -3.0), (-2.0, 0.0, 0.0), (0.0, -1.0, 0.0)])
def test_look_at_points_the_camera_x_axis_at_the_target(target):
    eye = torch.tensor([0.2, -0.1, 0.5])
    pose = torch.tensor(look_at(eye.tolist(), target))
    forward = envs.core.pose.quat_apply(pose[3:], torch.tensor([1.0, 0.0, 0.0]))
    up = envs.core.pose.quat_apply(pose[3:], torch.tensor([0.0, 0.0, 1.0]))
    direction = torch.tensor(target) - eye
    assert torch.allclose(pose[:3], eye) and torch.allclose(pose[3:].norm(), torch.tensor(1.0), atol=1e-6)
    assert torch.allclose(forward, direction / direction.norm(), atol=1e-5)
    assert up[2] >= -1e-6  # image up is never upside down


@render
def test_gpu_batched_rendering_only_with_cuda_and_a_gpu_render_device(make):
    """One submission per camera uid (envs/sensors/gpu_batch.py) needs CUDA and a GPU Vulkan
    device; lavapipe renders picture by picture. (`python -m benchmarks.render_probe` compares both
    paths' images on a GPU host.)"""
    env = _make(make, "PickCube-v1", "rgb")
    base = env.unwrapped
    expected = torch.cuda.is_available() and base.world.scene.render_system.device.is_cuda()
    assert (base.sensors.gpu is not None) == expected
    obs, _ = env.reset(seed=0)
    assert obs["sensor_data"]["base_camera"]["rgb"].float().std() > 0
    # the GPU path cuts the pictures on the device with torch: the same numbers as the numpy cuts
    from envs.sensors import camera

    base.sensors._update_render()
    cam = base.sensors.cameras["base_camera"]
    cam.take_picture()
    raw = cam.read()
    for key, cut in (("rgb", camera.rgb_of), ("depth", camera.depth_of), ("segmentation", camera.segmentation_of)):
        on_device = camera.cut_on_device(torch.from_numpy(raw), key)
        assert on_device.dtype == cut(raw).dtype and torch.equal(on_device, cut(raw)), key

"""The video wrapper, the doctor and the benchmark's camera flags."""

import imageio
import numpy as np
import pytest

from envs import doctor
from benchmarks.throughput import main as benchmark_main
from envs.wrappers import RecordVideo
from envs.wrappers.video import STATE_COLOURS, annotate, tile
from tests.marks import render, slow


def _frames(path):
    reader = imageio.get_reader(path)
    try:
        return [f for f in reader]
    finally:
        reader.close()


@render
def test_recorded_video_decodes_to_one_frame_per_reset_and_step(make, tmp_path):
    n, steps = 3, 6
    env = RecordVideo(
        make("PickCube-v1", num_envs=n, render_mode="rgb_array", sensor_configs={"render_camera": {"width": 48, "height": 32}}),
        tmp_path,
    )
    env.reset(seed=0)
    for _ in range(steps):
        env.step(env.action_space.sample())
    env.reset(options={"env_idx": [1]})  # a partial reset continues the same file
    env.reset(seed=1)  # a full reset starts a new one
    env.step(env.action_space.sample())
    env.close()
    assert [p.name for p in env.paths] == ["PickCube-v1_0.mp4", "PickCube-v1_1.mp4"]
    first, second = _frames(env.paths[0]), _frames(env.paths[1])
    assert len(first) == steps + 2 and len(second) == 2
    assert first[0].shape[0] >= 2 * 32 and first[0].shape[1] >= 2 * 48  # 3 envs tile as 2 x 2
    assert first[0].std() > 1.0


@render
def test_video_from_an_observation_camera(make, tmp_path):
    env = RecordVideo(make("PickCube-v1", num_envs=2, obs_mode="rgb", robot_uids="panda_wristcam", sensor_configs={"width": 32, "height": 32}), tmp_path, camera="hand_camera")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    env.close()
    assert len(_frames(env.paths[0])) == 2
    with pytest.raises(ValueError, match="render_mode='rgb_array'"):
        RecordVideo(make("PickCube-v1", num_envs=1), tmp_path)


@render
def test_missing_mp4_writer_is_one_clear_error_before_any_file(make, tmp_path, no_mp4_writer):
    with pytest.raises(ValueError, match="imageio-ffmpeg"):
        RecordVideo(make("PickCube-v1", num_envs=1, render_mode="rgb_array"), tmp_path / "v")
    assert not (tmp_path / "v").exists()


def test_tiles_show_each_envs_success():
    frames = np.full((3, 8, 10, 3), 50, np.uint8)
    out = annotate(frames, ["success", "fail", "running"], [4, 4, 2])
    for i, state in enumerate(["success", "fail", "running"]):
        assert tuple(out[i, -1, 0]) == STATE_COLOURS[state]  # the frame's colour
    grid = tile(out)
    assert grid.shape == (2 * out.shape[1], 2 * out.shape[2], 3)


@slow
@render
def test_doctor_finds_the_renderer(capsys):
    assert doctor.main([]) == 0
    out = capsys.readouterr().out
    assert "renders with" in out and "OK" in out


@render
def test_benchmark_camera_flags(capsys):
    assert benchmark_main(["-n", "2", "--steps", "2", "-o", "rgbd", "--cam-width", "16", "--cam-height", "16", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"obs_mode": "rgbd"' in out and '"cam_width": 16' in out

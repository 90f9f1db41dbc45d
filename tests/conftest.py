import gymnasium as gym
import pytest
import torch

import envs  # noqa: F401  (registers)
from envs.core.pose import axis_angle_to_quat, pose_inv, pose_mul, quat_mul, quat_to_axis_angle, quat_to_euler_xyz


@pytest.fixture
def no_mp4_writer(monkeypatch):
    """A machine without imageio-ffmpeg (imageio's mp4 writer)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "imageio_ffmpeg" else real(name, *a))


@pytest.fixture
def make():
    """gym.make that closes what it made."""
    made = []

    def _make(env_id="PickCube-v1", **kwargs):
        env = gym.make(env_id, **kwargs)
        made.append(env)
        return env

    yield _make
    for env in made:
        env.close()


def _top_grasp_quat(cube_quat: torch.Tensor) -> torch.Tensor:
    """(N, 4) TCP orientation pointing down with the fingers (TCP y) across the cube's faces."""
    n = cube_quat.shape[0]
    down = torch.tensor([0.0, 1.0, 0.0, 0.0]).expand(n, 4)
    yaw = quat_to_axis_angle(cube_quat)[:, 2:3]
    yaw = torch.remainder(yaw + torch.pi / 4, torch.pi / 2) - torch.pi / 4  # the cube's 4-fold symmetry
    return quat_mul(down, axis_angle_to_quat(torch.cat((torch.zeros(n, 2), -yaw), 1)))


@pytest.fixture
def pick_and_place():
    """Scripted pd_ee_pose pick-and-place for every robot of an env at once, using only the TCP
    convention (z out of the gripper, fingers closing along its y axis): robot k reaches above
    cube k, descends, closes, carries it to goal k. Returns (is_grasped after closing, the last
    step's terminated and info)."""

    def run(env, cubes, goals):
        base = env.unwrapped
        n = base.num_envs
        starts = [cube.pose() for cube in cubes]

        def go(positions, grip, steps):
            parts = []
            for agent, start, pos in zip(base.agents, starts, positions):
                local = pose_mul(pose_inv(agent.root_pose), torch.cat((pos, _top_grasp_quat(start[:, 3:])), 1))
                parts.append(torch.cat((local[:, :3], quat_to_euler_xyz(local[:, 3:]), torch.full((n, 1), grip)), 1))
            for _ in range(steps):
                out = env.step(torch.cat(parts, 1))
            return out

        go([s[:, :3] + torch.tensor([0, 0, 0.08]) for s in starts], 1.0, 15)
        go([s[:, :3] for s in starts], 1.0, 15)
        go([s[:, :3] for s in starts], -1.0, 8)
        grasped = base.evaluate().get("is_grasped")  # None where the task does not report it
        *_, terminated, _, info = go(goals, -1.0, 30)
        return grasped, terminated, info

    return run

"""Each controller drives the TCP or the joints to where its action says, for every robot."""

import numpy as np
import pytest
import torch

from envs.core.pose import axis_angle_to_quat, quat_angle, quat_mul
from envs.robots import robot_uids

N = 2
pytestmark = pytest.mark.parametrize("robot", robot_uids())


def _env(make, mode, robot):
    env = make("PickCube-v1", num_envs=N, control_mode=mode, robot_uids=robot)
    env.reset(seed=0)
    return env, env.unwrapped


def _hold_action(base):
    """An action that holds the robot and keeps the gripper open."""
    a = torch.zeros(N, base.controller.action_dim)
    a[:, -1] = 1.0
    return a


def test_pd_joint_pos_reaches_joint_targets(make, robot):
    env, base = _env(make, "pd_joint_pos", robot)
    offset = torch.tensor([0.3, -0.2, 0.2, 0.3, -0.3, 0.2, 0.4])[: len(base.agent.arm)]
    target = base.agent.arm_qpos + offset
    action = torch.cat((target, torch.ones(N, 1)), 1)
    for _ in range(50):
        env.step(action)
    assert (base.agent.arm_qpos - target).abs().max() < 0.01


def test_pd_joint_delta_pos_moves_by_scaled_steps(make, robot):
    env, base = _env(make, "pd_joint_delta_pos", robot)
    start = base.agent.arm_qpos.clone()
    action = _hold_action(base)
    action[:, 0] = 0.5
    for _ in range(4):
        env.step(action)
    for _ in range(30):
        env.step(_hold_action(base))
    moved = base.agent.arm_qpos - start
    assert torch.allclose(moved[:, 0], torch.full((N,), 4 * 0.5 * base.agent.spec.joint_delta), atol=0.01)
    assert moved[:, 1:].abs().max() < 0.01


def test_pd_joint_vel_tracks_velocity(make, robot):
    env, base = _env(make, "pd_joint_vel", robot)
    action = _hold_action(base)
    action[:, 0] = 0.5
    for _ in range(10):
        env.step(action)
    assert torch.allclose(base.agent.qvel[:, 0], torch.full((N,), 0.5 * base.agent.spec.joint_vel), atol=0.05)


def test_pd_ee_delta_pos_translates_tcp(make, robot):
    env, base = _env(make, "pd_ee_delta_pos", robot)
    start = base.agent.tcp_pose.clone()
    action = _hold_action(base)
    action[:, :3] = torch.tensor([0.5, -0.3, -0.4])
    for _ in range(3):
        env.step(action)
    for _ in range(30):
        env.step(_hold_action(base))
    moved = base.agent.tcp_pose[:, :3] - start[:, :3]
    expected = 3 * torch.tensor([0.5, -0.3, -0.4]) * base.agent.spec.ee_delta_pos
    assert (moved - expected).norm(dim=1).max() < 0.01


def test_pd_ee_delta_pose_rotates_about_tcp(make, robot):
    env, base = _env(make, "pd_ee_delta_pose", robot)
    start = base.agent.tcp_pose.clone()
    action = _hold_action(base)
    action[:, 3:6] = torch.tensor([0.0, 0.0, 1.0])
    for _ in range(3):
        env.step(action)
    for _ in range(30):
        env.step(_hold_action(base))
    now = base.agent.tcp_pose
    turn = torch.tensor([[0.0, 0.0, 3 * base.agent.spec.ee_delta_rot]]).expand(N, 3)
    expected_q = quat_mul(axis_angle_to_quat(turn), start[:, 3:])
    assert quat_angle(now[:, 3:], expected_q).max() < 0.02
    assert (now[:, :3] - start[:, :3]).norm(dim=1).max() < 0.01


def test_pd_ee_pose_reaches_target_within_1cm_in_50_steps(make, robot):
    env, base = _env(make, "pd_ee_pose", robot)
    root = base.agent.tcp_pose_root()
    target_p = root[:, :3] + torch.tensor([0.08, 0.1, -0.12])
    target_q = quat_mul(axis_angle_to_quat(torch.tensor([[0.0, 0.3, 0.2]]).expand(N, 3)), root[:, 3:])
    from envs.core.pose import quat_to_axis_angle

    action = torch.cat((target_p, quat_to_axis_angle(target_q), torch.ones(N, 1)), 1)
    for _ in range(50):
        env.step(action)
    now = base.agent.tcp_pose_root()
    assert (now[:, :3] - target_p).norm(dim=1).max() < 0.01
    assert quat_angle(now[:, 3:], target_q).max() < 0.05


@pytest.mark.parametrize("mode", ["pd_joint_delta_pos", "pd_ee_delta_pose"])
def test_gripper_closes_and_opens(make, mode, robot):
    env, base = _env(make, mode, robot)
    action = _hold_action(base)
    action[:, -1] = -1.0
    for _ in range(15):
        env.step(action)
    assert base.agent.gripper_opening.max() < 0.005
    action[:, -1] = 1.0
    for _ in range(15):
        env.step(action)
    spec = base.agent.spec
    fully_open = len(spec.gripper_joints) * spec.gripper_limits[1]
    assert (base.agent.gripper_opening - fully_open).abs().max() < 0.005


def test_zero_delta_action_holds_the_arm(make, robot):
    env, base = _env(make, "pd_ee_delta_pos", robot)
    start = base.agent.tcp_pose.clone()
    for _ in range(40):
        env.step(_hold_action(base))
    assert (base.agent.tcp_pose[:, :3] - start[:, :3]).norm(dim=1).max() < 0.005
    assert np.isfinite(base.agent.qpos.numpy()).all()

"""Each controller follows ManiSkill 3.0.1's semantics: bounds, normalisation and clipping,
where a delta steps from (measured state or previous target), the gripper mapping, what reset
does, and that its targets are reached."""

import math

import numpy as np
import pytest
import torch

from envs.controllers import ARM_CONTROLLERS
from envs.core.pose import euler_xyz_to_quat, quat_angle, quat_mul, quat_to_euler_xyz
from envs.modes import ArmSpace, ControlMode, Position
from envs.robots import get_robot, robot_family, robot_uids
from tests.marks import fast_only, slow

N = 2
# variants share their family's controllers; the robot without a gripper: tests/test_drawing.py
ROBOTS = [u for u in robot_uids() if robot_family(u) == u and get_robot(u).has_gripper]


def _angle(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(N,) rotation angle between quaternions, in float64 (acos loses float32 near 0)."""
    rel = quat_mul(a.double(), b.double() * torch.tensor([1.0, -1.0, -1.0, -1.0], dtype=torch.float64))
    return 2 * torch.atan2(rel[:, 1:].norm(dim=1), rel[:, 0].abs())


def _env(make, mode, robot="panda"):
    env = make("PickCube-v1", num_envs=N, control_mode=mode, robot_uids=robot)
    env.reset(seed=0)
    return env, env.unwrapped


def _hold_action(base):
    """A zero arm action with the gripper open."""
    a = torch.zeros(N, base.controller.action_dim)
    a[:, -1] = 1.0
    return a


def test_every_mode_has_one_controller_class():
    assert set(ARM_CONTROLLERS) == set(ControlMode)
    assert len(set(ARM_CONTROLLERS.values())) == len(ControlMode)
    assert all(cls.mode is mode for mode, cls in ARM_CONTROLLERS.items())
    with pytest.raises(TypeError, match="pd_joint_pos already has its controller, PDJointPos"):
        type("Again", (ARM_CONTROLLERS[ControlMode.PD_JOINT_POS],), {}, mode=ControlMode.PD_JOINT_POS)


@pytest.mark.parametrize("mode", list(ControlMode))
def test_every_mode_has_its_meaning(mode):
    """A mode's meaning is data beside its name, coherent, and what replay converts into."""
    from replay.control import CONVERTIBLE, conversion

    assert isinstance(mode.space, ArmSpace) and isinstance(mode.position, Position) and isinstance(mode.sets_velocity, bool)
    assert mode.sets_position or mode.sets_velocity  # an action that sets nothing means nothing
    assert mode.delta == (mode.position in (Position.FROM_MEASURED, Position.FROM_TARGET))
    assert mode.normalized == (mode.position is not Position.ABSOLUTE)  # ManiSkill: absolute targets unnormalised
    assert not (mode.end_effector and mode.sets_velocity)
    assert mode in CONVERTIBLE and conversion(mode) is not None


@pytest.mark.parametrize("mode", list(ControlMode))
def test_action_space_is_maniskills(make, mode):
    """Normalised modes: [-1, 1]; unnormalised ones: their raw bounds (Panda's values)."""
    env, base = _env(make, mode.value)
    lo, hi = base.controller.low, base.controller.high
    limits = base.agent.kinematics
    if mode.normalized:
        assert (lo == -1).all() and (hi == 1).all()
    elif mode is ControlMode.PD_EE_POSE:
        np.testing.assert_allclose(hi[:6], [2, 2, 2, 2 * math.pi, 2 * math.pi, 2 * math.pi], rtol=1e-6)
    else:
        np.testing.assert_allclose(lo[:7], limits.lower.numpy(), rtol=1e-6)
        np.testing.assert_allclose(hi[:7], limits.upper.numpy(), rtol=1e-6)
    arm_dims = {ArmSpace.EE_POS: 3, ArmSpace.EE_POSE: 6}.get(mode.space, 7 * (1 + (mode.sets_velocity and mode.sets_position)))
    assert base.controller.action_dim == arm_dims + 1
    assert env.action_space.shape == (N, arm_dims + 1)


def test_joint_delta_steps_from_measured_qpos(make):
    env, base = _env(make, "pd_joint_delta_pos")
    a = _hold_action(base)
    a[:, 0] = 1.0
    env.step(a)
    q1 = base.agent.arm_qpos.clone()
    env.step(a)
    assert torch.allclose(base.agent.targets[:, 0], q1[:, 0] + 0.1, atol=1e-6)
    a[:, 0] = 5.0  # clipped to 1 before scaling
    q2 = base.agent.arm_qpos.clone()
    env.step(a)
    assert torch.allclose(base.agent.targets[:, 0], q2[:, 0] + 0.1, atol=1e-6)


def test_joint_target_delta_accumulates_targets(make):
    env, base = _env(make, "pd_joint_target_delta_pos")
    start = base.agent.arm_qpos.clone()
    a = _hold_action(base)
    a[:, 1] = -0.5
    for _ in range(3):
        env.step(a)
    assert torch.allclose(base.agent.targets[:, 1], start[:, 1] - 3 * 0.05, atol=1e-6)
    env.reset(seed=1)  # reset: targets are the new episode's qpos
    assert torch.allclose(base.agent.targets[:, base.agent.arm], base.agent.arm_qpos, atol=1e-6)


def test_unnormalised_joint_pos_is_not_clipped(make):
    env, base = _env(make, "pd_joint_pos")
    a = torch.cat((base.agent.arm_qpos.clone(), torch.ones(N, 1)), 1)
    a[:, 0] = 5.0  # past the 2.8973 limit: ManiSkill passes it on as the drive target
    env.step(a)
    assert torch.allclose(base.agent.targets[:, 0], torch.full((N,), 5.0))


@slow
@pytest.mark.parametrize("robot", ROBOTS)
def test_pd_joint_pos_reaches_joint_targets(make, robot):
    env, base = _env(make, "pd_joint_pos", robot)
    offset = torch.tensor([0.3, -0.2, 0.2, 0.3, -0.3, 0.2, 0.4])[: len(base.agent.arm)]
    target = base.agent.arm_qpos + offset
    action = torch.cat((target, torch.ones(N, 1)), 1)
    for _ in range(50):
        env.step(action)
    assert (base.agent.arm_qpos - target).abs().max() < 0.01


@pytest.mark.parametrize("robot", ROBOTS)
def test_pd_joint_vel_tracks_velocity(make, robot):
    env, base = _env(make, "pd_joint_vel", robot)
    action = _hold_action(base)
    action[:, 0] = 0.5
    for _ in range(10):
        env.step(action)
    assert torch.allclose(base.agent.qvel[:, 0], torch.full((N,), 0.5 * base.agent.spec.joint_vel), atol=0.05)


def test_pos_vel_modes_set_position_and_velocity(make):
    env, base = _env(make, "pd_joint_delta_pos_vel")
    a = torch.zeros(N, 15)
    a[:, 2], a[:, 7 + 2], a[:, -1] = 1.0, 0.5, 1.0
    q = base.agent.arm_qpos.clone()
    env.step(a)
    assert torch.allclose(base.agent.targets[:, 2], q[:, 2] + 0.1, atol=1e-6)
    assert torch.allclose(base.agent.group.drive_velocity_targets()[:, 2], torch.full((N,), 0.5))


def test_ee_delta_pos_steps_from_measured_tcp(make):
    """+1 in x: the target is 0.1 m from the *measured* TCP, orientation held at the measured."""
    env, base = _env(make, "pd_ee_delta_pos")
    a = _hold_action(base)
    a[:, 0] = 1.0
    env.step(a)
    measured = base.agent.tcp_pose_root().clone()
    env.step(a)
    target = base.controller.arm.target_pose
    assert torch.allclose(target[:, :3], measured[:, :3] + torch.tensor([0.1, 0.0, 0.0]), atol=1e-5)
    assert _angle(target[:, 3:], measured[:, 3:]).max() < 1e-5
    reached = base.agent.tcp_pose_root(base.agent.targets)  # IK converged onto the target
    assert (reached[:, :3] - target[:, :3]).norm(dim=1).max() < 1e-5
    assert _angle(reached[:, 3:], target[:, 3:]).max() < 1e-5


def test_ee_target_delta_pos_accumulates(make):
    env, base = _env(make, "pd_ee_target_delta_pos")
    start = base.agent.tcp_pose_root().clone()
    a = _hold_action(base)
    a[:, 2] = 1.0
    env.step(a)
    env.step(a)
    target = base.controller.arm.target_pose
    assert torch.allclose(target[:, :3], start[:, :3] + torch.tensor([0.0, 0.0, 0.2]), atol=1e-5)
    env.reset(seed=3)  # reset: the target is the new measured TCP pose
    assert torch.allclose(base.controller.arm.target_pose, base.agent.tcp_pose_root(), atol=1e-6)


def test_ee_delta_pose_rotation_is_scaled_by_its_lower_bound(make):
    """ManiSkill 3.0.1 multiplies the (norm-clipped) rotation by rot_lower = -0.1: +1 about z
    turns the target by -0.1 rad, on the left of the measured orientation (root-aligned)."""
    env, base = _env(make, "pd_ee_target_delta_pose")
    start = base.agent.tcp_pose_root().clone()
    a = _hold_action(base)
    a[:, 5] = 1.0
    env.step(a)
    target = base.controller.arm.target_pose
    expected = quat_mul(euler_xyz_to_quat(torch.tensor([[0.0, 0.0, -0.1]])).expand(N, 4), start[:, 3:])
    assert _angle(target[:, 3:], expected).max() < 1e-5
    assert torch.allclose(target[:, :3], start[:, :3], atol=1e-6)
    a[:, 3:6] = torch.tensor([3.0, 4.0, 0.0])  # norm 5: scaled to norm 1 -> (-0.06, -0.08, 0)
    before = target.clone()
    env.step(a)
    turn = quat_to_euler_xyz(quat_mul(base.controller.arm.target_pose[:, 3:], before[:, 3:] * torch.tensor([1, -1, -1, -1])))
    assert torch.allclose(turn, torch.tensor([[-0.06, -0.08, 0.0]]).expand(N, 3), atol=1e-5)


@slow
@pytest.mark.parametrize("robot", ROBOTS)
def test_pd_ee_pose_reaches_euler_target(make, robot):
    env, base = _env(make, "pd_ee_pose", robot)
    root = base.agent.tcp_pose_root()
    target_p = root[:, :3] + torch.tensor([0.08, 0.1, -0.12])
    target_q = quat_mul(euler_xyz_to_quat(torch.tensor([[0.0, 0.3, 0.2]])).expand(N, 4), root[:, 3:])
    action = torch.cat((target_p, quat_to_euler_xyz(target_q), torch.ones(N, 1)), 1)
    for _ in range(50):
        env.step(action)
    now = base.agent.tcp_pose_root()
    assert (now[:, :3] - target_p).norm(dim=1).max() < 0.01
    assert quat_angle(now[:, 3:], target_q).max() < 0.05


@slow
@pytest.mark.parametrize("robot", ROBOTS)
def test_ee_delta_pos_translates_tcp(make, robot):
    env, base = _env(make, "pd_ee_target_delta_pos", robot)
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


def test_gripper_mapping_is_the_mimic_controller(make):
    env, base = _env(make, "pd_joint_delta_pos")
    for action, target in ((-1.0, -0.01), (0.0, 0.015), (1.0, 0.04), (3.0, 0.04)):
        a = torch.zeros(N, 8)
        a[:, -1] = action
        env.step(a)
        assert torch.allclose(base.agent.targets[:, base.agent.gripper], torch.full((N, 2), target), atol=1e-6)


@pytest.mark.parametrize("robot", fast_only(ROBOTS, "panda"))
def test_gripper_closes_and_opens(make, robot):
    env, base = _env(make, "pd_joint_delta_pos", robot)
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


@pytest.mark.parametrize("mode", fast_only([m for m in ControlMode if m.zero_holds_still], ControlMode.PD_JOINT_DELTA_POS))
def test_zero_action_holds_the_arm(make, mode):
    env, base = _env(make, mode.value)
    start = base.agent.tcp_pose.clone()
    for _ in range(20):
        env.step(_hold_action(base))
    assert (base.agent.tcp_pose[:, :3] - start[:, :3]).norm(dim=1).max() < 0.005
    assert np.isfinite(base.agent.qpos.numpy()).all()


@pytest.mark.parametrize("mode", list(ControlMode))
def test_controller_state_is_maniskills(make, mode):
    """Target-based modes carry their targets as controller state (ManiSkill's get_state), others none."""
    env, base = _env(make, mode.value)
    state = base.controller.state()
    if mode is ControlMode.PD_JOINT_TARGET_DELTA_POS:
        assert torch.equal(state["arm"]["target_qpos"], base.agent.targets[:, base.agent.arm])
    elif mode.from_target:
        assert torch.equal(state["arm"]["target_pose"], base.controller.arm.target_pose)
    else:
        assert state == {}

"""Every registered robot: its files load in SAPIEN and mplib and agree with our kinematics, its
gripper (if it has one) follows the convention the grasp detector and scripts rely on, and from
its rest keyframe at the task's ROBOT_ROOT it reaches all of PickCube's workspace pointing down.
Each robot is built in PickCube-v1, or in the first task that supports it (panda_stick: a drawing
task)."""

import math

import numpy as np
import pytest
import torch

from envs.core.pose import axis_angle_to_quat, matrix_to_quat, pose_mul, pose_mul_np, quat_angle, quat_apply, quat_mul
from envs.core.registry import TASKS
from envs.robots import get_robot, robot_family, robot_uids
from envs.robots.kinematics import ChainKinematics
from tests.marks import slow

pytestmark = pytest.mark.parametrize("uid", robot_uids())


def _task(uid: str) -> str:
    """PickCube-v1 if it supports the robot, else the first task that does."""
    ids = ["PickCube-v1"] + sorted(TASKS)
    return next(e for e in ids if robot_family(uid) in TASKS[e].supported_robots and TASKS[e].num_robots == 1)


def _kinematics(spec):
    return ChainKinematics(spec.model, spec.tcp_link, spec.arm_indices)


def _random_qpos(spec, n, seed):
    rng = np.random.default_rng(seed)
    joints = spec.model.active_joints
    return torch.tensor(rng.uniform([j.lower for j in joints], [j.upper for j in joints], (n, len(joints))))


def _zero_pose(model, link):
    """(4, 4) pose of `link` in the root frame with every joint at zero."""
    m = np.eye(4)
    for joint in model.chain_to(link):
        m = m @ joint.origin.matrix()
    return m


def test_fk_matches_physx_and_mplib(make, uid):
    import mplib

    spec = get_robot(uid)
    env = make(_task(uid), num_envs=4, robot_uids=uid)
    base = env.unwrapped
    agent = base.agent
    qpos = _random_qpos(spec, 4, seed=0).float()
    agent.reset_to(qpos, torch.arange(4))
    ours = agent.tcp_pose
    physx = agent.group.link_pose(spec.tcp_link)
    assert (ours[:, :3] - physx[:, :3]).norm(dim=1).max() < 1e-4
    assert quat_angle(ours[:, 3:], physx[:, 3:]).max() < 1e-3

    planner = mplib.Planner(urdf=str(spec.urdf), srdf=str(spec.srdf), move_group=spec.tcp_link)
    assert planner.user_joint_names == spec.active_joint_names
    assert not planner.check_for_self_collision(np.array(spec.rest_qpos))
    tcp_index = planner.user_link_names.index(spec.tcp_link)
    root = _kinematics(spec).tcp_pose(qpos[:, agent.arm].double())
    for q, pose in zip(qpos.double().numpy(), root):
        planner.pinocchio_model.compute_forward_kinematics(q)
        theirs = planner.pinocchio_model.get_link_pose(tcp_index)
        assert np.allclose(theirs.p, pose[:3].numpy(), atol=1e-5)
        assert quat_angle(torch.tensor(theirs.q, dtype=torch.float64), pose[3:]) < 1e-4


def test_tcp_pose_is_the_jacobian_chains_tip(uid):
    """tcp_pose (NumPy, for env steps) and the torch chain the IK iterates on give the same tip:
    to float64 rounding, and bit for bit once in float32 (the dtype an env reads it in)."""
    spec = get_robot(uid)
    kin = _kinematics(spec)
    q = _random_qpos(spec, 4000, seed=1)[:, spec.arm_indices].float().double()  # float32 joint readings
    t, _ = kin._forward(q)
    chain = torch.cat((t[:, :3, 3], matrix_to_quat(t[:, :3, :3])), 1)
    assert (kin.tcp_pose(q) - chain).abs().max() < 1e-12
    assert torch.equal(kin.tcp_pose(q.float()), chain.float())


def test_tcp_pose_composes_with_the_root_as_pose_mul(uid):
    """The env-frame TCP pose composes the root pose with the root-frame TCP in NumPy: bit for bit
    pose_mul's for a root turned about a coordinate axis (as every robot's is), within float32
    rounding for any other."""
    spec = get_robot(uid)
    tcp = _kinematics(spec).tcp_pose(_random_qpos(spec, 500, seed=2)[:, spec.arm_indices].float())
    axes = torch.eye(3)[[2, 2, 2, 0, 1]] * torch.tensor([0.0, math.pi / 2, math.pi, 0.5, -1.2])[:, None]
    for turn in axis_angle_to_quat(axes):
        root = torch.cat((torch.tensor([-0.615, 0.25, 0.1]), turn)).expand(len(tcp), 7)
        assert torch.equal(torch.from_numpy(pose_mul_np(root.numpy(), tcp.numpy())), pose_mul(root, tcp))
    turn = torch.nn.functional.normalize(torch.tensor([0.3, -0.5, 0.7, 0.2]), dim=0)
    root = torch.cat((torch.tensor([-0.615, 0.25, 0.1]), turn)).expand(len(tcp), 7)
    assert torch.allclose(torch.from_numpy(pose_mul_np(root.numpy(), tcp.numpy())), pose_mul(root, tcp), rtol=0, atol=1e-6)


def test_gripper_convention(uid):
    """Two prismatic fingers that close along the TCP's y axis; their pads meet at the TCP's
    y = 0 when the finger joints are at zero (so gripper_opening is the gap between the pads), and
    the TCP lies between the pads along z."""
    spec = get_robot(uid)
    if not spec.has_gripper:  # no gripper: no gripper joints, drive or range, and no gripper action
        assert spec.gripper_joints == () and spec.gripper_drive is None and spec.gripper_limits is None
        assert all(j.kind == "revolute" for j in spec.model.active_joints) and len(spec.arm_joints) == len(spec.active_joint_names)
        return
    model = spec.model
    tcp = _zero_pose(model, spec.tcp_link)
    tcp_inv = np.linalg.inv(tcp)
    joints = {j.name: j for j in model.joints}
    assert len(spec.gripper_joints) == 2
    for name in spec.gripper_joints:
        joint = joints[name]
        assert joint.kind == "prismatic" and joint.lower == 0.0
        finger = tcp_inv @ _zero_pose(model, joint.child)  # finger link in the TCP frame
        axis = finger[:3, :3] @ np.asarray(joint.axis)
        side = np.sign(axis[1])
        assert np.allclose(axis, [0.0, side, 0.0], atol=1e-6)  # opens along +-y
        boxes = [g for g in model.links[model.link_index(joint.child)].collisions if g.kind == "box"]
        poses = [finger @ g.origin.matrix() for g in boxes]  # each box in the TCP frame
        # half extents along the TCP's axes (boxes may be turned)
        half = [np.abs(m[:3, :3]) @ (np.asarray(g.size) / 2) for g, m in zip(boxes, poses)]
        # the pad: the one box whose extent along z holds the TCP (TCP between the pads)
        (k,) = [i for i, (m, h) in enumerate(zip(poses, half)) if m[2, 3] - h[2] < 0.0 < m[2, 3] + h[2]]
        # its inner face at y = 0 (ManiSkill's Panda tips reach 0.02 mm past it), no box further in
        assert abs(poses[k][1, 3] - side * half[k][1]) < 5e-5
        assert all(side * (m[1, 3] - side * h[1]) > -5e-5 for m, h in zip(poses, half))


def test_rest_pose_points_down_above_the_workspace(make, uid):
    env = make(_task(uid), num_envs=1, robot_uids=uid)
    base = env.unwrapped
    agent = base.agent
    agent.reset_to(torch.tensor([agent.spec.rest_qpos]), torch.arange(1))
    tcp = agent.tcp_pose[0]
    assert tcp[:2].abs().max() < 0.1 and 0.1 < tcp[2] < 0.3  # over the cube's square
    z_axis = quat_apply(tcp[3:], torch.tensor([0.0, 0.0, 1.0]))
    y_axis = quat_apply(tcp[3:], torch.tensor([0.0, 1.0, 0.0]))
    assert z_axis[2] < -0.999 and y_axis[1].abs() > 0.999  # pointing down, fingers closing along y
    root = agent.spec.model.links[0].name  # the base stands on the table
    for name, link in agent.group.links[0].items():
        if name != root and link.collision_shapes:
            assert link.compute_global_aabb_tight()[0, 2] > 0.05, f"{name} is not clear of the table"


def test_pick_cube_workspace_reachable_from_rest(uid):
    """IK from the rest keyframe reaches every corner of PickCube's cube/goal box (20 x 20 cm,
    2-32 cm up) pointing down at any cube yaw, within the joint limits."""
    from envs.tasks.common import ROBOT_ROOT

    spec = get_robot(uid)
    kin = _kinematics(spec)
    corners = torch.tensor([[x, y, z] for x in (-0.1, 0.1) for y in (-0.1, 0.1) for z in (0.02, 0.32)])
    yaws = torch.tensor([-math.pi / 4, 0.0, math.pi / 4])
    pos = corners.repeat_interleave(len(yaws), 0) - torch.tensor(ROBOT_ROOT.p, dtype=torch.float32)
    yaw = yaws.repeat(len(corners))[:, None]
    down = torch.tensor([0.0, 1.0, 0.0, 0.0]).expand(len(yaw), 4)
    quat = quat_mul(down, axis_angle_to_quat(torch.cat((torch.zeros(len(yaw), 2), yaw), 1)))
    target = torch.cat((pos, quat), 1).double()
    q = torch.tensor([spec.rest_qpos], dtype=torch.float64)[:, spec.arm_indices].expand(len(target), -1)
    for _ in range(10):  # as pd_ee_pose does over ten control steps
        q = kin.ik(target, q)
    reached = kin.tcp_pose(q)
    assert (reached[:, :3] - target[:, :3]).norm(dim=1).max() < 1e-3
    assert quat_angle(reached[:, 3:], target[:, 3:]).max() < 1e-2


@slow
def test_tcp_quaternion_is_continuous_around_gripper_down(make, uid):
    """The observed TCP quaternion keeps its sign while the gripper, pointing down (where w is
    about 0), tilts back and forth: a policy never sees q jump to -q."""
    env = make(_task(uid), num_envs=2, robot_uids=uid, control_mode="pd_ee_delta_pose")
    env.reset(seed=0)
    agent = env.unwrapped.agent
    last = agent.tcp_pose[:, 3:].clone()
    # at the start: in the reference's hemisphere (panda_wristcam starts with the wrist turned a
    # quarter turn from the rest keyframe, as ManiSkill's table scene starts it)
    assert (last * agent._tcp_hemisphere).sum(1).min() > 0.5
    action = torch.zeros(2, env.action_space.shape[-1])
    for step in range(24):
        action[:, 3:6] = torch.tensor([1.0, -1.0, 1.0]) * (1 if (step // 6) % 2 == 0 else -1)
        env.step(action)
        q = agent.tcp_pose[:, 3:]
        assert (q * last).sum(1).min() > 0.9, f"step {step}: {last} -> {q}"
        last = q.clone()


"""Two robots in one env (TwoRobotPickCube-v1): each follows its own part of the action, the
state round-trips for both, they collide with each other, and a scripted grasp solves it."""

import numpy as np
import pytest
import torch

import envs  # noqa: F401  (registers tasks and robots)
from envs.core.pose import quat_apply, quat_conj, quat_to_euler_xyz
from envs.robots.base import robot_uids
from tests.marks import slow

N = 2


def _env(make, robots, mode="pd_joint_delta_pos"):
    env = make("TwoRobotPickCube-v1", num_envs=N, control_mode=mode, robot_uids=list(robots))
    env.reset(seed=0)
    return env, env.unwrapped


def _hold(base):
    """Zero arm deltas, every gripper open; plus each robot's slice of the action."""
    action = torch.zeros(N, base.controller.action_dim)
    slices, start = [], 0
    for c in base.controller.controllers:
        slices.append(slice(start, start + c.action_dim))
        start += c.action_dim
        action[:, start - 1] = 1.0
    return action, slices


@slow
def test_each_robot_follows_its_part_of_the_action(make):
    env, base = _env(make, ("ur5e", "panda"), mode="pd_joint_target_delta_pos")  # steps add up on the targets
    assert [a.spec.uid for a in base.agents] == ["ur5e", "panda"] and base.agent is base.agents[0]
    hold, slices = _hold(base)
    assert env.action_space.shape == (N, 7 + 8)
    for k, agent in enumerate(base.agents):
        other = base.agents[1 - k]
        before, other_before = agent.arm_qpos.clone(), other.qpos.clone()
        action = hold.clone()
        action[:, slices[k].start] = 1.0  # first arm joint of robot k
        for _ in range(3):
            env.step(action)
        for _ in range(20):
            env.step(hold)
        moved = agent.arm_qpos - before
        assert torch.allclose(moved[:, 0], torch.full((N,), 3 * agent.spec.joint_delta), atol=0.01)
        assert moved[:, 1:].abs().max() < 0.01
        assert (other.qpos - other_before).abs().max() < 0.01
    action = hold.clone()
    action[:, slices[1].stop - 1] = -1.0  # close robot 1's gripper only
    for _ in range(15):
        env.step(action)
    assert base.agents[1].gripper_opening.max() < 0.005
    assert base.agents[0].gripper_opening.min() > 0.08


def test_state_dict_obs_has_one_entry_per_robot(make):
    env = make("TwoRobotPickCube-v1", num_envs=N, obs_mode="state_dict", robot_uids=("panda", "ur5e"))
    obs, _ = env.reset(seed=0)
    assert list(obs["agent"]) == ["panda-0", "ur5e-1"]  # ManiSkill's multi-agent keys: <uid>-<k>
    assert obs["agent"]["panda-0"]["qpos"].shape == (N, 9) and obs["agent"]["ur5e-1"]["qpos"].shape == (N, 8)
    assert list(env.unwrapped.get_state_dict()["articulations"]) == ["panda-agent-0", "ur5e-agent-1"]


def test_state_round_trip_restores_both_robots(make):
    env, base = _env(make, ("panda", "ur5e"))
    rng = np.random.default_rng(0)
    low, high = env.action_space.low, env.action_space.high
    for _ in range(5):
        env.step(rng.uniform(low, high).astype(np.float32))
    state = base.get_state()
    targets = [a.targets.clone() for a in base.agents]
    later = [rng.uniform(low, high).astype(np.float32) for _ in range(5)]
    first = [env.step(a)[0] for a in later]
    base.set_state(state)
    assert torch.equal(base.get_state(), state)
    for agent, t in zip(base.agents, targets):
        assert torch.equal(agent.targets, t)
    again = [env.step(a)[0] for a in later]
    assert torch.allclose(first[0], again[0], rtol=1e-3, atol=1e-3)


@slow
def test_robots_collide_with_each_other(make):
    """Both TCPs are sent to the same point between the robots: the grippers meet and stop."""
    env, base = _env(make, ("panda", "panda"), mode="pd_ee_pose")
    meet = torch.tensor([0.0, 0.0, 0.25])
    parts = []
    for agent in base.agents:
        local = agent.tcp_pose_root().clone()
        root_p, root_q = agent.root_pose[:, :3], agent.root_pose[:, 3:]
        local[:, :3] = quat_apply(quat_conj(root_q), meet - root_p)
        parts.append(torch.cat((local[:, :3], quat_to_euler_xyz(local[:, 3:]), torch.ones(N, 1)), 1))  # pd_ee_pose: XYZ Euler
    for _ in range(30):
        env.step(torch.cat(parts, 1))
    names = {
        tuple(sorted(b.entity.name.split("/")[0] for b in c.bodies))
        for c in base.world.scene.get_contacts()
    }
    assert ("panda-agent-0_0", "panda-agent-1_0") in names
    gap = (base.agents[0].tcp_pose[:, :3] - base.agents[1].tcp_pose[:, :3]).norm(dim=1)
    assert (gap > 0.03).all()


class _Point:
    """Where a robot with nothing to pick reaches to: pose() (N, 7) like an actor group's."""

    def __init__(self, pose: torch.Tensor):
        self._pose = pose

    def pose(self) -> torch.Tensor:
        return self._pose


@slow
def test_scripted_grasp_solves_it(make, pick_and_place):
    """The cube handed over (put within the right robot's reach): the right robot picks it and
    holds it at the goal while the left one reaches to a point of its own; success fires."""
    env, base = _env(make, ("ur5e", "panda"), mode="pd_ee_pose")
    state = base.get_state_dict()
    cube = state["actors"]["cube"].clone()
    cube[:, :2] = base.goal_pos[:, :2]
    state["actors"]["cube"] = cube
    base.set_state_dict(state)
    aside = base.cube.pose().clone()
    aside[:, :3] = torch.tensor([0.0, -0.35, 0.12])
    grasped, terminated, info = pick_and_place(env, [_Point(aside), base.cube], [aside[:, :3], base.goal_pos.clone()])
    assert info["success"].all() and terminated.all()


@pytest.mark.parametrize(
    "env_id, robots, message",
    [
        ("PickCube-v1", ["panda", "panda"], "PickCube-v1 takes 1 robot(s); got robot_uids=['panda', 'panda']"),
        ("TwoRobotPickCube-v1", "panda", "TwoRobotPickCube-v1 takes 2 robot(s); got robot_uids='panda'"),
        ("TwoRobotPickCube-v1", ["panda", "ur10"], f"unknown robot 'ur10'; allowed: {', '.join(sorted(robot_uids()))}"),
    ],
)
def test_wrong_robot_count_is_one_clear_error(make, env_id, robots, message):
    with pytest.raises(ValueError) as e:
        make(env_id, robot_uids=robots)
    assert str(e.value) == message

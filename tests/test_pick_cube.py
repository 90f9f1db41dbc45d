"""PickCube-v1: success fires exactly when the cube is at the goal and the robot is still."""

import pytest
import torch

from envs.tasks.pick_cube import GOAL_THRESHOLD, PickCubeEnv


def _placed_state(env, offset):
    base = env.unwrapped
    state = base.get_state_dict()
    cube = state["actors"]["cube"].clone()
    cube[:, :3] = base.goal_pos + torch.tensor(offset)
    cube[:, 7:] = 0.0
    state["actors"]["cube"] = cube
    return state


def test_success_fires_only_at_the_goal(make):
    env = make("PickCube-v1", num_envs=4)
    env.reset(seed=7)
    base = env.unwrapped
    assert not base.evaluate()["success"].any()  # the initial state
    base.set_state_dict(_placed_state(env, [0.0, 0.0, 0.01]))
    info = base.evaluate()
    assert info["success"].all() and info["is_obj_placed"].all()
    base.set_state_dict(_placed_state(env, [GOAL_THRESHOLD + 0.005, 0.0, 0.0]))
    assert not base.evaluate()["success"].any()


def test_success_needs_a_still_robot(make):
    env = make("PickCube-v1", num_envs=2)
    env.reset(seed=1)
    base = env.unwrapped
    state = _placed_state(env, [0.0, 0.0, 0.0])
    robot = state["articulations"]["robot"].clone()
    dof = base.agent.dof
    robot[:, 13 + dof] = 1.0  # first arm joint moving at 1 rad/s
    state["articulations"]["robot"] = robot
    base.set_state_dict(state)
    info = base.evaluate()
    assert info["is_obj_placed"].all() and not info["success"].any()


def test_success_scores_full_reward(make):
    env = make("PickCube-v1", num_envs=2)
    env.reset(seed=2)
    base = env.unwrapped
    assert (base.compute_dense_reward(base.evaluate()) < 0.5).all()
    base.set_state_dict(_placed_state(env, [0.0, 0.0, 0.0]))
    assert torch.allclose(base.compute_dense_reward(base.evaluate()), torch.ones(2))


@pytest.mark.parametrize("robot", PickCubeEnv.supported_robots)
def test_scripted_grasp_lifts_cube_to_goal(make, pick_and_place, robot):
    """End to end through physics: pd_ee_pose reaches above the cube, grasps it, carries it to
    the goal; success fires and the episode terminates. The same script serves every robot."""
    env = make("PickCube-v1", num_envs=4, control_mode="pd_ee_pose", robot_uids=robot)
    env.reset(seed=11)
    base = env.unwrapped
    grasped, terminated, info = pick_and_place(env, [base.cube], [base.goal_pos])
    assert grasped.all()
    assert info["success"].all() and terminated.all()


@pytest.mark.parametrize("robot", PickCubeEnv.supported_robots)
def test_grasp_detector(make, robot):
    env = make("PickCube-v1", num_envs=1, robot_uids=robot)
    env.reset(seed=0)
    base = env.unwrapped
    tcp = base.agent.tcp_pose
    assert not base.agent.is_grasping(tcp[:, :3], 0.04).any()  # open fingers: not held

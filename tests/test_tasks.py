"""Every registered task: its success detector, seeding, rewards and long rollouts.

SUCCESS_STATES holds, per env id, a function that puts every env of a freshly reset env into a
state its task calls a success; a task registered without one fails
`test_every_task_has_a_success_state`, so new tasks are covered as they are added.
"""

import math

import numpy as np
import pytest
import torch

import envs
from envs.core.pose import matrix_to_quat, pose_mul
from tests.marks import fast_only
from tests.parity._tabletop import put

ENV_IDS = envs.env_ids()
N = 3
IDENTITY = torch.tensor([1.0, 0.0, 0.0, 0.0])


def _at(pos: torch.Tensor, quat: torch.Tensor = IDENTITY) -> torch.Tensor:
    return torch.cat((pos, quat.expand(len(pos), 4)), 1)


def _pick_cube(base):
    put(base, "cube", _at(base.goal_pos))


def _two_robot_pick_cube(base):
    put(base, "cube", _at(base.goal_pos))


def _cube_on_goal(base):
    pos = base.goal_pos.clone()
    pos[:, 2] = base.cube_half_size
    put(base, "cube", _at(pos))


def _stack_cube(base):
    put(base, "cubeA", torch.cat((base.goal_pos(), base.cubeB.pose()[:, 3:]), 1))


def _place_sphere(base):
    put(base, "sphere", _at(base.goal_pos()))


def _stack_pyramid(base):
    b = base.cubeB.pose()
    beside = pose_mul(b, torch.tensor([[0.042, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]).expand(len(b), 7))  # 2 mm apart
    on_both = pose_mul(b, torch.tensor([[0.021, 0.0, 0.04, 1.0, 0.0, 0.0, 0.0]]).expand(len(b), 7))
    put(base, "cubeA", beside)
    put(base, "cubeC", on_both)


def _pull_cube_tool(base):
    pos = base.agent.root_pose[:, :3] + torch.tensor([0.4, 0.1, 0.02])  # 0.41 m from the base, clear of the tool
    put(base, "cube", _at(pos))


def _lift_peg_upright(base):
    pos = torch.tensor([0.2, 0.25, 0.0]).repeat(base.num_envs, 1)  # clear of the arm at rest
    pos[:, 2] = base.peg_half_sizes[:, 0]
    # standing on its end, its local y along the table's -x (ManiSkill's Euler test needs a y
    # with some x component: atan2(-R01, R00) near pi/2)
    up = matrix_to_quat(torch.tensor([[[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]]]))[0]
    put(base, "peg", _at(pos, up))


def _peg_insertion_side(base):
    in_hole = torch.zeros(base.num_envs, 7)
    in_hole[:, 0] = -base.peg_half_sizes[:, 0]  # the head at the hole's centre
    in_hole[:, 3] = 1.0
    put(base, "peg", pose_mul(base.box_hole_pose(), in_hole))


def _plug_charger(base):
    put(base, "charger", base.goal_pose())


def _drawing(base):
    """A dot on every reference point of the goal (the drawing tasks), through set_state_dict."""
    state = base.get_state_dict()
    ref = base.reference_xy  # (N, R, 2)
    for k in range(ref.shape[1]):
        s = state["actors"][f"dot_{k}"].clone()
        s[:, :2], s[:, 2] = ref[:, k], 0.0215
        state["actors"][f"dot_{k}"] = s
    base.set_state_dict(state)


def _cartpole(base):
    state = base.get_state_dict()
    s = state["articulations"]["cartpole"].clone()
    s[:, 13:17] = 0.0  # qpos, qvel: upright and still at the centre
    state["articulations"]["cartpole"] = s
    base.set_state_dict(state)
    base.elapsed_steps[:] = base.max_episode_steps  # success is judged at the step limit


SUCCESS_STATES = {
    "CartpoleBalanceBenchmark-v1": _cartpole,
    "DrawSVG-v1": _drawing,
    "DrawTriangle-v1": _drawing,
    "LiftPegUpright-v1": _lift_peg_upright,
    "PegInsertionSide-v1": _peg_insertion_side,
    "PickCube-v1": _pick_cube,
    "PlaceSphere-v1": _place_sphere,
    "PlugCharger-v1": _plug_charger,
    "PullCube-v1": _cube_on_goal,
    "PullCubeTool-v1": _pull_cube_tool,
    "PushCube-v1": _cube_on_goal,
    "StackCube-v1": _stack_cube,
    "StackPyramid-v1": _stack_pyramid,
    "TwoRobotPickCube-v1": _two_robot_pick_cube,
}
# tasks whose success state is one the physics keeps: it must survive 10 steps of a holding action
STABLE = {"LiftPegUpright-v1", "PlaceSphere-v1", "PullCube-v1", "PullCubeTool-v1", "PushCube-v1", "StackCube-v1",
          "StackPyramid-v1"}
# tasks whose normalised reward ManiSkill lets pass 1 on success (a success bonus added to staged terms)
UNCAPPED_REWARD = {"PullCubeTool-v1"}


def test_every_task_has_a_success_state():
    assert set(SUCCESS_STATES) == set(ENV_IDS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_success_fires_on_a_success_state_only(make, env_id):
    env = make(env_id, num_envs=N)
    env.reset(seed=5)
    base = env.unwrapped
    info = base.evaluate()
    assert not info["success"].any() and not info["fail"].any()  # the initial states
    assert (base.compute_dense_reward(info) < 1).all()
    SUCCESS_STATES[env_id](base)
    info = base.evaluate()
    assert info["success"].all() and not info["fail"].any()
    reward = base.compute_dense_reward(info)
    assert (reward >= 1).all() if env_id in UNCAPPED_REWARD else torch.allclose(reward, torch.ones(N))


@pytest.mark.parametrize("env_id", sorted(STABLE))
def test_success_state_is_physically_stable(make, env_id):
    env = make(env_id, num_envs=N, control_mode="pd_joint_delta_pos")
    env.reset(seed=6)
    base = env.unwrapped
    SUCCESS_STATES[env_id](base)
    hold = torch.zeros(env.action_space.shape)
    hold[:, -1] = 1.0  # gripper open
    for _ in range(10):
        *_, terminated, _, info = env.step(hold)
    assert info["success"].all() and terminated.all()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_seeded_initial_states_reproduce_and_vary(make, env_id):
    env = make(env_id, num_envs=2)
    base = env.unwrapped
    env.reset(seed=21)
    first = base.get_state()
    for _ in range(3):
        env.step(env.action_space.sample())
    env.reset(seed=21)
    assert torch.equal(base.get_state(), first)  # reproducible after the envs have moved
    assert not torch.allclose(first[0], first[1])  # env 1 has seed 22: another start
    env.reset(seed=22)
    assert not torch.allclose(base.get_state()[0], first[0])


@pytest.mark.parametrize("env_id", fast_only(ENV_IDS, "PushCube-v1"))
def test_long_rollout_with_partial_resets_stays_finite(make, env_id):
    """Random actions for 30 steps, resetting envs whose episode ended: everything stays finite
    and rewards stay in [0, 1]."""
    env = make(env_id, num_envs=4, max_episode_steps=12)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    low, high = env.action_space.low, env.action_space.high
    for _ in range(30):
        obs, reward, terminated, truncated, info = env.step(rng.uniform(low, high).astype(np.float32))
        assert torch.isfinite(obs).all() and torch.isfinite(env.unwrapped.get_state()).all()
        assert ((reward >= 0) & (reward <= 1)).all()
        done = terminated | truncated
        if done.any():
            obs, info = env.reset(options={"env_idx": torch.nonzero(done).flatten()})
            assert (info["elapsed_steps"][done] == 0).all()


# ---- task specifics ------------------------------------------------------------------------


def test_plate_with_slots_leaves_exactly_the_slots_open():
    from envs.tasks.common import plate_with_slots

    slots = [(-0.01, 0.003), (0.01, 0.003)]
    parts = plate_with_slots((0.0, 0.03), (-0.08, 0.08), (-0.1, 0.06), slots, 0.007, (1, 1, 1, 1))
    volume = sum(8 * p.half_size[0] * p.half_size[1] * p.half_size[2] for p in parts)
    block = 0.03 * 0.16 * 0.16
    open_ = sum(0.03 * 2 * h * 2 * 0.007 for _, h in slots)
    assert len(parts) == 5 and math.isclose(volume, block - open_, rel_tol=1e-9)
    for c, _ in slots:  # the slot's centre line is inside no part
        for p in parts:
            lo = [p.pose.p[k] - p.half_size[k] for k in range(3)]
            hi = [p.pose.p[k] + p.half_size[k] for k in range(3)]
            assert not (lo[1] < c < hi[1] and lo[2] < 0.0 < hi[2])


def test_peg_geometry_is_per_env_seeded_and_independent_of_n(make):
    from envs.tasks.peg_insertion_side import CLEARANCE, PEG_HALF_LENGTH, PEG_RADIUS

    six = make("PegInsertionSide-v1", num_envs=6).unwrapped
    two = make("PegInsertionSide-v1", num_envs=2).unwrapped
    alone = make("PegInsertionSide-v1", num_envs=1, geometry_seed=[2027]).unwrapped
    other = make("PegInsertionSide-v1", num_envs=2, geometry_seed=100).unwrapped
    sizes = six.peg_half_sizes
    assert six.geometry_seeds == [2022 + k for k in range(6)]  # ManiSkill's seeds for a new env
    assert torch.equal(two.peg_half_sizes, sizes[:2]) and torch.equal(alone.peg_half_sizes[0], sizes[5])
    assert torch.equal(alone.box_hole_offsets[0], six.box_hole_offsets[5])
    assert not torch.allclose(other.peg_half_sizes, sizes[:2])
    assert len(set(sizes[:, 0].tolist())) == 6  # every env its own peg
    assert ((sizes[:, 0] >= PEG_HALF_LENGTH[0]) & (sizes[:, 0] <= PEG_HALF_LENGTH[1])).all()
    assert ((sizes[:, 1] >= PEG_RADIUS[0]) & (sizes[:, 1] <= PEG_RADIUS[1])).all()
    assert torch.equal(sizes[:, 1], sizes[:, 2])
    assert torch.allclose(six.box_hole_radii - sizes[:, 1], torch.full((6,), CLEARANCE))
    for i in range(6):  # ManiSkill's draws from a legacy RandomState: length, radius, offset
        g = np.random.RandomState(2022 + i)
        length, radius = g.uniform(0.085, 0.125), g.uniform(0.015, 0.025)
        offset = 0.5 * (length - radius) * g.uniform(-1, 1, size=(2,))
        assert np.allclose(sizes[i].numpy(), (length, radius, radius)) and np.allclose(six.box_hole_offsets[i, 1:].numpy(), offset)
        shape = six.peg.bodies[i].collision_shapes[0]  # each env's peg collides as its own size
        assert np.allclose(shape.half_size, sizes[i].numpy())
    with pytest.raises(ValueError, match="geometry_seed has 1 seeds for 2 envs"):
        make("PegInsertionSide-v1", num_envs=2, geometry_seed=[3])


def test_cartpole_balances_under_feedback_and_falls_without(make):
    env = make("CartpoleBalanceBenchmark-v1", num_envs=N, control_mode="pd_joint_vel", max_episode_steps=60)
    base = env.unwrapped
    env.reset(seed=0)
    for _ in range(60):
        q, v = base.agent.qpos, base.agent.qvel
        # drive the cart under the pole: velocity target from lean, lean rate and cart state
        action = (10 * q[:, 1:] + v[:, 1:] + 0.5 * q[:, :1] + v[:, :1]) / 2
        *_, terminated, truncated, info = env.step(action)
    assert info["success"].all() and terminated.all() and truncated.all()
    env.reset(seed=0)
    for _ in range(40):
        *_, info = env.step(torch.zeros(N, 1))
    assert info["fail"].all()


CUBE_GOAL = ["PushCube-v1", "PullCube-v1"]


@pytest.mark.parametrize("env_id", CUBE_GOAL)
def test_cube_goal_success_boundaries(make, env_id):
    """The cube 0.1 mm inside the goal radius succeeds and 0.1 mm outside does not, in four
    directions; PushCube's cube must also stay below its height limit, PullCube's need not."""
    base = make(env_id, num_envs=4).unwrapped
    base.reset(seed=0)
    goal = base.goal_pos.clone()
    directions = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-0.6, 0.8], [0.6, -0.8]])

    def success_at(offset: torch.Tensor, z: float) -> torch.Tensor:
        pos = goal.clone()
        pos[:, :2] += offset
        pos[:, 2] = z
        put(base, "cube", _at(pos))
        return base.evaluate()["success"]

    half = base.cube_half_size
    assert success_at(directions * (base.goal_radius - 1e-4), half).all()
    assert not success_at(directions * (base.goal_radius + 1e-4), half).any()
    if base.success_max_z is None:
        assert success_at(torch.zeros(2), 0.5).all()
    else:
        assert success_at(torch.zeros(2), base.success_max_z - 1e-4).all()
        assert not success_at(torch.zeros(2), base.success_max_z + 1e-4).any()


@pytest.mark.parametrize("env_id", CUBE_GOAL)
def test_cube_goal_reward_counts_placing_within_1cm_of_the_push_pose(make, env_id):
    """TCP 9.9 mm from the reward's push pose: the placing term (goal 0.15 m away) is added;
    10.1 mm: the reward is the reaching term alone."""
    from envs.tasks.common import TARGET_FLAT_Q

    base = make(env_id, num_envs=2).unwrapped
    base.reset(seed=0)
    away = torch.tensor([[0.0, 0.0099, 0.0], [0.0, 0.0101, 0.0]])
    cube = base.agent.tcp_pose[:, :3] - torch.tensor(base.push_offset) + away
    cube[:, 2] = torch.maximum(cube[:, 2], torch.tensor(base.cube_half_size))
    put(base, "cube", _at(cube))
    put(base, "goal_region", _at(cube + torch.tensor([0.15, 0.0, 0.0]), torch.tensor(TARGET_FLAT_Q)))
    info = base.evaluate()
    reward = base.dense_reward(info)
    to_push = (base.cube.pose()[:, :3] + torch.tensor(base.push_offset) - base.agent.tcp_pose[:, :3]).norm(dim=1)
    reach = 1 - torch.tanh(5 * to_push)
    assert not info["success"].any()
    assert torch.isclose(reward[1], reach[1]) and reward[0] > reach[0] + 0.3
    assert torch.allclose(base.compute_dense_reward(info), reward / base.max_reward)

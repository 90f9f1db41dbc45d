"""Every registered env x obs mode x control mode: the batched API contract."""

import inspect

import numpy as np
import pytest
import torch

import envs
from envs.core.registry import TASKS
from envs.modes import ControlMode, ObsMode
from tests.marks import fast_only

ENV_IDS = envs.env_ids()
N = 3
# every env id with each control mode its task class accepts, and with each it refuses
ENV_MODES = [(e, m.value) for e in ENV_IDS for m in ControlMode if m in TASKS[e].supported_control_modes]
QUICK = ("PickCube-v1", "pd_joint_delta_pos")  # what the quick subset (-m "not slow") runs of the registry
REFUSED_MODES = [(e, m.value) for e in ENV_IDS for m in ControlMode if m not in TASKS[e].supported_control_modes]


def _alone(env_id: str, k: int) -> dict:
    """kwargs that build env k's scene in a one-env instance: a task whose objects differ per env
    (e.g. PegInsertionSide's pegs) takes a `geometry_seed`, one seed per env as a list (env k of
    an env built with the default seed s has s + k)."""
    param = inspect.signature(TASKS[env_id].__init__).parameters.get("geometry_seed")
    return {"geometry_seed": [param.default + k]} if param is not None else {}


def _leaves(tree):
    if isinstance(tree, dict):
        for v in tree.values():
            yield from _leaves(v)
    else:
        yield tree


@pytest.mark.parametrize("env_id, control_mode", fast_only(ENV_MODES, QUICK))
@pytest.mark.parametrize("obs_mode", [m.value for m in ObsMode if not m.visual])  # visual: tests/test_cameras.py
def test_rollout_shapes_and_finite(make, env_id, obs_mode, control_mode):
    env = make(env_id, num_envs=N, obs_mode=obs_mode, control_mode=control_mode)
    obs, info = env.reset(seed=1)
    assert env.action_space.shape == (N, env.unwrapped.single_action_space.shape[0])
    for _ in range(5):
        action = env.action_space.sample()
        assert env.action_space.contains(action)
        obs, reward, terminated, truncated, info = env.step(action)
    for x in _leaves(obs):
        # flags (ManiSkill's is_grasped) are bool, everything else float32
        assert isinstance(x, torch.Tensor) and x.dtype in (torch.float32, torch.bool) and x.shape[0] == N
        assert x.dtype == torch.bool or torch.isfinite(x).all()
    if obs_mode == "state":
        assert obs.ndim == 2 and obs.shape == env.observation_space.shape
    if obs_mode == "none":
        assert obs == {}  # ManiSkill's none: an empty dict
    if obs_mode == "state_dict":
        assert list(obs) == ["agent", "extra"]
    for x in (reward, terminated, truncated, info["success"], info["fail"], info["elapsed_steps"]):
        assert isinstance(x, torch.Tensor) and x.shape == (N,)
    assert reward.dtype == torch.float32 and torch.isfinite(reward).all()
    assert terminated.dtype == torch.bool and truncated.dtype == torch.bool
    assert (info["elapsed_steps"] == 5).all()


@pytest.mark.parametrize("env_id", fast_only(ENV_IDS, QUICK[0]))
def test_seeded_reset_independent_of_num_envs(make, env_id):
    """Env i with seed s starts exactly alike whatever N is (at another index, i.e. another place
    in the shared scene, alike to float32 rounding of its offset). Stepping is alike to float32
    rounding: PhysX batches the solver work of separate envs, which can move the last bit. The
    actions are small and seeded: a robot striking an object amplifies that last bit chaotically
    (physics, not batching), and unseeded large ones made this test flaky for tasks with objects
    near the arm."""
    one, six, eight = make(env_id, num_envs=1), make(env_id, num_envs=6), make(env_id, num_envs=8)
    o1, _ = one.reset(seed=100)
    o6, _ = six.reset(seed=list(range(100, 106)))
    o8, _ = eight.reset(seed=100)  # env k gets seed 100 + k
    assert torch.equal(o1[0], o8[0]) and torch.equal(o6[5], o8[5])
    s8 = eight.unwrapped.get_state()
    assert torch.equal(one.unwrapped.get_state()[0], s8[0]) and torch.equal(six.unwrapped.get_state()[5], s8[5])
    assert not torch.allclose(s8[0], s8[1])  # randomisation varies with the seed
    five = make(env_id, num_envs=1, **_alone(env_id, 5))
    assert torch.allclose(o8[5], five.reset(seed=105)[0][0], atol=1e-5)
    one.reset(seed=100)
    low, high = eight.action_space.low, eight.action_space.high
    actions = torch.from_numpy((0.25 * np.random.default_rng(0).uniform(low, high)).astype(np.float32))
    for _ in range(10):
        o8, r8, *_ = eight.step(actions)
        o6, r6, *_ = six.step(actions[:6])
        o1, r1, *_ = one.step(actions[:1])
    assert torch.allclose(o1[0], o8[0], atol=1e-5) and torch.allclose(r1[0], r8[0], atol=1e-5)
    assert torch.allclose(o6[5], o8[5], atol=1e-5) and torch.allclose(r6[5], r8[5], atol=1e-5)


# (task, mode) whose random motions in the test below grind a contact that restores do not reset
RESTORE_DRIFT = {
    ("PlugCharger-v1", "pd_joint_delta_pos"),
    ("PlugCharger-v1", "pd_joint_target_delta_pos"),
    ("PlugCharger-v1", "pd_joint_vel"),
    ("PegInsertionSide-v1", "pd_ee_pose"),
    ("PullCubeTool-v1", "pd_ee_pose"),
    # from seed 3's starts (ManiSkill's draws) these motions grind links 5-7 and the hand against
    # the table (PushCube, PullCube: after knocking the cube off it)
    ("PushCube-v1", "pd_ee_pose"),
    ("PullCube-v1", "pd_ee_pose"),
    ("PlugCharger-v1", "pd_ee_pose"),
    # with the fingers coupled (ManiSkill's tendon), the fingertips these motions press on the table
    # move each other: restores 0.9 (PlaceSphere), 0.09 and 0.002 apart after 20 steps
    ("PlaceSphere-v1", "pd_ee_pose"),
    ("StackPyramid-v1", "pd_ee_pose"),
    ("TwoRobotPickCube-v1", "pd_ee_pose"),
    # the drawing stick's random motions press it on the canvas and slide it there (this CPU:
    # restores 7.4 apart after 20 steps)
    ("DrawTriangle-v1", "pd_ee_pose"),
    ("DrawSVG-v1", "pd_ee_pose"),
}


@pytest.mark.parametrize("env_id, control_mode", fast_only(ENV_MODES, QUICK))
def test_state_round_trip_reproduces_next_steps(make, env_id, control_mode):
    if (env_id, control_mode) in RESTORE_DRIFT:
        pytest.xfail("known defect: these random arm motions grind the fingers (ManiSkill's four collision "
                     "boxes each) against a fixture or an object, and later restores of a reused env differ "
                     "(PhysX's contact history outlives a restore; only a fresh env is exact)")
    """A restored state replays the next 20 steps exactly, every time it is restored; the run that
    was never interrupted agrees to float32 rounding on the first step (PhysX keeps integrated link
    poses and contact caches that no API exposes; random actions then amplify the difference).

    Actions are drawn from the middle quarter of the action box. Full-range ones drive an arm
    into a fixture (PegInsertionSide's box), and a grinding robot-fixture contact depends on the
    order PhysX created its contact pairs in, which restoring (re-inserting actors) changes: the
    first restore then differs from later ones by last bits that the contact amplifies."""
    env = make(env_id, num_envs=2, control_mode=control_mode)
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    low, high = env.action_space.low, env.action_space.high
    mid, half = (low + high) / 2, (high - low) / 8

    def sample():
        return rng.uniform(mid - half, mid + half).astype(np.float32)

    for _ in range(5):
        env.step(sample())
    state = env.unwrapped.get_state()
    actions = [sample() for _ in range(20)]
    uninterrupted = [env.step(a)[0] for a in actions]
    runs = []
    for _ in range(3):
        env.unwrapped.set_state(state)
        assert torch.equal(env.unwrapped.get_state(), state)
        runs.append([env.step(a)[0] for a in actions])
    # later restores agree bit for bit, except where an arm grinds against a kinematic fixture
    # (PlugCharger's receptacle: 1e-4 apart after 20 steps), which PhysX's contact history beyond
    # a restore amplifies (docs/PERFORMANCE.md, "Coupling between envs": only a fresh env is exact)
    for a, b in zip(runs[1], runs[2]):
        assert torch.allclose(a, b, rtol=0, atol=1e-3), f"restores differ by {(a - b).abs().max().item():.3g}"
    assert torch.allclose(runs[0][0], uninterrupted[0], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("env_id, control_mode", fast_only(ENV_MODES, QUICK))
def test_kept_readings_are_physx_s(make, env_id, control_mode):
    """What an env keeps instead of reading PhysX again, the drive targets as they were set and a
    static actor's pose until it is moved, equals PhysX's own after resets, steps, restores and
    partial resets."""
    env = make(env_id, num_envs=3, control_mode=control_mode)
    base = env.unwrapped
    env.reset(seed=1)

    def check():
        for name, group in base.world.articulations.items():
            assert torch.equal(group.drive_targets(), group.read_drive_targets()), name
        for name, group in base.world.actors.items():
            assert torch.equal(group.pose(), group._read_pose()), name

    check()
    for _ in range(3):
        env.step(env.action_space.sample())
        check()
    state = base.get_state_dict()
    env.step(env.action_space.sample())
    base.set_state_dict(state)
    check()
    base.set_state_dict({g: state[g] for g in ("actors", "articulations")})  # targets at qpos
    check()
    env.reset(seed=[7], options={"env_idx": [1]})
    check()


@pytest.mark.parametrize("env_id", fast_only(ENV_IDS, QUICK[0]))
def test_state_dict_is_maniskills_layout(make, env_id):
    """get_state_dict: ManiSkill's actors (N, 13) and articulations (N, 13 + 2 dof), named as
    there, then our drive targets; get_state flattens it in that order; a state without drive
    targets (ManiSkill's) restores with the targets at qpos, and names this env lacks are refused."""
    env = make(env_id, num_envs=2)
    env.reset(seed=0)
    base = env.unwrapped
    env.step(env.action_space.sample())
    state = base.get_state_dict()
    assert list(state)[:3] == ["actors", "articulations", "drive_targets"]
    assert set(state) - {"actors", "articulations", "drive_targets"} <= {"task"}
    for name, s in state["actors"].items():
        assert s.shape == (2, 13) and torch.allclose(s[:, 3:7].norm(dim=1), torch.ones(2), atol=1e-5), name
    assert "table-workspace" in state["actors"] or env_id == "CartpoleBalanceBenchmark-v1"
    for name, s in state["articulations"].items():
        dof = base.world.articulations[name].dof
        assert s.shape == (2, 13 + 2 * dof) and state["drive_targets"][name].shape == (2, dof)
    flat = torch.cat([t for g in state.values() for t in g.values()], 1)
    assert torch.equal(base.get_state(), flat)
    maniskill = {g: {k: v.clone() for k, v in state[g].items()} for g in ("actors", "articulations")}
    maniskill["controller"] = {}  # a group ManiSkill may add, which neither side's set_state_dict reads
    env.step(env.action_space.sample())
    base.set_state_dict(maniskill)
    again = base.get_state_dict()
    for g in ("actors", "articulations"):
        for k in state[g]:
            assert torch.allclose(again[g][k], state[g][k], atol=1e-6), k
    for name, s in state["articulations"].items():
        dof = base.world.articulations[name].dof
        assert torch.allclose(again["drive_targets"][name], s[:, 13 : 13 + dof], atol=1e-6)
    flat_maniskill = torch.cat([t for g in ("actors", "articulations") for t in state[g].values()], 1)
    env.step(env.action_space.sample())
    base.set_state(flat_maniskill)  # ManiSkill's flat state: actors then articulations
    assert torch.allclose(torch.cat([t for g in ("actors", "articulations") for t in base.get_state_dict()[g].values()], 1), flat_maniskill, atol=1e-6)
    with pytest.raises(ValueError, match="state names actors nope this env does not have"):
        base.set_state_dict({"actors": {"nope": torch.zeros(2, 13)}})


def test_partial_reset_leaves_other_envs(make):
    env = make(num_envs=4)
    env.reset(seed=0)
    for _ in range(3):
        env.step(env.action_space.sample())
    before = env.unwrapped.get_state()
    _, info = env.reset(seed=[50], options={"env_idx": [2]})
    after = env.unwrapped.get_state()
    assert torch.equal(before[[0, 1, 3]], after[[0, 1, 3]])
    assert not torch.equal(before[2], after[2])
    assert info["elapsed_steps"].tolist() == [3, 3, 0, 3]


def test_paused_env_stands_still_and_the_others_step_as_without_it(make):
    """An isolated world's paused env keeps its physical state (its drive targets still follow
    its actions) while the others step bit-identically to an env where none is paused; a reset
    resumes it."""
    kwargs = {"num_envs": 2, "control_mode": "pd_joint_delta_pos", "physics": {"isolated": True}}
    paused, free = make(**kwargs).unwrapped, make(**kwargs).unwrapped
    actions = [torch.from_numpy(paused.action_space.sample()) for _ in range(4)]

    def physical(env, i):  # actors and articulations of env i, drive targets left out
        state = env.get_state_dict()
        return torch.cat([torch.as_tensor(v[i]).flatten() for g in ("actors", "articulations") for v in state[g].values()])

    for env in (paused, free):
        env.reset(seed=[3, 4])
    paused.world.pause([1])
    held = physical(paused, 1)
    for a in actions:
        paused.step(a)
        free.step(a)
    assert torch.equal(paused.get_state()[0], free.get_state()[0])
    assert torch.equal(physical(paused, 1), held)
    assert not torch.equal(physical(free, 1), held)
    paused.reset(seed=[3, 4])
    paused.step(actions[0])
    assert not torch.equal(physical(paused, 1), held)


def test_truncation_at_max_episode_steps(make):
    env = make(num_envs=2, max_episode_steps=4)
    env.reset(seed=0)
    for t in range(4):
        *_, truncated, info = env.step(np.zeros(env.action_space.shape, np.float32))
        assert truncated.tolist() == [t == 3] * 2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"obs_mode": "pixels"}, "unknown obs mode 'pixels'; allowed: state, state_dict, none, sensor_data, rgb"),
        ({"control_mode": "torque"}, "unknown control mode 'torque'; allowed: pd_joint_delta_pos, pd_joint_pos"),
        ({"robot_uids": "ur10"}, "unknown robot 'ur10'; allowed: panda, panda_stick, panda_wristcam, ur5e"),
        ({"sim_backend": "physx_cuda"}, "unknown sim backend 'physx_cuda'; allowed: physx_cpu"),
    ],
)
def test_bad_modes_name_allowed_values(make, kwargs, message):
    with pytest.raises(ValueError) as e:
        make("PickCube-v1", **kwargs)
    assert message in str(e.value)


@pytest.mark.parametrize("env_id, control_mode", REFUSED_MODES)
def test_refused_control_mode_is_one_clear_error(make, env_id, control_mode):
    allowed = ", ".join(m.value for m in TASKS[env_id].supported_control_modes)
    with pytest.raises(ValueError) as e:
        make(env_id, control_mode=control_mode)
    assert str(e.value) == f"{env_id} does not support control mode {control_mode!r}; allowed: {allowed}"


@pytest.mark.parametrize("env_id", [e for e in ENV_IDS if "panda" not in TASKS[e].supported_robots])
def test_task_without_the_robot_refuses_it(make, env_id):
    with pytest.raises(ValueError, match=f"{env_id} does not support robot 'panda'; allowed: "):
        make(env_id, robot_uids="panda")


def test_unknown_env_id_names_allowed():
    with pytest.raises(ValueError, match="unknown env id 'NoSuchTask'; allowed: .*PickCube-v1"):
        envs.check_env_id("NoSuchTask")
    assert envs.check_env_id("PickCube") == "PickCube-v1"


def test_bad_actions_raise_clear_errors(make):
    env = make(num_envs=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action has shape \(8,\)"):
        env.step(np.zeros(8, np.float32))
    bad = np.zeros(env.action_space.shape, np.float32)
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        env.step(bad)

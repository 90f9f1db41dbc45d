"""num_workers > 1: the same batched API and results over worker processes, and a clean lifetime."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import envs
from envs.modes import ObsMode
from envs.parallel import ParallelEnv, WorkerDiedError
from envs.parallel.worker import STEP
from tests.marks import fast_only, render, slow

ENV_IDS = envs.env_ids()
REPO = Path(__file__).resolve().parents[1]


def _leaves(tree, prefix=()):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _leaves(v, (*prefix, k))
    else:
        yield prefix, tree


def _alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for its parent (or init) to reap it."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return False


def _shm() -> set[str]:
    return set(os.listdir("/dev/shm"))


def _assert_same_tree(a, b):
    la, lb = dict(_leaves(a)), dict(_leaves(b))
    assert la.keys() == lb.keys()
    for k in la:
        assert la[k].dtype == lb[k].dtype and la[k].shape == lb[k].shape, k
        assert torch.equal(la[k], lb[k]), k


@pytest.mark.parametrize("env_id", fast_only(ENV_IDS, "PickCube-v1"))
@pytest.mark.parametrize("obs_mode", fast_only([m.value for m in ObsMode if not m.visual], "state"))
def test_workers_give_the_in_process_api_and_initial_states(make, env_id, obs_mode):
    """N = 3 over 2 workers (2 + 1 envs): spaces, types and reset results bit-identical."""
    one = make(env_id, num_envs=3, obs_mode=obs_mode)
    two = make(env_id, num_envs=3, obs_mode=obs_mode, num_workers=2)
    assert isinstance(two, ParallelEnv) and two.unwrapped is two and two.num_workers == 2
    assert two.num_envs == 3 and two.max_episode_steps == one.unwrapped.max_episode_steps
    assert two.observation_space == one.observation_space and two.action_space == one.action_space
    assert two.single_action_space == one.unwrapped.single_action_space
    o1, i1 = one.reset(seed=5)
    o2, i2 = two.reset(seed=5)
    _assert_same_tree(o1, o2)
    _assert_same_tree(i1, i2)
    assert torch.equal(one.unwrapped.get_state(), two.get_state())
    assert torch.equal(two.episode_seeds, torch.tensor([5, 6, 7]))
    action = one.action_space.sample()
    for x1, x2 in zip(one.step(action), two.step(action)):  # values: see test_rollout_matches_in_process
        l1, l2 = dict(_leaves(x1)), dict(_leaves(x2))
        assert l1.keys() == l2.keys()
        assert all(l1[k].dtype == l2[k].dtype and l1[k].shape == l2[k].shape for k in l1)
    assert two.elapsed_steps.tolist() == [1, 1, 1]


def _keys(tree):
    return {k: _keys(v) for k, v in tree.items()} if isinstance(tree, dict) else None


@slow
@pytest.mark.parametrize("obs_mode", ["none", "state_dict"] + [pytest.param(m, marks=render) for m in ("rgb+depth+segmentation", "sensor_data", "pointcloud")])
def test_workers_serve_every_layout(make, obs_mode):
    """The workers' observation is the in-process one, key order and empty dicts included
    (none's {}, pointcloud's sensor_data {})."""
    kwargs = {"sensor_configs": {"width": 16, "height": 12}} if obs_mode not in ("none", "state_dict") else {}
    one = make(num_envs=3, obs_mode=obs_mode, **kwargs)
    two = make(num_envs=3, obs_mode=obs_mode, num_workers=2, **kwargs)
    o1, _ = one.reset(seed=2)
    o2, _ = two.reset(seed=2)
    assert _keys(o1) == _keys(o2) and json.dumps(_keys(o1)) == json.dumps(_keys(o2))  # order too
    _assert_same_tree(o1, o2)


@slow
def test_rollout_matches_in_process(make):
    """W = 1 vs W = 2, 100 steps of random actions from the same seeds, with isolated physics.

    Every env keeps its global index (grid place and seed), and starts bit-identically. On the
    shared PhysX system stepping can differ at float32 rounding (which other envs share the
    system, and an env's place on the grid, move the last bits; contacts amplify them:
    `python -m benchmarks.parallel_compare`, `benchmarks.coupling`); with one PhysX system per env
    the workers must give exactly what one process gives."""
    one = make(num_envs=8, physics={"isolated": True})
    two = make(num_envs=8, num_workers=2, physics={"isolated": True})
    rng = np.random.default_rng(0)
    low, high = one.action_space.low, one.action_space.high
    actions = [rng.uniform(low, high).astype(np.float32) for _ in range(100)]
    o1, _ = one.reset(seed=0)
    o2, _ = two.reset(seed=0)
    assert torch.equal(o1, o2)
    for a in actions:
        o1, r1, te1, tr1, _ = one.step(a)
        o2, r2, te2, tr2, _ = two.step(a)
        assert torch.equal(o1, o2) and torch.equal(r1, r2)
        assert torch.equal(te1, te2) and torch.equal(tr1, tr2)


@slow
def test_partial_reset_and_state_through_workers(make):
    one = make(num_envs=5, obs_mode="state_dict")
    two = make(num_envs=5, obs_mode="state_dict", num_workers=2)  # envs 0-2 and 3-4
    for env in (one, two):
        env.reset(seed=0)
    zero = np.zeros(one.action_space.shape, np.float32)
    for _ in range(3):
        one.step(zero)
        two.step(zero)
    before = two.get_state()
    o1, i1 = one.reset(seed=[50, 51], options={"env_idx": [4, 1]})
    o2, i2 = two.reset(seed=[50, 51], options={"env_idx": [4, 1]})
    assert i2["elapsed_steps"].tolist() == [3, 0, 3, 3, 0]
    assert two.episode_seeds.tolist() == [0, 51, 2, 3, 50]
    after = two.get_state()
    assert torch.equal(after[[1, 4]], one.unwrapped.get_state()[[1, 4]])
    assert torch.equal(after[[0, 2, 3]], before[[0, 2, 3]])
    for (path, x1), (_, x2) in zip(_leaves(o1), _leaves(o2)):
        assert torch.equal(x1[[1, 4]], x2[[1, 4]]), path

    # set_state / set_state_dict for a subset of envs, across the workers' boundary
    target = one.unwrapped.get_state()
    two.set_state(target[[2, 3]], env_idx=torch.tensor([2, 3]))
    assert torch.equal(two.get_state()[[2, 3]], target[[2, 3]])
    two.set_state(target)
    assert torch.equal(two.get_state(), target)
    sd = one.unwrapped.get_state_dict()
    two.set_state(before)
    two.set_state_dict({g: {k: v[[0, 4]] for k, v in e.items()} for g, e in sd.items()}, env_idx=[0, 4])
    got = two.get_state_dict()
    for (path, a), (_, b) in zip(_leaves(got), _leaves(sd)):
        assert torch.equal(a[[0, 4]], b[[0, 4]]), path
    with pytest.raises(ValueError, match="rows for 2 envs"):
        two.set_state(target, env_idx=[0, 1])
    assert set(two.evaluate()) == set(one.unwrapped.evaluate())
    assert [g.tolist() for g in two.get_attr("goal_pos")] == [
        two.get_state_dict()["actors"]["goal_site"][s : s + n, :3].tolist() for s, n in two.slices
    ]


@slow
def test_max_episode_steps_reaches_the_workers(make):
    env = make(num_envs=2, num_workers=2, max_episode_steps=3)
    assert env.max_episode_steps == 3 and env.get_attr("max_episode_steps") == [3, 3]
    env.reset(seed=0)
    zero = np.zeros(env.action_space.shape, np.float32)
    truncated = [env.step(zero)[3].tolist() for _ in range(3)]
    assert truncated == [[False, False], [False, False], [True, True]]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"obs_mode": "pixels"}, ValueError, "unknown obs mode 'pixels'; allowed: state, state_dict, none, sensor_data, rgb"),
        ({"num_workers": 3}, ValueError, r"num_workers must be in \[1, num_envs = 2\], got 3"),
        ({"num_workers": 0}, ValueError, r"num_workers must be in \[1, num_envs = 2\], got 0"),
    ],
)
def test_bad_arguments_raise_in_the_parent(make, kwargs, error, message):
    with pytest.raises(error, match=message):
        make("PickCube-v1", **{"num_envs": 2, "num_workers": 2, **kwargs})


@slow
def test_bad_actions_raise_the_in_process_errors(make):
    env = make(num_envs=2, num_workers=2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action has shape \(8,\); pd_joint_delta_pos expects \(2, 8\)"):
        env.step(np.zeros(8, np.float32))
    bad = np.zeros(env.action_space.shape, np.float32)
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        env.step(bad)
    env.step(np.zeros(env.action_space.shape, np.float32))  # still usable
    with pytest.raises(AttributeError, match="live in the worker processes"):
        env.cube


@slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=lambda s: s.name)
def test_a_dying_worker_raises_one_clear_error_at_once(make, sig):
    env = make(num_envs=4, num_workers=2)
    env.reset(seed=0)
    pid, = env.worker_pids  # worker 1: worker 0 is this process (LocalWorker)
    killed_at = []

    def kill():
        time.sleep(0.3)
        killed_at.append(time.monotonic())
        os.kill(pid, sig)

    threading.Thread(target=kill, daemon=True).start()
    zero = np.zeros(env.action_space.shape, np.float32)
    with pytest.raises(WorkerDiedError, match=f"worker 1 of 2 \\(pid {pid}, envs 2..3\\) was killed by signal {sig.name}"):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            env.step(zero)
    assert time.monotonic() - killed_at[0] < 1.0
    assert not any(_alive(p) for p in env.worker_pids)
    with pytest.raises(WorkerDiedError, match="the parallel env is closed"):
        env.step(zero)


def test_close_and_context_manager_leave_no_process_or_shared_memory(make):
    import gymnasium as gym

    ours = f"skillforge_{os.getpid()}_"
    with gym.make("PickCube-v1", num_envs=2, num_workers=2) as env:
        pids = env.worker_pids
        env.reset(seed=0)
        env.step(np.zeros(env.action_space.shape, np.float32))
        assert all(_alive(p) for p in pids)
        assert not any(n.startswith(ours) for n in _shm())  # unlinked as soon as every worker mapped it
    assert not any(_alive(p) for p in pids)
    env.close()  # a second close is harmless
    other = make(num_envs=2, num_workers=2)
    other_pids = other.worker_pids
    other.close()
    assert not any(_alive(p) for p in other_pids)
    assert not any(n.startswith(ours) for n in _shm())


@slow
@pytest.mark.parametrize("how", ["exit", "SIGKILL"])
def test_parent_exit_leaves_no_process_or_shared_memory(how):
    """The parent ends (normally, without closing its env, or killed): its workers and the
    multiprocessing helpers (forkserver, resource tracker) go too; nothing stays in /dev/shm."""
    script = (
        "import os, signal, gymnasium as gym, envs\n"
        "import multiprocessing.forkserver as fs, multiprocessing.resource_tracker as rt\n"
        "env = gym.make('PickCube-v1', num_envs=2, num_workers=2)\n"
        "env.reset(seed=0); env.step(env.action_space.sample())\n"
        "print(os.getpid(), *env.worker_pids, fs._forkserver._forkserver_pid, rt._resource_tracker._pid, flush=True)\n"
        f"if {how == 'SIGKILL'}: os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == (-signal.SIGKILL if how == "SIGKILL" else 0), out.stderr
    parent, *pids = (int(p) for p in out.stdout.split())
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)
    assert not any(n.startswith(f"skillforge_{parent}_") for n in _shm())


@slow
def test_an_interrupted_call_leaves_the_env_in_step(make):
    """Ctrl-C while the parent waits leaves replies owed; the next call collects them first."""
    env = make(num_envs=4, num_workers=2)
    first, _ = env.reset(seed=0)
    for k in range(env.num_workers):  # a step sent, its replies never read: as if interrupted
        env._send(k, STEP, "stepping")
    again, _ = env.reset(seed=0)
    assert torch.equal(first, again)
    env._send(0, STEP, "stepping")
    obs, *_ = env.step(np.zeros(env.action_space.shape, np.float32))
    assert env.elapsed_steps.tolist() == [2, 2, 1, 1]


@slow
def test_scaling_benchmark_prints_workers_and_the_uncoupled_ceiling(capsys):
    from benchmarks.scaling import main as scaling

    assert scaling(["--workers", "1", "2", "--num-envs", "4", "--steps", "3", "--independent"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    workers = [r for r in rows if r and r[0] in ("1", "2") and r[1] != "ind."]
    ceiling = [r for r in rows if r[:2] == ["2", "ind."]]
    assert [r[0] for r in workers] == ["1", "2"] and len(ceiling) == 1
    assert all(float(r[2]) > 0 for r in workers) and float(ceiling[0][3]) > 0  # FPS columns

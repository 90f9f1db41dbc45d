"""The worker pool (envs/executor.py) on local processes and on Ray: results, a worker killed
mid-task (retried, or given up as Lost), a handler's exception; generation and conversion on
Ray give the local executor's episodes; a two-node cluster losing a node mid-run."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from envs.executor import Lost, ProcessPool, WorkerError, make_pool, parse_executor
from tests.marks import slow

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Flaky:
    """A task (value, die, sleep): dies the first time a `die` task is run (a marker file
    remembers it), else sleeps and answers (2 * value, pid); value "raise" raises."""

    marker_dir: str
    render: bool = False

    def setup(self):
        def handle(task):
            value, die, sleep = task
            marker = Path(self.marker_dir) / f"died-{value}"
            if die and not marker.exists():
                marker.touch()
                os._exit(3)
            time.sleep(sleep)
            if value == "raise":
                raise ValueError("boom")
            return 2 * value, os.getpid()

        return handle


def _drain(pool, n):
    return dict(pool.next_result() for _ in range(n))


@slow
def test_process_pool_retries_a_killed_worker_and_gives_up_when_told(tmp_path):
    with ProcessPool(Flaky(str(tmp_path)), 2, retries=1, start="fork") as pool:
        for k in range(4):
            pool.submit(k, (k, k == 2, 0.0))
        got = _drain(pool, 4)
        assert {k: v[0] for k, v in got.items()} == {0: 0, 1: 2, 2: 4, 3: 6} and pool.retried == 1
        assert pool.size == 2  # the dead worker was replaced
    (tmp_path / "died-5").unlink(missing_ok=True)
    with ProcessPool(Flaky(str(tmp_path)), 1, retries=0, start="fork") as pool:
        pool.submit("a", (5, True, 0.0))
        key, out = pool.next_result()
        assert key == "a" and isinstance(out, Lost) and "exit code 3" in out.reason
        pool.submit("b", (1, False, 0.0))  # the replacement answers
        assert pool.next_result()[1][0] == 2


def test_process_pool_raises_a_handler_exception_with_its_traceback(tmp_path):
    with ProcessPool(Flaky(str(tmp_path)), 1, start="fork") as pool:
        pool.submit(0, ("raise", False, 0.0))
        with pytest.raises(WorkerError, match="ValueError: boom"):
            pool.next_result()


def test_executor_choice_is_checked_at_the_boundary(monkeypatch):
    with pytest.raises(ValueError, match="allowed: local, ray"):
        parse_executor("dask", None)
    with pytest.raises(ValueError, match="--address needs --executor ray"):
        parse_executor("local", "1.2.3.4:6379")
    with pytest.raises(ValueError, match="--keep-workers needs --executor ray --address"):
        parse_executor("ray", None, 5.0)
    with pytest.raises(ValueError, match="--keep-workers must be >= 0"):
        parse_executor("ray", "1.2.3.4:6379", -1.0)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ValueError, match=r'pip install -e "\.\[ray\]"'):
        parse_executor("ray", None)


def test_ray_missing_is_one_error_line(monkeypatch, tmp_path, capsys):
    import importlib.util

    from demos.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    assert main(["generate", "PickCube", "--n", "1", "--out", str(tmp_path / "x.h5"), "--executor", "ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and '".[ray]"' in err and "\n" not in err
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------
# Ray: a local cluster of 2 CPUs shared by the tests below

ray = pytest.importorskip("ray", reason='Ray is a test extra: pip install -e ".[test]"')


@pytest.fixture(scope="module")
def local_ray():
    ray.init(address="local", num_cpus=2, resources={"render": 2}, include_dashboard=False, log_to_driver=False,
             configure_logging=False, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        yield
    finally:
        ray.shutdown()


@slow
def test_ray_pool_retries_a_killed_actor(local_ray, tmp_path):
    pool = make_pool(parse_executor("ray", None), Flaky(str(tmp_path)), 2, retries=1)
    try:
        for k in range(4):
            pool.submit(k, (k, k == 1, 0.0))
        got = _drain(pool, 4)
        assert {k: v[0] for k, v in got.items()} == {0: 0, 1: 2, 2: 4, 3: 6} and pool.retried == 1
        pool.submit(9, ("raise", False, 0.0))
        with pytest.raises(WorkerError, match="ValueError: boom"):
            pool.next_result()
    finally:
        pool.close()
    assert ray.is_initialized()  # a pool on a cluster it did not start leaves the cluster up


def kept() -> list[str]:
    """Names of the kept workers up on the cluster."""
    from envs.executor import KEPT_NAMESPACE

    return [a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == KEPT_NAMESPACE]


@slow
def test_kept_ray_workers_serve_the_next_pool_and_leave_when_idle(local_ray, tmp_path):
    from envs.executor import Executor

    def worker_pids(job, keep_minutes=0.03) -> set[int]:  # 1.8 s idle
        pool = make_pool(Executor.RAY, job, 2, keep_minutes=keep_minutes)
        try:
            for k in range(6):
                pool.submit(k, (k, False, 0.3))
            got = _drain(pool, 6)
            assert {k: v[0] for k, v in got.items()} == {k: 2 * k for k in range(6)}
            return {v[1] for v in got.values()}
        finally:
            pool.close()

    first = worker_pids(Flaky(str(tmp_path)))
    assert len(kept()) == 2  # up after their pool closed
    assert worker_pids(Flaky(str(tmp_path))) <= first  # the next pool ran on the same processes
    other = tmp_path / "other"
    other.mkdir()
    assert worker_pids(Flaky(str(other))) <= first  # another job too, its handler built in them
    assert worker_pids(Flaky(str(other)), keep_minutes=0) <= first  # a pool that keeps none takes them over too ...
    assert len(kept()) == 2  # ... and leaves them up
    deadline = time.monotonic() + 30
    while kept() and time.monotonic() < deadline:  # idle for 1.8 s: gone, their CPUs free for the tests below
        time.sleep(0.5)
    assert kept() == []


@slow
def test_a_pool_makes_room_where_kept_workers_of_another_kind_hold_the_cpus(local_ray, tmp_path):
    from envs.executor import Executor

    def run(job, keep_minutes):
        pool = make_pool(Executor.RAY, job, 2, keep_minutes=keep_minutes)
        try:
            for k in range(2):
                pool.submit(k, (k, False, 0.0))
            return _drain(pool, 2)
        finally:
            pool.close()

    run(Flaky(str(tmp_path)), keep_minutes=5)  # CPU-only workers kept on both CPUs for 5 minutes
    assert len(kept()) == 2 and ray.available_resources().get("CPU", 0) == 0
    start = time.monotonic()
    got = run(Flaky(str(tmp_path), render=True), keep_minutes=0)  # rendering workers need those CPUs
    assert {k: v[0] for k, v in got.items()} == {0: 0, 1: 2}
    assert time.monotonic() - start < 60  # not the kept workers' 5 minutes
    assert kept() == []  # they left for it


def _actions(path):
    from replay.trajectory import TrajectoryFile

    f = TrajectoryFile(path)
    try:
        return [(e["episode_id"], e["seed"], f.episode(e["episode_id"], with_obs=False).actions) for e in f.episodes]
    finally:
        f.close()


def _same(a, b):
    assert [x[:2] for x in a] == [x[:2] for x in b]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x[2], y[2])


@slow
def test_ray_generation_and_conversion_give_the_local_episodes(local_ray, tmp_path):
    from demos.generate import GenerateConfig, generate
    from replay.convert import ConvertConfig, run

    local, remote = tmp_path / "local.h5", tmp_path / "ray.h5"
    generate(GenerateConfig(task="PickCube", n=2, out=local, num_envs=1, workers=1))
    p = generate(GenerateConfig(task="PickCube", n=2, out=remote, num_envs=1, workers=2, executor="ray"))
    assert p.saved == 2 and p.retried == 0
    _same(_actions(local), _actions(remote))  # the same seeds and batch size, whichever worker planned them
    outs = {}
    for name, kw in (("local", {}), ("ray", {"executor": "ray", "workers": 2})):
        outs[name] = tmp_path / f"{name}.ee.h5"
        report = run(ConvertConfig(file=local, control="pd_ee_delta_pose", num_envs=1, out=outs[name], **kw))
        assert report.converted == 2
    _same(_actions(outs["local"]), _actions(outs["ray"]))


@slow
def test_ray_evaluation_gives_the_local_results(local_ray, tmp_path):
    from policies.config import DatasetConfig
    from policies.data import DemoData, env_info
    from policies.evaluate import evaluate
    from policies.kinds import build_policy
    from policies.kinds.bc import BCConfig
    from replay.trajectory import TrajectoryFile
    from tests.test_policies import _record

    data = DemoData(str(_record(tmp_path / "s.h5", 2, visual=False)), DatasetConfig())
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    policy = build_policy(data.spec, BCConfig(hidden=(32,), image_features=16, warmup_steps=1))
    env = env_info(TrajectoryFile(tmp_path / "s.h5"))
    kw = {"episodes": 3, "num_envs": 2, "max_episode_steps": 5}
    local = evaluate(policy, env, **kw)
    remote = evaluate(policy, env, **kw, executor="ray", workers=2)
    for r in (local, remote):
        r.pop("seconds")
    assert remote == local and local["episodes"] == 3


# --------------------------------------------------------------------------------------------
# a two-node cluster on this machine (`ray start --head` and a second `ray start --address`)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_cli() -> str:
    return str(Path(sys.executable).with_name("ray"))


@pytest.fixture
def two_nodes(tmp_path):
    ray.shutdown()  # the module's local Ray, if up: `ray stop` below would take it down under its fixture
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled", "RAY_health_check_period_ms": "500",
           "RAY_health_check_failure_threshold": "4", "RAY_health_check_initial_delay_ms": "0"}
    address = f"127.0.0.1:{_free_port()}"
    common = ["--num-cpus", "1", "--disable-usage-stats"]
    subprocess.run([_ray_cli(), "start", "--head", "--node-ip-address", "127.0.0.1", "--port", address.split(":")[1],
                    "--include-dashboard", "false", "--resources", '{"render": 1}', *common],
                   env=env, check=True, capture_output=True)
    second = None
    try:
        # the second node in its own process group: killing the group loses the node at once
        second = subprocess.Popen([_ray_cli(), "start", "--address", address, "--node-ip-address", "127.0.0.1",
                                   "--block", *common], env=env, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        yield address, env, second
    finally:
        if second is not None and second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
        subprocess.run([_ray_cli(), "stop", "--force"], env=env, capture_output=True)


def _node_workers(node_group: int) -> dict[int, str]:
    """pid -> title of the worker processes of the node whose raylet is in process group
    `node_group`: children of the raylet, in process groups of their own (so killing the node's
    group leaves them running until they notice). Ray titles a worker `ray::_Actor.run` while it
    runs a task."""
    rows = [line.split(None, 3) for line in subprocess.run(["ps", "-eo", "pid=,ppid=,pgid=,args="], capture_output=True,
                                                           text=True).stdout.splitlines()]
    rows = [r for r in rows if len(r) == 4]
    node = {pid for pid, _, pgid, _ in rows if pgid == str(node_group)}
    return {int(pid): args for pid, ppid, _, args in rows if ppid in node and args.startswith("ray::")}


@slow
def test_two_node_cluster_loses_a_node_mid_run(two_nodes, tmp_path):
    address, env, second = two_nodes
    out = tmp_path / "two.h5"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # both nodes up
        probe = subprocess.run([_ray_cli(), "status", "--address", address], env=env, capture_output=True, text=True)
        if probe.stdout.count("node_") >= 2:
            break
        time.sleep(1)
    cmd = [sys.executable, "-m", "demos.cli", "generate", "PickCube", "--n", "16", "--num-envs", "1", "--workers", "2",
           "--out", str(out), "--executor", "ray", "--address", address]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    from replay.trajectory import read_meta

    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:  # the second node goes once work has landed
        workers = _node_workers(second.pid)
        if out.exists() and any(t.startswith("ray::_Actor.run") for t in workers.values()):  # ... while its worker plans
            try:
                if len(read_meta(out)["episodes"]) >= 1:
                    break
            except ValueError:
                pass
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before the second node's worker took a batch"
    os.killpg(second.pid, signal.SIGKILL)  # the node is lost as a machine is: its raylet and its workers at once
    for pid in workers:
        with contextlib.suppress(ProcessLookupError):  # gone with its raylet already
            os.kill(pid, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-2000:]
    episodes = read_meta(out)["episodes"]
    assert [e["episode_id"] for e in episodes] == list(range(16))  # no gap, no duplicate
    assert len({e["seed"] for e in episodes}) == 16
    # the lost node's worker was planning a batch when it went: that batch ran again elsewhere
    assert "batches retried after a worker was lost" in stdout, stdout


@slow
def test_kept_workers_on_a_cluster_serve_the_next_command(two_nodes, tmp_path):
    address, env, _ = two_nodes
    probe = ("import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False); "
             "print(sorted(a['name'] for a in ray.util.list_named_actors(all_namespaces=True)))")

    def kept() -> str:
        return subprocess.run([sys.executable, "-c", probe, address], env=env, capture_output=True, text=True).stdout

    runs = []
    for k in range(2):
        out = tmp_path / f"kept{k}.h5"
        cmd = [sys.executable, "-m", "demos.cli", "generate", "PickCube", "--n", "2", "--num-envs", "1", "--workers", "2",
               "--out", str(out), "--executor", "ray", "--address", address, "--keep-workers", "0.1"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(_actions(out))
        assert kept().count("worker-") == 2  # up after the command ended, for the next one
    _same(runs[0], runs[1])  # the kept workers give the same episodes
    deadline = time.monotonic() + 60
    while "worker-" in kept() and time.monotonic() < deadline:  # idle 6 s: gone
        time.sleep(1)
    assert "worker-" not in kept()

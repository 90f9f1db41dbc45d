"""Worker pools: the one place where generation, conversion, evaluation and the planners hand out
work. (A batched env's own worker processes, envs/parallel, step in lockstep and are not a pool.)

A pool runs `count` workers. Each worker builds its state once, `job.setup()` returning a
handler, and answers every task it is given with that handler, so envs and planners are built
once per worker, not once per task. `submit(key, task)` hands a task to an idle worker;
`next_result()` blocks until one lands and returns `(key, result)`.

A worker that dies (a segfault, the OOM killer, a lost node) is replaced. Its task is given to
a worker again up to `retries` times; after that `next_result()` returns `(key, Lost(reason))`.
`retried` counts the re-runs. An exception raised by a handler is a bug, not a crash: it is
raised in the caller as a `WorkerError` carrying the worker's traceback.

Backends: `ProcessPool` (processes on this machine, the default) and `RayPool` (Ray actors on a
cluster, `pip install -e ".[ray]"`). `make_pool` picks one by `Executor`.

Kept workers (`keep_minutes` > 0, on a running cluster): a Ray pool's actors are named and
detached, and stay up after the pool closes, holding their imports and the handler of the last
job they ran, until idle for `keep_minutes`; the next pool on that cluster with the same code
takes them over instead of starting processes (the seconds of a Ray pool's start-up). They are
named by a hash of our packages' sources, so a changed tree starts workers of its own; kept
workers that are not a new pool's (another tree, or CPU-only ones where it renders) leave when
idle if the pool needs their CPUs, rather than holding them for their keep time.
"""

from __future__ import annotations

import enum
import multiprocessing as mp
import os
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Protocol


class Job(Protocol):
    """Picklable description of a worker: `setup()` runs once in the worker and returns the
    handler of its tasks. `render`: whether the handler renders cameras (a Ray worker then runs
    only on nodes offering the `render` resource)."""

    render: bool

    def setup(self) -> Callable[[Any], Any]: ...


@dataclass(frozen=True)
class Lost:
    """The result of a task whose worker died more often than the pool retries."""

    reason: str


class WorkerError(RuntimeError):
    """A handler raised; the message ends with the worker's traceback."""


class Executor(enum.Enum):
    LOCAL = "local"
    RAY = "ray"


RAY_MISSING = 'the ray executor needs Ray: pip install -e ".[ray]"'


def parse_executor(value: str | Executor, address: str | None, keep_minutes: float = 0.0) -> Executor:
    """The executor a config asks for, checked at the boundary: Ray installed, an address only for
    Ray, kept workers only on a running cluster."""
    from importlib.util import find_spec

    from envs.modes import parse_mode

    kind = parse_mode(Executor, value, "executor")
    if address is not None and kind is not Executor.RAY:
        raise ValueError("--address needs --executor ray")
    if not keep_minutes >= 0:
        raise ValueError(f"--keep-workers must be >= 0 minutes, got {keep_minutes}")
    if keep_minutes and address is None:
        raise ValueError("--keep-workers needs --executor ray --address ADDR (a running cluster): "
                         "a Ray started for the run stops with it")
    if kind is Executor.RAY and find_spec("ray") is None:
        raise ValueError(RAY_MISSING)
    return kind
RENDER = "render"  # the Ray resource a node offers when it can render cameras (a GPU or Vulkan)
# What every worker of ours imports (seconds of it: torch alone is 2 s). A Ray started for a run
# has its idle worker processes import these as soon as they start, while the command is still
# starting up, so an actor placed on one builds its handler at once; on a `ray start` cluster
# the same list goes in RAY_preload_python_modules (README).
WORKER_IMPORTS = ("torch", "sapien", "gymnasium", "envs", "demos.workers", "demos.runner")


def _setup_worker() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle; it closes the pool
    import torch

    torch.set_num_threads(1)  # the env's torch work is small; more threads per worker only spin


# --------------------------------------------------------------------------------------------
# processes on this machine


def _serve(job: Job, conn: Connection, owner: int) -> None:
    """Answers tasks until told to stop, the pipe closes, or the owning process is gone (a forked
    sibling may hold a copy of the owner's pipe end, so EOF alone is not enough)."""
    _setup_worker()
    try:
        handler = job.setup()
    except Exception:
        conn.send(("error", None, traceback.format_exc()))
        return
    conn.send(("ready", None, None))
    while True:
        try:
            while not conn.poll(1.0):
                if os.getppid() != owner:
                    return
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        key, task = msg
        try:
            conn.send(("done", key, handler(task)))
        except Exception:
            conn.send(("error", key, traceback.format_exc()))
    # the process exits here; what the handler holds (envs, planner pools) goes with it


class ProcessPool:
    """Worker processes on this machine, each on its own pipe, one task at a time.
    `start`: "spawn" (no inherited torch or PhysX state) or "fork" (starts with this process's
    imports; only when this process has built no env). `daemon` workers cannot start processes
    of their own but end with this one."""

    def __init__(self, job: Job, count: int, retries: int = 2, start: str = "spawn", daemon: bool = False,
                 wait_ready: bool = True):
        self.job, self.retries, self.daemon = job, retries, daemon
        self.ctx = mp.get_context(start if os.name == "posix" else "spawn")
        self.slots: list[tuple[mp.Process, Connection]] = []
        self.busy: dict[int, tuple[Any, Any, int]] = {}  # slot -> (key, task, attempt)
        self.queue: list[tuple[Any, Any, int]] = []  # retries waiting for an idle worker
        self.retried = 0
        for _ in range(max(1, count)):
            self.slots.append(self._start())
        if wait_ready:
            for slot in range(len(self.slots)):
                self._wait_ready(slot)

    @property
    def size(self) -> int:
        return len(self.slots)

    def _start(self) -> tuple[mp.Process, Connection]:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_serve, args=(self.job, child, os.getpid()), daemon=self.daemon)
        proc.start()
        child.close()
        return proc, parent

    def _wait_ready(self, slot: int) -> None:
        proc, conn = self.slots[slot]
        try:
            self._handle(slot, conn.recv())
        except EOFError:
            raise RuntimeError(f"a worker failed to start (exit code {proc.exitcode})") from None

    def _handle(self, slot: int, msg) -> tuple[Any, Any] | None:
        kind, key, value = msg
        if kind == "ready":
            return None
        if kind == "error":
            where = "while starting" if key is None else "on a task"
            raise WorkerError(f"a worker raised {where}:\n{value}")
        del self.busy[slot]
        return key, value

    @property
    def idle(self) -> int:
        """Tasks `submit` can take now without queueing."""
        return len(self.slots) - len(self.busy) - len(self.queue)

    def submit(self, key, task) -> None:
        self._send(key, task, 0)

    def _send(self, key, task, attempt: int) -> None:
        free = [s for s in range(len(self.slots)) if s not in self.busy]
        if not free:
            self.queue.append((key, task, attempt))
            return
        self.slots[free[0]][1].send((key, task))
        self.busy[free[0]] = (key, task, attempt)

    def next_result(self) -> tuple[Any, Any]:
        """Blocks until a busy worker answers, or dies with a task it may not retry."""
        while True:
            if not self.busy:
                raise RuntimeError("next_result() with no task submitted")
            conns = {self.slots[s][1]: s for s in self.busy}
            sentinels = {self.slots[s][0].sentinel: s for s in self.busy}
            for ready in wait(list(conns) + list(sentinels)):
                slot = conns.get(ready, sentinels.get(ready))
                if slot not in self.busy:
                    continue
                proc, conn = self.slots[slot]
                try:
                    while conn.poll():
                        out = self._handle(slot, conn.recv())
                        if out is not None:
                            self._drain_queue()  # the freed worker takes a waiting task
                            return out
                except (EOFError, OSError):
                    pass
                if not proc.is_alive():
                    key, task, attempt = self.busy.pop(slot)
                    conn.close()
                    self.slots[slot] = self._start()
                    reason = f"a worker died (exit code {proc.exitcode})"
                    if attempt < self.retries:
                        self.retried += 1
                        self.queue.insert(0, (key, task, attempt + 1))
                    else:
                        self._drain_queue()
                        return key, Lost(reason)
                    self._drain_queue()
                    break
            self._drain_queue()

    def _drain_queue(self) -> None:
        while self.queue and len(self.busy) < len(self.slots):
            self._send(*self.queue.pop(0))

    def close(self) -> None:
        """Idle workers are told to stop; busy ones are killed (their task is not wanted, and a
        result larger than the pipe's buffer would block them until this end reads it)."""
        for slot, (proc, conn) in enumerate(self.slots):
            if slot in self.busy:
                proc.kill()
                continue
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        deadline = time.monotonic() + 10
        for proc, conn in self.slots:
            proc.join(timeout=max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join()
            conn.close()
        self.slots, self.busy, self.queue = [], {}, []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Ray actors


class _Actor:
    """A Ray actor holding one handler (the process-pool worker's counterpart)."""

    def __init__(self, job: Job):
        _setup_worker()
        self.handler = job.setup()

    def ping(self) -> None:
        pass

    def run(self, task):
        try:
            return "done", self.handler(task)
        except Exception:
            return "error", traceback.format_exc()


KEPT_NAMESPACE = "skillforge"  # the Ray namespace of kept workers
RETIRE_IDLE_S = 2.0  # a kept worker idle this long is not between two tasks of a running pool


def code_version() -> str:
    """A hash of our packages' sources (each .py file's path, size and modification time): kept
    workers run the code they were started with, so their names carry it."""
    import hashlib
    from importlib.util import find_spec
    from pathlib import Path

    h = hashlib.sha1()
    for package in ("envs", "demos", "replay", "policies"):
        spec = find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            for f in sorted(Path(root).rglob("*.py")):
                st = f.stat()
                h.update(f"{f}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:12]


class _KeptActor:
    """A Ray actor kept between pools: it holds the handler of the last job it was given and
    leaves (its process exits) once idle for `idle_s`."""

    def __init__(self, idle_s: float):
        import threading

        _setup_worker()
        self.key: str | None = None
        self.handler: Callable[[Any], Any] | None = None
        self.idle_s, self.last, self.running = idle_s, time.monotonic(), 0
        threading.Thread(target=self._expire, daemon=True).start()

    def _expire(self) -> None:
        while True:
            time.sleep(min(1.0, self.idle_s / 4))
            if not self.running and time.monotonic() - self.last > self.idle_s:
                os._exit(0)  # Ray sees the actor gone; its name is free again

    def retire(self, idle_s: float) -> bool:
        """Leave once idle for idle_s (a pool between two tasks is idle for milliseconds, not
        seconds), waiting for the rest of it; False where busy."""
        if self.running:
            return False
        time.sleep(max(0.0, idle_s - (time.monotonic() - self.last)))
        os._exit(0)

    def prepare(self, key: str, job: Job) -> None:
        """Hold job's handler, built unless it is the one held already."""
        self.running += 1
        try:
            if key != self.key:
                self.key, self.handler = None, None  # the previous job's envs go first
                self.handler, self.key = job.setup(), key
        finally:
            self.running -= 1
            self.last = time.monotonic()

    def run(self, key: str, task):
        """("stale", None) where another pool's job took this worker over since `key`'s prepare."""
        if key != self.key:
            return "stale", None
        self.running += 1
        try:
            return "done", self.handler(task)
        except Exception:
            return "error", traceback.format_exc()
        finally:
            self.running -= 1
            self.last = time.monotonic()


class RayPool:
    """Ray actors, one CPU each, on the cluster at `address` (None: a local Ray started for this
    pool and stopped with it). `count` None: one worker per CPU of the cluster (per `render`
    resource for a job that renders). Results stream back in the order they finish.

    Actors take tasks as soon as each is built, not when the last one is.
    An actor whose process or node is lost leaves the pool at once, and its task goes to the next
    live actor; a replacement is asked for and joins the pool when Ray has placed it and its
    handler is built (on a cluster that lost a node, maybe never).

    keep_minutes > 0 (a cluster this pool did not start): the actors are kept workers (the
    module's docstring), taken over from an earlier pool where they are up."""

    def __init__(self, job: Job, count: int | None = None, retries: int = 2, address: str | None = None,
                 num_cpus: int | None = None, keep_minutes: float = 0.0):
        try:
            import ray
        except ImportError:
            raise ValueError(RAY_MISSING) from None
        self.ray, self.job, self.retries = ray, job, retries
        self.started = False  # this pool called ray.init (and shuts Ray down at close)
        self.own_ray = False  # ... starting a Ray of its own, which goes with it
        self.actors: dict[int, Any] = {}  # id -> actor handle, ready to take tasks
        self.starting: dict[Any, tuple[int, Any]] = {}  # ready ref -> (id, actor) not placed or built yet
        self.busy: dict[Any, tuple[int, Any, Any, int]] = {}  # ref -> (actor id, key, task, attempt)
        self.queue: list[tuple[Any, Any, int]] = []  # tasks waiting for an idle actor
        self.retried = 0
        self.ids = 0
        if not ray.is_initialized():
            if address is None:
                cpus = num_cpus or os.cpu_count() or 1
                # this machine is taken to render (a GPU or Vulkan): every CPU is a render slot too
                # "local": a new Ray of our own even where a `ray start` cluster runs on this machine
                self.own_ray = True
                ray.init(address="local", num_cpus=cpus, resources={RENDER: cpus}, include_dashboard=False,
                         log_to_driver=False, configure_logging=False,
                         _system_config={"preload_python_modules": list(WORKER_IMPORTS)})
            else:
                ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
            self.started = True
        if keep_minutes and self.own_ray:
            self.close()
            raise ValueError("kept workers need a running cluster: a Ray started for the run stops with it")
        have = ray.cluster_resources()
        if job.render and have.get(RENDER, 0) < 1:
            self.close()
            raise ValueError(f"no node of the Ray cluster offers the '{RENDER}' resource this job needs: start the nodes "
                             f"that can render (a GPU or Vulkan) with `ray start ... --resources '{{\"{RENDER}\": N}}'`")
        if count is None:
            count = int(have.get(RENDER if job.render else "CPU", 1))
        self.options: dict[str, Any] = {"num_cpus": 1, "max_restarts": 0, "max_task_retries": 0}
        if job.render:
            self.options["resources"] = {RENDER: 1}
        self.keep_s = 60.0 * keep_minutes
        self.kept: set[int] = set()  # ids of kept workers: left up at close
        if not self.own_ray:  # a running cluster: it may hold kept workers of this code, which any pool takes over
            import hashlib
            import pickle

            self.job_key = hashlib.sha1(pickle.dumps(job)).hexdigest()
            self.prefix = f"worker-{code_version()}-{'render' if job.render else 'cpu'}"
        self.remote = ray.remote(_Actor)
        self.remote_kept = ray.remote(_KeptActor)
        if not self.own_ray:
            self._make_room(max(1, count))
        for _ in range(max(1, count)):
            self._start()
        # The actors build their handlers in parallel and each takes tasks once it is built: Ray
        # places and starts them over seconds, and the first need not wait for the last. The first
        # one built proves the handler can be built; one that cannot fails here.
        while True:
            [ref], _ = ray.wait(list(self.starting), num_returns=1)
            i, actor = self.starting.pop(ref)
            try:
                ray.get(ref)
                break
            except ray.exceptions.RayActorError as e:
                if i in self.kept:  # a kept worker that left as it was found: a new one
                    self._start()
                    continue
                self.close()
                raise WorkerError(f"a worker failed to start: {e}") from None
            except ray.exceptions.RayError as e:
                self.close()
                raise WorkerError(f"a worker failed to start: {e}") from None
        self.actors[i] = actor

    def _make_room(self, count: int) -> None:
        """Kept workers that are not this pool's (another code version, or the other kind: CPU-only
        against rendering) hold a CPU each until they have been idle for their keep time, so a pool
        could wait that long for CPUs to place its own. Where the cluster has fewer free CPUs than
        this pool will start workers, the idle ones of them leave now."""
        ray = self.ray
        named = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == KEPT_NAMESPACE}
        ours = sum(f"{self.prefix}-{i}" in named for i in range(count))
        if ray.available_resources().get("CPU", 0) >= count - ours:
            return
        asked = []
        for name in sorted(n for n in named if n.startswith("worker-") and not n.startswith(f"{self.prefix}-")):
            try:
                asked.append(ray.get_actor(name, namespace=KEPT_NAMESPACE).retire.remote(RETIRE_IDLE_S))
            except ValueError:  # left meanwhile
                pass
        for ref in asked:
            try:
                ray.get(ref, timeout=10)
            except ray.exceptions.RayError:  # it left (that is the answer) or is unreachable
                pass

    def _start(self) -> None:
        """Worker `ids`: the kept worker of that name where one is up (it builds this job's handler
        unless it holds it), else a new one, kept if this pool keeps its workers."""
        actor = None
        if not self.own_ray:
            name = f"{self.prefix}-{self.ids}"
            if self.keep_s:
                actor = self.remote_kept.options(**self.options, name=name, namespace=KEPT_NAMESPACE,
                                                 lifetime="detached", get_if_exists=True).remote(self.keep_s)
            else:
                try:
                    actor = self.ray.get_actor(name, namespace=KEPT_NAMESPACE)
                except ValueError:  # none of that name
                    pass
        if actor is not None:
            self.kept.add(self.ids)
            ready = actor.prepare.remote(self.job_key, self.job)
        else:
            actor = self.remote.options(**self.options).remote(self.job)
            ready = actor.ping.remote()
        self.starting[ready] = (self.ids, actor)
        self.ids += 1

    @property
    def size(self) -> int:
        return len(self.actors)

    @property
    def idle(self) -> int:
        """Tasks `submit` can take now; an actor still starting counts: its task waits for it
        (or for the first actor that is free)."""
        return len(self.actors) + len(self.starting) - len(self.busy) - len(self.queue)

    def submit(self, key, task) -> None:
        self.queue.append((key, task, 0))
        self._drain_queue()

    def _drain_queue(self) -> None:
        used = {i for i, *_ in self.busy.values()}
        free = [i for i in self.actors if i not in used]
        while self.queue and free:
            key, task, attempt = self.queue.pop(0)
            i = free.pop(0)
            self.busy[self._run(i, task)] = (i, key, task, attempt)

    def _run(self, i: int, task):
        actor = self.actors[i]
        return actor.run.remote(self.job_key, task) if i in self.kept else actor.run.remote(task)

    def next_result(self) -> tuple[Any, Any]:
        ray = self.ray
        while True:
            if not self.busy:
                if not self.queue:
                    raise RuntimeError("next_result() with no task submitted")
                if not self.starting:
                    raise RuntimeError("every worker of the Ray cluster is lost")
            [ref], _ = ray.wait(list(self.busy) + list(self.starting), num_returns=1)
            if ref in self.starting:  # a replacement is placed and built, or failed
                i, actor = self.starting.pop(ref)
                try:
                    ray.get(ref)
                    self.actors[i] = actor
                except ray.exceptions.RayError:
                    if i in self.kept:  # a kept worker that left as it was found: a new one
                        self._start()
                self._drain_queue()
                continue
            i, key, task, attempt = self.busy.pop(ref)
            try:
                kind, value = ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as e:
                # the actor's process or node is gone: its task goes to the next live actor
                self._drop(i)
                if attempt < self.retries:
                    self.retried += 1
                    self.queue.insert(0, (key, task, attempt + 1))
                    self._drain_queue()
                    continue
                self._drain_queue()
                return key, Lost(f"a worker died ({type(e).__name__})")
            if kind == "stale":  # a kept worker that another pool's job took over: this job's handler again
                try:
                    ray.get(self.actors[i].prepare.remote(self.job_key, self.job))
                except ray.exceptions.RayError as e:
                    raise WorkerError(f"a kept worker failed to build the handler again: {e}") from None
                self.busy[self._run(i, task)] = (i, key, task, attempt)
                continue
            self._drain_queue()
            if kind == "error":
                raise WorkerError(f"a worker raised on a task:\n{value}")
            return key, value

    def _drop(self, i: int) -> None:
        actor = self.actors.pop(i)
        try:
            self.ray.kill(actor, no_restart=True)
        except Exception:
            pass
        self._start()

    def close(self) -> None:
        kept = getattr(self, "kept", set())  # kept workers stay up for the next pool
        for i, actor in [*self.actors.items(), *self.starting.values()]:
            if i not in kept:
                try:
                    self.ray.kill(actor, no_restart=True)
                except Exception:
                    pass
        self.actors, self.starting, self.busy, self.queue = {}, {}, {}, []
        if self.started:
            self.ray.shutdown()
            self.started = False

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


Pool = ProcessPool | RayPool


def make_pool(executor: Executor, job: Job, count: int | None, retries: int = 2, address: str | None = None,
              start: str = "spawn", keep_minutes: float = 0.0) -> Pool:
    """The pool of `executor`: local processes (`count` of them, `start` method) or Ray actors
    (`count` None: one per CPU of the cluster; kept workers with keep_minutes > 0)."""
    if executor is Executor.RAY:
        return RayPool(job, count, retries, address, keep_minutes=keep_minutes)
    return ProcessPool(job, count or os.cpu_count() or 1, retries, start)

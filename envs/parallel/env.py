"""N batched envs spread over W worker processes, behind the batched API of `BaseEnv`.

    env = gym.make("PickCube-v1", num_envs=64, num_workers=4)   # 4 slices x 16 envs

Worker k runs the task class in-process on a contiguous slice of the envs, which keep their
global indices: env i sits at its own grid place in the worker's scene, and `reset(seed=s)` seeds
env i with s + i, as in one process. Actions, observations, rewards, flags and info move through
one shared-memory segment; on the step path the pipes carry one byte each way. Worker 0 is this
process itself (`LocalWorker`): it steps the first slice while worker processes 1..W-1 step theirs,
so W workers fill W cores with W processes.

Same results as one process, to float32 rounding: every env starts bit-identically for a seed,
but PhysX batches the solver work of the envs that share a scene, so which other envs share
it can move the last bit of a step (1e-7); contacts can then amplify that over a long rollout
(`python -m benchmarks.parallel_compare` prints the differences).

Lifetime: the shared segment is unlinked as soon as every worker has mapped it, so nothing is
left in /dev/shm even if the parent is killed; workers leave when their pipe closes; `close()`,
`with`, garbage collection and interpreter exit stop them. A worker process that dies raises
`WorkerDiedError` in the parent at once (the parent waits on each worker's exit as well as its
reply) and closes the env. A worker that hangs without dying is not detected. Worker 0 runs in
this process: a crash of the simulator there (a segfault) ends this process, as with num_workers=1.
"""

from __future__ import annotations

import inspect
import multiprocessing as mp
import os
import pickle
import secrets
import signal
import time
import weakref
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
import torch

from envs.core.env import check_action
from envs.parallel.layout import Field, Layout, Path, unflatten
from envs.parallel.spaces import with_num_envs
from envs.parallel.worker import OK, STEP, LocalWorker, WorkerSpec, run_worker


class WorkerDiedError(RuntimeError):
    """A worker process of a parallel env exited while the env was open."""


def split(num_envs: int, num_workers: int) -> list[tuple[int, int]]:
    """(first, count) per worker: contiguous slices whose sizes differ by at most one."""
    base, extra = divmod(num_envs, num_workers)
    sizes = [base + (k < extra) for k in range(num_workers)]
    return [(sum(sizes[:k]), sizes[k]) for k in range(num_workers)]


class _Segment:
    """The shared segment; unlinked once mapped by every worker, so it can never be left behind."""

    def __init__(self, size: int):
        self.shm = SharedMemory(name=f"skillforge_{os.getpid()}_{secrets.token_hex(4)}", create=True, size=size)
        self.linked = True

    def unlink(self) -> None:
        if self.linked:
            self.linked = False
            self.shm.unlink()

    def release(self) -> None:
        self.unlink()
        try:
            self.shm.close()
        except BufferError:  # a view is still alive; the mapping goes when it does
            pass


def _shutdown(owner: int, procs: list, conns: list[Connection], segments: list[_Segment]) -> None:
    """Stop the workers (politely, then by force) and free the segment. Runs once, from close(),
    garbage collection or interpreter exit; a forked copy of the parent does nothing."""
    if os.getpid() != owner:
        return
    for conn in conns:
        try:
            conn.send_bytes(pickle.dumps(("close",)))
        except OSError:
            pass
    deadline = time.monotonic() + 2.0
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(1.0)
    for conn in conns:
        conn.close()
    for segment in segments:
        segment.release()


def _exit_text(code: int | None) -> str:
    if code is None:
        return "closed its pipe"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class ParallelEnv(gym.Env):
    """The batched env API over worker processes; built by `BaseEnv.__new__` when num_workers != 1."""

    metadata = {"render_modes": []}
    render_mode = None
    poll_s = 0.5  # seconds between liveness checks of a worker that has not answered yet
    # After answering, a worker polls its pipe this long before blocking on it: the next step's
    # command usually comes within a millisecond, and waking a blocked process costs more than
    # that on a virtual machine's idle vCPU (polling gained 6-11 % at 2 workers on a 2-core VM).
    worker_spin_s = 0.002

    def __init__(self, env_cls: type, num_workers: int, *args: Any, **kwargs: Any):
        if args:
            bound = inspect.signature(env_cls.__init__).bind_partial(None, *args, **kwargs).arguments
            kwargs = {k: v for k, v in bound.items() if k not in ("self", "kwargs")} | bound.get("kwargs", {})
        kwargs.pop("first_env_index", None)
        self.num_envs = int(kwargs.pop("num_envs", 1))
        self.num_workers = int(num_workers)
        if not 1 <= self.num_workers <= self.num_envs:
            raise ValueError(f"num_workers must be in [1, num_envs = {self.num_envs}], got {num_workers}")
        self.env_cls = env_cls
        self.slices = split(self.num_envs, self.num_workers)
        self._closed = False
        self._procs: list = []
        self._conns: list[Connection] = []
        self._outstanding = [0] * self.num_workers  # replies each worker still owes
        self._segments: list[_Segment] = []
        self._finalizer = weakref.finalize(self, _shutdown, os.getpid(), self._procs, self._conns, self._segments)
        try:
            self._start(kwargs)
        except BaseException:
            self.close()
            raise

    # ---- start ----------------------------------------------------------------------------------
    def _start(self, kwargs: dict[str, Any]) -> None:
        ctx = mp.get_context("forkserver")  # workers fork from a clean server, not from this process
        preload = ["envs"] + ([self.env_cls.__module__] if self.env_cls.__module__ != "__main__" else [])
        ctx.set_forkserver_preload(preload)  # takes effect when the server starts (once per process)
        for k, (first, n) in enumerate(self.slices):
            if k == 0:  # built below, in this process, while the worker processes build theirs
                continue
            parent_end, child_end = ctx.Pipe()
            spec = WorkerSpec(self.env_cls, kwargs, k, first, n, self.worker_spin_s)
            p = ctx.Process(target=run_worker, args=(child_end, spec), name=f"skillforge-worker-{k}", daemon=True)
            p.start()
            child_end.close()
            self._procs.append(p)
            self._conns.append(parent_end)
        local = LocalWorker(WorkerSpec(self.env_cls, kwargs, 0, *self.slices[0]))
        self._procs.insert(0, local)
        self._conns.insert(0, local)
        self._outstanding = [1] * self.num_workers  # each owes its description
        descriptions = self._gather(range(self.num_workers), "starting")
        d = descriptions[0]
        for k, other in enumerate(descriptions):
            if [(f.path, f.dtype, f.shape) for f in other["fields"]] != [(f.path, f.dtype, f.shape) for f in d["fields"]]:
                raise RuntimeError(f"worker {k} describes other observation or info fields than worker 0")
        for name, value in d["attrs"].items():
            setattr(self, name, value)
        self.single_action_space = d["single_action_space"]
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.observation_space = with_num_envs(d["observation_space"], self.num_envs)
        self._obs_skeleton = d["obs_skeleton"]
        action_dim = self.single_action_space.shape
        fields = [
            Field(("action",), "<f4", action_dim),
            *d["fields"],
            Field(("reward",), "<f4", ()),
            Field(("terminated",), "|b1", ()),
            Field(("truncated",), "|b1", ()),
            Field(("episode_seeds",), "<i8", ()),
        ]
        layout = Layout(fields, self.num_envs)
        segment = _Segment(layout.size)
        self._segments.append(segment)
        self._gather(self._send_all(pickle.dumps(("attach", segment.shm.name, layout))), "attaching shared memory")
        segment.unlink()  # every worker has it mapped: from now on nothing is left to leak
        self._views = layout.tensors(segment.shm.buf)
        self._views[("episode_seeds",)].fill_(-1)
        self._obs_paths = [f.path for f in fields if f.path[0] == "obs"]
        self._info_paths = [f.path for f in fields if f.path[0] == "info"]
        # the workers' envs start initialised, as an in-process env does: fill the buffers
        self._gather(self._send_all(pickle.dumps(("reset", [], None, {}))), "observing")

    # ---- talking to the workers -----------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            death = getattr(self, "_death", None)
            raise WorkerDiedError(death) if death else RuntimeError("the parallel env is closed")

    def _send(self, k: int, data: bytes, what: str) -> None:
        while self._outstanding[k]:  # the reply to a call that was interrupted (Ctrl-C) comes first
            self._receive(k, "finishing an interrupted call")
        try:
            self._conns[k].send_bytes(data)
        except OSError:
            self._died(k, what)
        self._outstanding[k] += 1

    def _send_all(self, data: bytes, workers: Sequence[int] | None = None) -> list[int]:
        ks = range(self.num_workers) if workers is None else workers
        for k in ks:
            self._send(k, data, "receiving a command")
        return list(ks)

    def _receive(self, k: int, what: str) -> bytes:
        """Worker k's next reply. Its pipe reads end-of-file as soon as it dies; one that has not
        answered within `poll_s` is also checked for being alive."""
        conn = self._conns[k]
        try:
            while not conn.poll(self.poll_s):
                if not self._procs[k].is_alive():
                    self._died(k, what)
            data = conn.recv_bytes()
        except (EOFError, OSError):
            self._died(k, what)
        self._outstanding[k] -= 1
        return data

    def _settle(self) -> None:
        """Wait out replies still owed by an interrupted call before the shared buffers are written."""
        for k in range(self.num_workers):
            while self._outstanding[k]:
                self._receive(k, "finishing an interrupted call")

    def _gather(self, workers: Sequence[int], what: str) -> list[Any]:
        """Each worker's reply, in order; raises the first worker error, or WorkerDiedError as soon
        as a worker is gone."""
        replies = {k: self._receive(k, what) for k in workers}
        out, error = [], None
        for k in workers:
            data = replies[k]
            if data == OK:
                out.append(None)
                continue
            status, value, *tb = pickle.loads(data)
            if status == "err" and error is None:
                error = (k, value, tb[0])
            out.append(value if status == "ok" else None)
        if error is not None:
            k, exc, tb = error
            exc.__cause__ = RuntimeError(f"raised in worker {k}:\n{tb}")
            raise exc
        return out

    def _died(self, k: int, what: str) -> None:
        p = self._procs[k]
        p.join(1.0)
        first, n = self.slices[k]
        self._death = (
            f"worker {k} of {self.num_workers} (pid {p.pid}, envs {first}..{first + n - 1}) "
            f"{_exit_text(p.exitcode)} (noticed while {what}); the parallel env is closed"
        )
        if what == "starting":
            self._death += (
                " (its error is printed above; a script that makes a parallel env at import time needs"
                " `if __name__ == '__main__':`, as workers start like multiprocessing's forkserver children)"
            )
        self.close()
        raise WorkerDiedError(self._death) from None

    def _run(self, command: tuple, what: str, workers: Sequence[int] | None = None) -> list[Any]:
        self._check_open()
        return self._gather(self._send_all(pickle.dumps(command), workers), what)

    def _read(self, prefix: Path, paths: list[Path]) -> Any:
        return unflatten(((p, self._views[p].clone()) for p in paths), prefix)

    def _read_obs(self) -> Any:
        """The observation in the workers' key order, with their empty dicts (no leaves, so no
        shared memory) put back: pointcloud's sensor_data, none's whole observation."""
        return _shaped(self._read(("obs",), self._obs_paths), self._obs_skeleton)

    def _split_rows(self, env_idx) -> tuple[torch.Tensor, list[tuple[list[int], torch.Tensor]]]:
        """For global env indices: per worker, (its local indices, positions of those in env_idx)."""
        idx = torch.arange(self.num_envs) if env_idx is None else torch.as_tensor(env_idx, dtype=torch.long).flatten()
        if len(idx) and (idx.min() < 0 or idx.max() >= self.num_envs):
            raise IndexError(f"env_idx {idx.tolist()} out of range for num_envs = {self.num_envs}")
        out = []
        for first, n in self.slices:
            pos = torch.nonzero((idx >= first) & (idx < first + n)).flatten()
            out.append(((idx[pos] - first).tolist(), pos))
        return idx, out

    # ---- gymnasium API --------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict | None = None):
        options = dict(options or {})
        env_idx = options.pop("env_idx", None)
        idx, per_worker = self._split_rows(env_idx)
        seeds = None
        if seed is not None:
            seeds = [int(seed) + k for k in range(len(idx))] if np.isscalar(seed) else [int(s) for s in seed]
            if len(seeds) != len(idx):
                raise ValueError(f"reset got {len(seeds)} seeds for {len(idx)} envs")
        self._check_open()
        for k, (local, pos) in enumerate(per_worker):
            worker_seeds = None if seeds is None else [seeds[j] for j in pos.tolist()]
            local_idx = None if env_idx is None else local
            self._send(k, pickle.dumps(("reset", local_idx, worker_seeds, options)), "resetting")
        self._gather(range(self.num_workers), "resetting")
        return self._read_obs(), self._read(("info",), self._info_paths)

    def step(self, action):
        a = check_action(action, (self.num_envs, *self.single_action_space.shape), self.control_mode)  # before anything is sent
        self._check_open()
        self._settle()
        self._views[("action",)].copy_(a)
        for k in range(self.num_workers):
            self._send(k, STEP, "stepping")
        self._gather(range(self.num_workers), "stepping")
        v = self._views
        obs, info = self._read_obs(), self._read(("info",), self._info_paths)
        return obs, v[("reward",)].clone(), v[("terminated",)].clone(), v[("truncated",)].clone(), info

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._views = {}
        self._finalizer()

    def __repr__(self) -> str:
        return f"ParallelEnv({getattr(self, 'env_id', '?')}, num_envs={self.num_envs}, num_workers={self.num_workers})"

    # ---- attributes that live in the workers ----------------------------------------------------
    @property
    def worker_pids(self) -> list[int]:
        """The worker processes' pids (the first slice is stepped by this process)."""
        return [p.pid for p in self._procs if not isinstance(p, LocalWorker)]

    @property
    def elapsed_steps(self) -> torch.Tensor:  # (N,) int32
        self._check_open()
        return self._views[("info", "elapsed_steps")].clone()

    @property
    def episode_seeds(self) -> torch.Tensor:  # (N,) int64, -1 before the first reset
        self._check_open()
        return self._views[("episode_seeds",)].clone()

    @property
    def max_episode_steps(self) -> int:
        return self._max_episode_steps

    @max_episode_steps.setter
    def max_episode_steps(self, value: int) -> None:
        if self._procs and not self._closed and hasattr(self, "_views"):
            self.set_attr("max_episode_steps", int(value))
        self._max_episode_steps = int(value)

    def call(self, name: str, *args: Any, **kwargs: Any) -> list[Any]:
        """`env.name(*args, **kwargs)` in every worker's env; one result per worker."""
        return self._run(("call", name, args, kwargs), f"calling {name}")

    def get_attr(self, name: str) -> list[Any]:
        """`env.name` in every worker's env (which holds n_k of the envs); one value per worker."""
        return self._run(("get_attr", name), f"reading {name}")

    def set_attr(self, name: str, value: Any) -> None:
        self._run(("set_attr", name, value), f"setting {name}")

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(
            f"{type(self).__name__} has no attribute {name!r}: the task's own objects live in the worker "
            "processes; use env.get_attr / env.call, or num_workers=1"
        )

    # ---- full simulator state -------------------------------------------------------------------
    def evaluate(self) -> dict[str, torch.Tensor]:
        return _cat(self.call("evaluate"))

    def get_state_dict(self) -> dict[str, Any]:
        return _cat(self.call("get_state_dict"))

    def get_state(self) -> torch.Tensor:
        """(N, D), as BaseEnv.get_state."""
        return torch.cat(self.call("get_state"), 0)

    def set_state(self, state: torch.Tensor, env_idx: torch.Tensor | None = None) -> None:
        """state: (len(env_idx), D) rows for the given envs (all when env_idx is None)."""
        self._set_rows("set_state", torch.as_tensor(state, dtype=torch.float32), env_idx)

    def set_state_dict(self, state: dict[str, Any], env_idx: torch.Tensor | None = None) -> None:
        self._set_rows("set_state_dict", state, env_idx)

    def _set_rows(self, method: str, rows: Any, env_idx) -> None:
        idx, per_worker = self._split_rows(env_idx)
        lead = {int(t.shape[0]) if t.ndim else -1 for _, t in _leaves(rows)}
        if lead != {len(idx)}:
            raise ValueError(f"{method} got {sorted(lead)} rows for {len(idx)} envs")
        self._check_open()
        workers = []
        for k, (local, pos) in enumerate(per_worker):
            if local:
                part = _map(rows, lambda t: t[pos])
                self._send(k, pickle.dumps(("call", method, (part, torch.tensor(local)), {})), f"calling {method}")
                workers.append(k)
        self._gather(workers, f"calling {method}")


def _shaped(tree: Any, skeleton: Any) -> Any:
    """`tree` rebuilt in the key order of `skeleton` (worker.skeleton), empty dicts included."""
    if not isinstance(skeleton, dict):
        return tree
    return {k: _shaped(tree.get(k, {}), sub) for k, sub in skeleton.items()}


def _leaves(tree: Any, prefix: Path = ()) -> list[tuple[Path, torch.Tensor]]:
    if isinstance(tree, dict):
        return [item for k, v in tree.items() for item in _leaves(v, (*prefix, k))]
    return [(prefix, torch.as_tensor(tree))]


def _map(tree: Any, fn) -> Any:
    return {k: _map(v, fn) for k, v in tree.items()} if isinstance(tree, dict) else fn(torch.as_tensor(tree))


def _cat(trees: list[Any]) -> Any:
    """Per-worker trees of (n_k, ...) tensors -> one tree of (N, ...) tensors."""
    if isinstance(trees[0], dict):
        return {k: _cat([t[k] for t in trees]) for k in trees[0]}
    return torch.cat(trees, 0)

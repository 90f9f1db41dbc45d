"""A parallel env's worker process: one in-process batched env holding a contiguous slice of the envs.

Protocol over the worker's pipe (parent -> worker, then one reply):
* `STEP` (raw bytes): step with the action rows in shared memory, write the results there; reply `OK`.
* a pickled `(command, *args)` tuple for everything else; reply `OK` or a pickled
  `("ok", value)` / `("err", exception, traceback text)`.
The first message the worker sends is its description (or the error that stopped its env being
built); it then waits for `("attach", segment name, layout)`.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import torch

from envs.parallel.layout import Layout, Path, fields_of, flatten

STEP = b"s"
OK = b"\x00"
CLOSE = pickle.dumps(("close",))


@dataclass(frozen=True)
class WorkerSpec:
    env_cls: type
    kwargs: dict[str, Any]
    index: int
    first: int  # global index of the worker's first env
    num_envs: int
    spin_s: float = 0.0  # how long an idle worker polls its pipe before it blocks on it


def observe(env) -> tuple[Any, dict[str, torch.Tensor]]:
    """What `reset` returns, without resetting anything: every env's observation and info now."""
    info = env.evaluate()
    info["elapsed_steps"] = env.elapsed_steps.clone()
    return env.get_obs(info), info


def skeleton(tree: Any) -> Any:
    """A tree's keys in order, leaves None: empty dicts (which hold no arrays) included."""
    return {k: skeleton(v) for k, v in tree.items()} if isinstance(tree, dict) else None


def describe(env) -> dict[str, Any]:
    """What the parent needs to build its spaces and the shared layout."""
    obs, info = observe(env)
    return {
        "fields": fields_of(obs, ("obs",)) + fields_of(info, ("info",)),
        "obs_skeleton": skeleton(obs),
        "single_action_space": env.single_action_space,
        "observation_space": env.observation_space,
        "attrs": {
            k: getattr(env, k)
            for k in ("env_id", "obs_mode", "control_mode", "sim_backend", "robot_uids", "sim_freq", "control_freq", "max_episode_steps")
        },
    }


def _error(exc: BaseException) -> bytes:
    tb = traceback.format_exc()
    try:
        return pickle.dumps(("err", exc, tb))
    except Exception:  # an exception that does not pickle travels as its text
        return pickle.dumps(("err", RuntimeError(f"{type(exc).__name__}: {exc}"), tb))


class Worker:
    def __init__(self, conn: Connection | None, spec: WorkerSpec):
        self.conn = conn
        self.spec = spec
        self.env = spec.env_cls(num_envs=spec.num_envs, first_env_index=spec.first, **spec.kwargs)
        self.segment: SharedMemory | None = None
        self.views: dict[Path, torch.Tensor] = {}

    def attach(self, name: str, layout: Layout) -> None:
        self.segment = SharedMemory(name=name)
        rows = slice(self.spec.first, self.spec.first + self.spec.num_envs)
        self.views = layout.tensors(self.segment.buf, rows)

    def write(self, tree: Any, prefix: Path) -> None:
        for path, value in flatten(tree, prefix):
            view = self.views.get(path)
            if view is None or view.shape != value.shape:
                got = None if view is None else tuple(view.shape)
                raise RuntimeError(f"{'/'.join(path)} has shape {tuple(value.shape)}; the shared layout has {got}")
            view.copy_(value)

    def step(self) -> None:
        action = self.views[("action",)].clone()  # the env may keep it; the parent rewrites the buffer
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.write(obs, ("obs",))
        self.write(info, ("info",))
        self.views[("reward",)].copy_(reward)
        self.views[("terminated",)].copy_(terminated)
        self.views[("truncated",)].copy_(truncated)

    def reset(self, env_idx: list[int] | None, seeds: list[int] | None, options: dict) -> None:
        if env_idx is not None and len(env_idx) == 0:
            obs, info = observe(self.env)
        else:
            options = dict(options) if env_idx is None else {**options, "env_idx": env_idx}
            obs, info = self.env.reset(seed=seeds, options=options)
        self.write(obs, ("obs",))
        self.write(info, ("info",))
        self.views[("episode_seeds",)].copy_(self.env.episode_seeds)

    def handle(self, command: str, *args: Any) -> Any:
        if command == "reset":
            return self.reset(*args)
        if command == "call":
            name, call_args, call_kwargs = args
            return getattr(self.env, name)(*call_args, **call_kwargs)
        if command == "get_attr":
            return getattr(self.env, args[0])
        if command == "set_attr":
            return setattr(self.env, args[0], args[1])
        if command == "attach":
            return self.attach(*args)
        raise ValueError(f"unknown worker command {command!r}")

    def answer(self, data: bytes) -> bytes:
        """The reply to one message of the protocol (not "close")."""
        try:
            if data == STEP:
                self.step()
                return OK
            command, *args = pickle.loads(data)
            result = self.handle(command, *args)
            return OK if result is None else pickle.dumps(("ok", result))
        except Exception as e:
            return _error(e)

    def serve(self) -> None:
        conn = self.conn
        while True:
            spin_until = time.perf_counter() + self.spec.spin_s
            while not conn.poll(0) and time.perf_counter() < spin_until:
                pass
            data = conn.recv_bytes()
            if data == CLOSE:
                return
            conn.send_bytes(self.answer(data))

    def close(self) -> None:
        self.views = {}
        self.env.close()
        if self.segment is not None:
            try:
                self.segment.close()
            except BufferError:  # something still views it; the mapping goes with the process
                pass


def run_worker(conn: Connection, spec: WorkerSpec) -> None:
    """Process entry point. Ctrl-C is the parent's to handle; a parent that goes away ends the loop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)  # one core per worker: the parent spreads envs, not torch ops
    worker = None
    try:
        try:
            worker = Worker(conn, spec)
            conn.send_bytes(pickle.dumps(("ok", describe(worker.env))))
        except Exception as e:
            conn.send_bytes(_error(e))
            return
        worker.serve()
    except (EOFError, OSError):  # the parent closed its end of the pipe or exited
        pass
    finally:
        if worker is not None:
            worker.close()
        conn.close()


class LocalWorker:
    """The first slice of a parallel env, stepped by the parent process itself while the worker
    processes step the others: one process fewer to wake per step, and the parent's core does a
    share of the work instead of waiting. Stands in for a worker's pipe end (`send_bytes`, `poll`,
    `recv_bytes`) and its process (`is_alive`, `join`, `kill`, `pid`), so the parent's protocol
    code is the same for both; a message is answered when its reply is read, i.e. after the
    messages to the worker processes have gone out."""

    def __init__(self, spec: WorkerSpec):
        self.pid, self.exitcode = os.getpid(), None
        self._pending: list[bytes] = []
        self._reply: bytes | None = None
        self.worker: Worker | None = None
        try:
            self.worker = Worker(None, spec)
            self._reply = pickle.dumps(("ok", describe(self.worker.env)))
        except Exception as e:
            self.kill()
            self._reply = _error(e)

    def send_bytes(self, data: bytes) -> None:
        if data != CLOSE:  # closing waits for join(), after the worker processes were told to close
            self._pending.append(data)

    def poll(self, timeout: float = 0.0) -> bool:
        return self._reply is not None or bool(self._pending)

    def recv_bytes(self) -> bytes:
        if self._reply is not None:
            reply, self._reply = self._reply, None
            return reply
        data = self._pending.pop(0)
        if threading.current_thread() is not threading.main_thread():
            return self.worker.answer(data)
        # Ctrl-C waits until the command is done, as in the worker processes (which ignore it):
        # a step interrupted halfway would leave this slice out of step with the others
        interrupted = []
        previous = signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
        try:
            reply = self.worker.answer(data)
        finally:
            signal.signal(signal.SIGINT, previous)
        if interrupted:
            self._reply = reply
            raise KeyboardInterrupt
        return reply

    def is_alive(self) -> bool:
        return self.worker is not None and self.poll()  # a reply owed with nothing to answer: lost

    def join(self, timeout: float | None = None) -> None:
        self.kill()

    def kill(self) -> None:
        worker, self.worker = self.worker, None
        if worker is not None:
            try:
                worker.close()
            except Exception:  # closing at shutdown: the other workers and the segment still go
                pass

    def close(self) -> None:
        pass

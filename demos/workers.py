"""Generation worker processes: each runs its own batched env and its own planner process, so
one worker simulates while another plans. Started with spawn (no inherited torch or PhysX
state); a worker that dies is replaced and its batch counted as failed attempts."""

from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait


@dataclass(frozen=True)
class WorkerSpec:
    env_id: str
    env_kwargs: dict
    num_envs: int
    robot_uid: str
    record_obs: bool
    hold: int = 1  # Settle stages end after this many successful steps in a row
    speed: float = 1.0  # planned motions' speed, relative to the planner's limits


def _serve(spec: WorkerSpec, conn: Connection) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it closes us
    import gymnasium as gym
    import torch

    torch.set_num_threads(1)
    import envs  # noqa: F401  (registers)
    from demos.grasp import adapter_for
    from demos.pool import PlannerPool
    from demos.runner import Runner
    from demos.solutions import solution_for
    from demos.stages import with_hold

    with PlannerPool(1, warm=spec.robot_uid) as pool:  # its planner builds while the env does
        env = gym.make(spec.env_id, num_envs=spec.num_envs, **spec.env_kwargs).unwrapped
        solution = with_hold(solution_for(spec.env_id), spec.hold)
        from replay.verify import fresh_env

        runner = Runner(env, solution, pool, adapter_for(spec.robot_uid), spec.record_obs, spec.speed,
                        fresh_env=lambda eps: fresh_env(spec.env_id, spec.env_kwargs, eps), hold=spec.hold)
        conn.send(("ready", env.max_episode_steps))
        while True:
            try:
                msg = conn.recv()
            except EOFError:  # the parent is gone
                break
            if msg is None:
                break
            batch, seeds = msg
            conn.send((batch, runner.run(seeds)))
    env.close()


class GenerationWorkers:
    """`submit(batch_no, seeds)` to an idle worker; `results()` yields (batch_no, outcomes or None)."""

    def __init__(self, spec: WorkerSpec, count: int):
        self.spec = spec
        self.ctx = mp.get_context("spawn")
        self.slots: list[tuple[mp.Process, Connection]] = []
        self.busy: dict[int, tuple[int, list[int]]] = {}
        self.max_episode_steps = None
        for _ in range(count):
            self.slots.append(self._start())
        for proc, conn in self.slots:
            _, self.max_episode_steps = self._recv_ready(proc, conn)

    def _start(self) -> tuple[mp.Process, Connection]:
        parent, child = self.ctx.Pipe()
        # not a daemon: it has a planner process of its own; it exits when this end of the pipe closes
        proc = self.ctx.Process(target=_serve, args=(self.spec, child))
        proc.start()
        child.close()
        return proc, parent

    @staticmethod
    def _recv_ready(proc: mp.Process, conn: Connection):
        try:
            return conn.recv()
        except EOFError:
            raise RuntimeError(f"a generation worker failed to start (exit code {proc.exitcode})") from None

    @property
    def idle(self) -> list[int]:
        return [s for s in range(len(self.slots)) if s not in self.busy]

    def submit(self, batch: int, seeds: list[int]) -> None:
        slot = self.idle[0]
        self.slots[slot][1].send((batch, seeds))
        self.busy[slot] = (batch, seeds)

    def next_result(self):
        """Blocks until a busy worker answers or dies: (batch, outcomes), outcomes None if it died."""
        conns = {self.slots[s][1]: s for s in self.busy}
        sentinels = {self.slots[s][0].sentinel: s for s in self.busy}
        while True:
            for ready in wait(list(conns) + list(sentinels)):
                slot = conns.get(ready, sentinels.get(ready))
                proc, conn = self.slots[slot]
                try:
                    if conn.poll():
                        batch, outcomes = conn.recv()
                        del self.busy[slot]
                        return batch, outcomes
                except (EOFError, OSError):
                    pass
                if not proc.is_alive():
                    batch, _ = self.busy.pop(slot)
                    conn.close()
                    self.slots[slot] = self._start()
                    self._recv_ready(*self.slots[slot])
                    return batch, None

    def close(self) -> None:
        """Idle workers are told to stop; busy ones are killed (their batch is not wanted, and a
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
        self.slots, self.busy = [], {}

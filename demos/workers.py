"""Generation worker processes: each runs its own batched env and its own planner process, so
one worker simulates while another plans. Started with spawn (no inherited torch or PhysX
state); a worker that dies is replaced and its batch counted as failed attempts."""

from __future__ import annotations

import multiprocessing as mp
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait


@dataclass(frozen=True)
class WorkerSpec:
    env_id: str
    env_kwargs: dict
    num_envs: int
    robot_uid: str
    record_obs: bool


def _serve(spec: WorkerSpec, conn: Connection) -> None:
    import gymnasium as gym
    import torch

    torch.set_num_threads(1)
    import envs  # noqa: F401  (registers)
    from demos.grasp import adapter_for
    from demos.pool import PlannerPool
    from demos.runner import Runner
    from demos.solutions import solution_for

    with PlannerPool(1, warm=spec.robot_uid) as pool:  # its planner builds while the env does
        env = gym.make(spec.env_id, num_envs=spec.num_envs, **spec.env_kwargs).unwrapped
        runner = Runner(env, solution_for(spec.env_id), pool, adapter_for(spec.robot_uid), spec.record_obs)
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
        for proc, conn in self.slots:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for proc, conn in self.slots:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join()
            conn.close()
        self.slots = []

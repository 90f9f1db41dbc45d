"""Planner processes. mplib can crash its process (segfault); a crashed worker is replaced and
only the request it held fails, so a run never hangs on it.

Each worker owns one pipe and handles one request at a time; the parent hands out requests to
idle workers and waits on pipes and process sentinels together.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from multiprocessing.connection import Connection, wait

import numpy as np

from demos.planner import ArmPlanner, PlanRequest


def _serve(conn: Connection, owner: int, warm: str | None) -> None:
    """Answer plan requests until told to stop, the pipe closes, or the owning process is gone
    (a forked sibling may hold a copy of the owner's pipe end, so EOF alone is not enough).
    `warm`: a robot whose planner is built at once (it takes a second), not at the first request."""
    planners: dict[str, ArmPlanner] = {}
    if warm is not None:
        try:
            planners[warm] = ArmPlanner(warm)
        except Exception:  # reported by the first request instead
            pass
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
        key, req = msg
        try:
            if req.robot_uid not in planners:
                planners[req.robot_uid] = ArmPlanner(req.robot_uid)
            traj, why = planners[req.robot_uid].plan(req)
        except Exception as e:  # a planner exception fails this request, not the worker
            traj, why = None, f"planner error: {e}"
        conn.send((key, traj, why))


class PlannerPool:
    """`map(requests)` -> list of (trajectory or None, reason), in request order."""

    def __init__(self, workers: int, warm: str | None = None):
        self.warm = warm
        self.ctx = mp.get_context("fork" if os.name == "posix" else "spawn")
        self.workers: list[tuple[mp.Process, Connection]] = [self._start() for _ in range(max(1, workers))]
        self.crashes = 0

    def _start(self) -> tuple[mp.Process, Connection]:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_serve, args=(child, os.getpid(), self.warm), daemon=True)
        proc.start()
        child.close()
        return proc, parent

    def map(self, requests: list[PlanRequest]) -> list[tuple[np.ndarray | None, str]]:
        results: list[tuple[np.ndarray | None, str] | None] = [None] * len(requests)
        pending = list(range(len(requests)))[::-1]
        busy: dict[int, int] = {}  # worker slot -> request index
        while pending or busy:
            for slot in range(len(self.workers)):
                if slot not in busy and pending:
                    k = pending.pop()
                    self.workers[slot][1].send((k, requests[k]))
                    busy[slot] = k
            conns = {self.workers[s][1]: s for s in busy}
            sentinels = {self.workers[s][0].sentinel: s for s in busy}
            for ready in wait(list(conns) + list(sentinels)):
                slot = conns.get(ready, sentinels.get(ready))
                if slot not in busy:
                    continue
                proc, conn = self.workers[slot]
                try:
                    if ready is conn or conn.poll():
                        k, traj, why = conn.recv()
                        results[k] = (traj, why)
                        del busy[slot]
                        continue
                except (EOFError, OSError):
                    pass
                if not proc.is_alive():  # crashed while planning: replace it, fail its request
                    results[busy.pop(slot)] = (None, f"planner process died (exit code {proc.exitcode})")
                    self.crashes += 1
                    conn.close()
                    self.workers[slot] = self._start()
        return results  # type: ignore[return-value]

    def close(self) -> None:
        for proc, conn in self.workers:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for proc, conn in self.workers:
            proc.join(timeout=2)
            if proc.is_alive():
                proc.kill()
            conn.close()
        self.workers = []

    def __enter__(self) -> "PlannerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

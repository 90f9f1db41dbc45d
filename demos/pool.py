"""Planner processes. mplib can crash its process (segfault); a crashed planner is replaced and
only the request that crashed it fails, so a run never hangs on it. They are a process pool of
envs/executor.py, forked (a planner needs no fresh interpreter) and not retried (a request that
crashed a planner would crash the next one too).

A planner takes the requests of a `map` in one message and answers them in one (a stage's
requests for a group of envs: a dozen round trips through the pipes cost more than planning a
short move); a group whose planner crashed is planned again request by request."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from demos.planner import ArmPlanner, PlanRequest
from envs.executor import Lost, ProcessPool


class _Planners:
    """One planner per robot, built at the first request for it (or at once for `warm`)."""

    def __init__(self, warm: str | None):
        self.planners: dict[str, ArmPlanner] = {}
        if warm is not None:
            try:
                self.planners[warm] = ArmPlanner(warm)
            except Exception:  # reported by the first request instead
                pass

    def __call__(self, reqs: tuple[PlanRequest, ...]) -> list[tuple[np.ndarray | None, str]]:
        return [self.plan(r) for r in reqs]

    def plan(self, req: PlanRequest) -> tuple[np.ndarray | None, str]:
        try:
            if req.robot_uid not in self.planners:
                self.planners[req.robot_uid] = ArmPlanner(req.robot_uid)
            return self.planners[req.robot_uid].plan(req)
        except Exception as e:  # a planner exception fails this request, not the worker
            return None, f"planner error: {e}"


@dataclass(frozen=True)
class PlannerJob:
    warm: str | None = None
    render: bool = False

    def setup(self) -> _Planners:
        return _Planners(self.warm)


class PlannerPool:
    """`map(requests)` -> list of (trajectory or None, reason), in request order.
    `warm`: a robot whose planner is built at once (it takes a second), while the caller goes on."""

    def __init__(self, workers: int, warm: str | None = None):
        self.pool = ProcessPool(PlannerJob(warm), max(1, workers), retries=0, start="fork", daemon=True, wait_ready=False)
        self.crashes = 0

    def map(self, requests: list[PlanRequest]) -> list[tuple[np.ndarray | None, str]]:
        results: list[tuple[np.ndarray | None, str] | None] = [None] * len(requests)
        groups = [[int(k) for k in g] for g in np.array_split(np.arange(len(requests)), self.pool.size) if len(g)]
        while groups:  # one group per planner; then those of a crashed one, a request each
            for key, group in enumerate(groups):
                self.pool.submit(key, tuple(requests[k] for k in group))
            again = []
            for _ in groups:
                key, out = self.pool.next_result()
                group = groups[key]
                if not isinstance(out, Lost):
                    for k, result in zip(group, out):
                        results[k] = result
                elif len(group) > 1:  # crashed on one of them: which one, the planners find out alone
                    again += [[k] for k in group]
                else:  # crashed while planning it: it fails
                    self.crashes += 1
                    results[group[0]] = (None, f"planner process died ({out.reason.removeprefix('a worker died ')})")
            groups = again
        return results  # type: ignore[return-value]

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> "PlannerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

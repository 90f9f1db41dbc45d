"""Runs a solution in a batched env: every env goes through the solution's stages at its own
pace, planning a stage (in the planner processes) from the state it reached when its previous
stage ended; the envs that reach a stage at the same step are planned together, and all envs
step together. An episode records only its own steps: no env waits for another, and no env is
ever restored to a saved state (a restore leaves PhysX state that moves the last bits of later
contacts, enough to make a closed-loop correction measured in the run miss in a replay).

The run is the recording. A batch runs in a freshly built env of isolated physics, from initial
states restored as a replay restores them, so each episode's recorded states are those a replay
of its actions from its initial state in another fresh env reaches, bit for bit (as `demos
verify` and `replay convert` replay them; tests/test_demos.py checks it for every solution).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from demos.grasp import GraspAdapter
from demos.planner import Box, PlanRequest
from demos.pool import PlannerPool
from demos.stages import Grip, MoveTo, Settle, Solution
from envs.core.env import BaseEnv
from envs.core.pose import pose_inv, pose_mul
from envs.core.tree import stack, take, to_numpy
from replay.trajectory import Episode


def _scene_kwargs(env, i: int) -> dict:
    """Env kwargs that rebuild env i's scene in a one-env instance, when it is not the same in
    every env: PegInsertionSide draws each env's peg and hole from its geometry seed, so an
    episode is replayable only in an env built with that seed."""
    seeds = getattr(env, "geometry_seeds", None)
    return {"geometry_seed": [int(seeds[i])]} if seeds is not None else {}


@dataclass
class _Recorder:
    seed: int
    scene_kwargs: dict = field(default_factory=dict)
    length: int = 0  # steps taken: an env records steps 0..length-1 of its batch, then stops
    failure: str | None = None
    solved: bool = False


class _Batch:
    """What a batch's steps recorded, for all envs at once (NumPy copies, step first); an
    episode is its env's column up to its length: the envs that run take every step from the
    first, and an env never runs again once its episode is over."""

    def __init__(self, state: dict, obs):
        self.states = [to_numpy(state)]  # (N, ...) trees
        self.obs = [to_numpy(obs)] if obs is not None else None
        self.steps: dict[str, list[np.ndarray]] = {k: [] for k in ("actions", "rewards", "success", "fail", "terminated", "truncated")}
        self.stacked: tuple | None = None  # (states (T + 1, N, ...), obs or None, steps (T, N, ...)), once the batch is over

    def add(self, state: dict, obs, action: torch.Tensor, reward, terminated, truncated, info: dict) -> None:
        self.states.append(to_numpy(state))
        if self.obs is not None:
            self.obs.append(to_numpy(obs))
        for key, value in (("actions", action), ("rewards", reward), ("success", info["success"]), ("fail", info["fail"]),
                           ("terminated", terminated), ("truncated", truncated)):
            self.steps[key].append(to_numpy(value))

    def episode(self, i: int, rec: _Recorder) -> Episode:
        if self.stacked is None:
            self.stacked = (stack(self.states), stack(self.obs) if self.obs is not None else None,
                            {k: np.stack(v) for k, v in self.steps.items()})
        states, obs, all_steps = self.stacked
        t = rec.length
        steps = {k: v[:t, i] for k, v in all_steps.items()}
        return Episode(
            actions=steps["actions"].astype(np.float32),
            terminated=steps["terminated"].astype(bool),
            truncated=steps["truncated"].astype(bool),
            success=steps["success"].astype(bool),
            fail=steps["fail"].astype(bool),
            rewards=steps["rewards"].astype(np.float32),
            env_states=take(states, (slice(0, t + 1), i)),
            obs=take(obs, (slice(0, t + 1), i)) if obs is not None else None,
            seed=rec.seed,
            reset_kwargs={"seed": rec.seed},
            scene_kwargs=rec.scene_kwargs,
        )


@dataclass
class Outcome:
    seed: int
    episode: Episode | None  # recorded steps (also for failures, when any)
    success: bool
    reason: str  # "success" or why not


class Runner:
    def __init__(self, env: BaseEnv, solution: Solution, pool: PlannerPool, adapter: GraspAdapter, record_obs: bool,
                 speed: float = 1.0):
        """env: freshly built, with isolated physics (see the module's docstring)."""
        self.env = env
        self.speed = speed
        self.solution = solution
        self.pool = pool
        self.adapter = adapter
        self.record_obs = record_obs

    # ---- actions ------------------------------------------------------------------------------
    def _hold(self) -> torch.Tensor:
        """(N, A) pd_joint_pos actions that keep every robot where its targets are."""
        agent, ctrl = self.env.agent, self.env.controller
        if ctrl.gripper is None:  # a robot without a gripper
            return agent.targets[:, agent.arm].clone()
        grip = ctrl.gripper.from_target(agent.targets[:, agent.gripper[:1]])
        return torch.cat((agent.targets[:, agent.arm], grip), 1)

    def _plans(self, stage, idx: torch.Tensor, recs: list[_Recorder]) -> dict[int, np.ndarray]:
        """Per env index, the (T, A) float32 actions of this stage; envs whose plan fails are marked."""
        env = self.env
        hold = self._hold().numpy()
        if isinstance(stage, Grip):
            a = hold[idx.numpy()]
            a[:, -1] = stage.gripper
            return {int(i): np.repeat(a[k : k + 1], stage.steps, 0) for k, i in enumerate(idx)}
        if isinstance(stage, Settle):
            return {int(i): np.repeat(hold[i : i + 1], stage.steps, 0) for i in idx}
        target = stage.target(env, idx, self.adapter)  # (k, 7), or (k, C, 7) candidates in order; env frame
        if target.ndim == 2:
            target = target[:, None]
        agent = env.agent
        root_inv = pose_inv(agent.root_pose[idx])
        goal = pose_mul(root_inv[:, None].expand(target.shape), target)  # (k, C, 7)
        obstacles = self.solution.obstacles(env, idx)
        # every env's boxes into its root frame at once: (M, 7) poses, M boxes of all envs
        owner = [k for k, boxes in enumerate(obstacles) for _ in boxes]
        flat = [b for boxes in obstacles for b in boxes]
        posed = iter(pose_mul(root_inv[owner], torch.tensor([b.pose for b in flat])).tolist() if flat else [])
        requests = []
        for k, i in enumerate(idx.tolist()):
            boxes = tuple(Box(b.name, tuple(next(posed)), b.half_size) for b in obstacles[k])
            requests.append(
                PlanRequest(
                    robot_uid=agent.spec.uid,
                    qpos=tuple(agent.targets[i].tolist()),
                    goal=tuple(goal[k, 0].tolist()),
                    fallbacks=tuple(tuple(g) for g in goal[k, 1:].tolist()),
                    obstacles=boxes,
                    screw_only=stage.screw_only,
                    control_dt=1.0 / env.control_freq,
                    speed=self.speed * stage.speed,
                    turn_limit=self.solution.turn_limit,
                )
            )
        plans = {}
        for k, (i, (traj, why)) in enumerate(zip(idx.tolist(), self.pool.map(requests))):
            if traj is None:
                recs[i].failure = f"{stage.name}: {why}"
                continue
            grip = np.full((len(traj), 1 if env.controller.gripper is not None else 0), stage.gripper, dtype=np.float32)
            plans[i] = np.concatenate((traj, grip), 1)
        return plans

    # ---- one batch --------------------------------------------------------------------------------
    def run(self, seeds: list[int]) -> list[Outcome]:
        """Every env goes through the stages at its own pace: when its current stage's actions
        run out, its next stage is planned from the state it is in at that step (the envs that
        arrive together are planned together) while the others go on. No env waits for another
        and none is ever restored, so a batch runs each episode as its replay from the initial
        state runs it, and corrections measured during the run hold in the replay."""
        env = self.env
        n = env.num_envs
        assert len(seeds) == n
        env.reset(seed=seeds)
        state = env.get_state_dict()
        # restored as a replay restores it (re-inserting every actor), so that the run starts as
        # the replay will
        env.set_state_dict(state)
        obs = env.get_obs(env.evaluate())
        recs = [_Recorder(int(s), _scene_kwargs(env, i)) for i, s in enumerate(seeds)]
        batch = _Batch(state, obs if self.record_obs else None)
        stages = self.solution.stages
        stage_of = [-1] * n  # the stage each env is in
        plan: dict[int, np.ndarray] = {}  # env -> the (T, A) actions of its stage
        step = [0] * n  # env -> the next row of its plan
        streak = [0] * n  # env -> steps in a row with success, in a Settle stage
        running = set(range(n))
        while True:
            need = sorted(i for i in running if i not in plan or step[i] >= len(plan[i]))
            while need:  # the next stage of every env that finished one; a stage may end at once
                groups: dict[int, list[int]] = {}
                for i in need:
                    stage_of[i] += 1
                    plan.pop(i, None)
                    if stage_of[i] >= len(stages):
                        running.discard(i)
                    else:
                        groups.setdefault(stage_of[i], []).append(i)
                need = []
                for s, members in sorted(groups.items()):
                    plans = self._plans(stages[s], torch.tensor(members, dtype=torch.long), recs)
                    for i in members:
                        if recs[i].failure is not None:
                            running.discard(i)
                        elif len(plans[i]) == 0:
                            need.append(i)
                        else:
                            plan[i], step[i], streak[i] = plans[i], 0, 0
            if not running:
                break
            env.world.pause(sorted(set(range(n)) - running))  # episodes over: no more physics for them
            success = self._step({i: plan[i][step[i]] for i in sorted(running)}, recs, batch)
            for i in sorted(running):
                step[i] += 1
                stage = stages[stage_of[i]]
                if isinstance(stage, Settle):
                    streak[i] = streak[i] + 1 if bool(success[i]) else 0
                    if streak[i] >= stage.hold:
                        recs[i].solved = True
                        running.discard(i)
        outcomes = []
        for i, r in enumerate(recs):
            if r.failure is None and not r.solved:
                r.failure = "never reached success"
            if r.solved and r.length > env.max_episode_steps:
                r.solved, r.failure = False, f"solution took {r.length} steps > max_episode_steps {env.max_episode_steps}"
            outcomes.append(Outcome(r.seed, batch.episode(i, r) if r.length else None, r.solved, "success" if r.solved else r.failure))
        return outcomes

    def _step(self, actions: dict[int, np.ndarray], recs: list[_Recorder], batch: _Batch) -> torch.Tensor:
        """One env step: env i takes actions[i] and records it; the others (their episodes
        over) hold their targets, unrecorded. The (N,) success flags."""
        env = self.env
        rows = [actions.get(i) for i in range(env.num_envs)]
        if len(actions) < env.num_envs:
            hold = self._hold().numpy()
            rows = [hold[i] if r is None else r for i, r in enumerate(rows)]
        action = torch.from_numpy(np.stack(rows))
        obs, reward, terminated, truncated, info = env.step(action)
        batch.add(env.get_state_dict(), obs if self.record_obs else None, action, reward, terminated, truncated, info)
        for i in actions:
            recs[i].length += 1
        return info["success"]

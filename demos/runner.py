"""Runs a solution in a batched env: every env goes through the solution's stages at its own
pace, planning a stage (in the planner processes) from the state it reached when its previous
stage ended; the envs that reach a stage at the same step are planned together, and all envs
step together. An episode records only its own steps: no env waits for another, and no env is
ever restored to a saved state (a restore leaves PhysX state that moves the last bits of later
contacts, enough to make a closed-loop correction measured in the run miss in a replay).

The episodes of a batch are recorded, at its end, by replaying their actions from their initial
states in a freshly built env (`replay.verify.record_replay`), exactly as `demos verify` and
`replay convert` replay them: an episode counts as solved only when that replay holds success
for the last `hold` steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from demos.grasp import GraspAdapter
from demos.planner import Box, PlanRequest
from demos.pool import PlannerPool
from demos.stages import Grip, MoveTo, Settle, Solution
from envs.core.env import BaseEnv
from envs.core.pose import pose_inv, pose_mul
from envs.core.tree import row, stack
from replay.trajectory import Episode
from replay.verify import record_replay


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
    states: list = field(default_factory=list)
    obs: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    rewards: list = field(default_factory=list)
    success: list = field(default_factory=list)
    fail: list = field(default_factory=list)
    terminated: list = field(default_factory=list)
    truncated: list = field(default_factory=list)
    failure: str | None = None
    solved: bool = False
    replayed: Episode | None = None  # the episode as its replay in a fresh env ran it

    def episode(self, record_obs: bool) -> Episode:
        if self.replayed is not None:
            return self.replayed
        return Episode(
            actions=np.stack(self.actions).astype(np.float32),
            terminated=np.array(self.terminated, bool),
            truncated=np.array(self.truncated, bool),
            success=np.array(self.success, bool),
            fail=np.array(self.fail, bool),
            rewards=np.array(self.rewards, np.float32),
            env_states=stack(self.states),
            obs=stack(self.obs) if record_obs else None,
            seed=self.seed,
            reset_kwargs={"seed": self.seed},
            scene_kwargs=self.scene_kwargs,
        )


@dataclass
class Outcome:
    seed: int
    episode: Episode | None  # recorded steps (also for failures, when any)
    success: bool
    reason: str  # "success" or why not


class Runner:
    def __init__(self, env: BaseEnv, solution: Solution, pool: PlannerPool, adapter: GraspAdapter, record_obs: bool,
                 speed: float = 1.0, fresh_env: Callable[[list[Episode]], BaseEnv] | None = None, hold: int = 1):
        """fresh_env(episodes): a newly built env with one env per episode, in which the batch's
        episodes are recorded; None records them as the batch ran (tests of the runner alone)."""
        self.env = env
        self.fresh_env = fresh_env
        self.hold = hold
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

    def _plans(self, stage, idx: torch.Tensor, recs: list[_Recorder]) -> dict[int, torch.Tensor]:
        """Per env index, the (T, A) actions of this stage; envs whose plan fails are marked."""
        env = self.env
        hold = self._hold()
        if isinstance(stage, Grip):
            a = hold[idx].clone()
            a[:, -1] = stage.gripper
            return {int(i): a[k : k + 1].repeat(stage.steps, 1) for k, i in enumerate(idx)}
        if isinstance(stage, Settle):
            return {int(i): hold[i : i + 1].repeat(stage.steps, 1) for i in idx}
        target = stage.target(env, idx, self.adapter)  # (k, 7), or (k, C, 7) candidates in order; env frame
        if target.ndim == 2:
            target = target[:, None]
        agent = env.agent
        root_inv = pose_inv(agent.root_pose[idx])
        goal = pose_mul(root_inv[:, None].expand(target.shape), target)  # (k, C, 7)
        obstacles = self.solution.obstacles(env, idx)
        requests = []
        for k, i in enumerate(idx.tolist()):
            boxes = tuple(
                Box(b.name, tuple(pose_mul(root_inv[k : k + 1], torch.tensor([b.pose]))[0].tolist()), b.half_size)
                for b in obstacles[k]
            )
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
                )
            )
        plans = {}
        for k, (i, (traj, why)) in enumerate(zip(idx.tolist(), self.pool.map(requests))):
            if traj is None:
                recs[i].failure = f"{stage.name}: {why}"
                continue
            arm = torch.from_numpy(traj)
            grip = torch.full((len(arm), 1 if env.controller.gripper is not None else 0), stage.gripper)
            plans[i] = torch.cat((arm, grip), 1)
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
        for i in range(n):
            recs[i].states.append(row(state, i))
            if self.record_obs:
                recs[i].obs.append(obs[i].numpy().copy())
        stages = self.solution.stages
        stage_of = [-1] * n  # the stage each env is in
        plan: dict[int, torch.Tensor] = {}  # env -> the (T, A) actions of its stage
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
            success = self._step({i: plan[i][step[i]] for i in sorted(running)}, recs)
            for i in sorted(running):
                step[i] += 1
                stage = stages[stage_of[i]]
                if isinstance(stage, Settle):
                    streak[i] = streak[i] + 1 if bool(success[i]) else 0
                    if streak[i] >= stage.hold:
                        recs[i].solved = True
                        running.discard(i)
        self._record_by_replay(recs)
        outcomes = []
        for r in recs:
            if r.failure is None and not r.solved:
                r.failure = "never reached success"
            if r.solved and len(r.actions) > env.max_episode_steps:
                r.solved, r.failure = False, f"solution took {len(r.actions)} steps > max_episode_steps {env.max_episode_steps}"
            outcomes.append(
                Outcome(r.seed, r.episode(self.record_obs) if r.actions else None, r.solved, "success" if r.solved else r.failure)
            )
        return outcomes

    def _record_by_replay(self, recs: list[_Recorder]) -> None:
        """Replaces the solved episodes' recordings with their replay in a fresh env; one whose
        replay does not hold success for its last `hold` steps is not solved."""
        if self.fresh_env is None:
            return
        solved = [r for r in recs if r.solved]
        if not solved:
            return
        episodes = [r.episode(self.record_obs) for r in solved]
        env = self.fresh_env(episodes)
        try:
            replayed = record_replay(env, episodes, self.record_obs)
        finally:
            env.close()
        for r, e in zip(solved, replayed):
            r.replayed = e
            if not e.success[-self.hold :].all():
                r.solved, r.failure = False, f"its replay from the initial state does not hold success for the last {self.hold} steps"

    def _step(self, actions: dict[int, torch.Tensor], recs: list[_Recorder]) -> torch.Tensor:
        """One env step: env i takes actions[i] and records it; the others (their episodes
        over) hold their targets, unrecorded. The (N,) success flags."""
        env = self.env
        action = self._hold()
        for i, a in actions.items():
            action[i] = a
        obs, reward, terminated, truncated, info = env.step(action)
        state = env.get_state_dict()
        for i in actions:
            r = recs[i]
            r.actions.append(action[i].numpy().copy())
            r.rewards.append(float(reward[i]))
            r.success.append(bool(info["success"][i]))
            r.fail.append(bool(info["fail"][i]))
            r.terminated.append(bool(terminated[i]))
            r.truncated.append(bool(truncated[i]))
            r.states.append(row(state, i))
            if self.record_obs:
                r.obs.append(obs[i].numpy().copy())
        return info["success"]

"""Generation workers: each runs its own batched env and its own planner processes, so one
worker simulates while another plans. A worker is built once and then plans batch after batch
of seeds, in a local process or a Ray actor (envs/executor.py: a worker that dies is replaced
and its batch retried)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GenerationJob:
    env_id: str
    env_kwargs: dict
    num_envs: int
    robot_uid: str
    record_obs: bool
    hold: int = 1  # Settle stages end after this many successful steps in a row
    speed: float = 1.0  # planned motions' speed, relative to the planner's limits
    render: bool = False  # generation records state only

    def setup(self) -> "_Generator":
        return _Generator(self)


class _Generator:
    """A task is a list of seeds, one per env; the answer is their outcomes (demos.runner.Outcome)."""

    def __init__(self, job: GenerationJob):
        import gymnasium as gym

        import envs  # noqa: F401  (registers)
        from demos.grasp import adapter_for
        from demos.pool import PlannerPool
        from demos.runner import Runner
        from demos.solutions import solution_for
        from demos.stages import with_hold

        # the planner pool starts first, so its planner builds while the env does; it lives as
        # long as this worker's process (a daemon pool: it ends with the process)
        self.pool = PlannerPool(1, warm=job.robot_uid)
        from envs.core.registry import TASKS

        # a task whose scene depends on the seed (PegInsertionSide's geometry) is built for each
        # batch's seeds, so an episode of seed s has ManiSkill's scene of reset(seed=s)
        scene = TASKS[job.env_id].seeded_scene_kwargs
        self.make_env = lambda seeds=(): gym.make(
            job.env_id, num_envs=len(seeds) or job.num_envs, **job.env_kwargs, **(scene(seeds) if seeds else {})
        ).unwrapped
        solution = with_hold(solution_for(job.env_id), job.hold)
        self.runner = Runner(self.make_env(), solution, self.pool, adapter_for(job.robot_uid), job.record_obs, job.speed)
        self.used = False

    def __call__(self, seeds: list[int]) -> list:
        # every batch runs in a newly built env (about 20 ms for 16 PushCube envs): a reset of a used env leaves
        # PhysX state that moves the last bits of contacts, so only a fresh env runs each episode
        # exactly as its replay will, and the closed-loop corrections measured in the run hold.
        # A batch may be smaller than num_envs (the last few attempts of a run): its env has one
        # env per seed
        env = self.runner.env
        if self.used or len(seeds) != env.num_envs or type(env).seeded_scene_kwargs(seeds):
            self.runner.env.close()
            self.runner.env = self.make_env(seeds)
        self.used = True
        return self.runner.run(seeds)

"""Batched envs over worker processes: `gym.make(env_id, num_envs=N, num_workers=W)`."""

from envs.parallel.env import ParallelEnv, WorkerDiedError, split

__all__ = ["ParallelEnv", "WorkerDiedError", "split"]

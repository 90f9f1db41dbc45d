"""Where a demo generation worker's CPU goes: its runner on batches of `--num-envs` seeds, each in
a freshly built env as `demos generate` runs them, with the planner called in this same process
(a worker's planner runs in a process of its own, which a profile of the worker would not see).
Prints the success count and mean demo length, then cProfile's functions by cumulative CPU time.

    python -m benchmarks.demos_profile StackCube --n 32 [--num-envs 16] [--out FILE.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None, help="keep the profile here (pstats format)")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()

    import gymnasium as gym
    import torch

    import envs  # noqa: F401  (registers)
    from demos.generate import GenerateConfig
    from demos.grasp import adapter_for
    from demos.pool import _Planners
    from demos.runner import Runner

    torch.set_num_threads(1)  # as in a worker
    with tempfile.TemporaryDirectory() as tmp:
        cfg = GenerateConfig(task=args.task, n=args.n, num_envs=args.num_envs, out=Path(tmp) / "unused.h5")
    planners = _Planners(cfg.robot_uids)

    class InProcess:  # the PlannerPool interface, without its process
        def map(self, requests):
            return planners(tuple(requests))

    def run() -> list:
        outcomes = []
        for first in range(0, args.n, args.num_envs):
            env = gym.make(cfg.env_id, num_envs=args.num_envs, **cfg.env_kwargs).unwrapped
            runner = Runner(env, cfg.solution, InProcess(), adapter_for(cfg.robot_uids), record_obs=False)
            outcomes += runner.run(list(range(first, first + args.num_envs)))
            env.close()
        return outcomes

    profile = cProfile.Profile(time.process_time)
    outcomes = profile.runcall(run)
    solved = [o for o in outcomes if o.success]
    mean = sum(o.episode.length for o in solved) / max(1, len(solved))
    print(f"{cfg.env_id}: {len(solved)}/{len(outcomes)} solved, mean length {mean:.1f} steps")
    if args.out is not None:
        profile.dump_stats(args.out)
    pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
